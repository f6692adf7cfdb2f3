// --storage redis without a Redis server: its flags and variables, the errors of bad values
// (before any I/O), and an open that fails clearly or stops when asked. The real-server test is in
// cp-http.integration.test.ts.
import type { Server, Socket } from "node:net";
import { createServer } from "node:net";
import { unusedPort } from "@vvm/vitest-config/servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, helpText, parseHostConfig } from "../src/config.ts";
import { StorageOpenError } from "../src/storage/entry.ts";
import { openStorage } from "../src/storage/index.ts";
import { hostConfig as config } from "./support/config.ts";

describe("--storage redis: configuration", () => {
	it("has the documented defaults, and flags win over variables", () => {
		expect(config(["--storage", "redis"]).storage).toEqual({
			kind: "redis",
			settings: { url: undefined, keyPrefix: "vvm:" },
		});
		const env = {
			VVM_REDIS_URL: "rediss://u:pw@cache.example:6380/2",
			VVM_REDIS_KEY_PREFIX: "app1:",
		};
		expect(config(["--storage", "redis"], env).storage.settings).toEqual({
			url: "rediss://u:pw@cache.example:6380/2",
			keyPrefix: "app1:",
		});
		expect(
			config(
				["--storage=redis", "--redis-url", "redis://127.0.0.1:6390", "--redis-key-prefix", "b/"],
				env,
			).storage.settings,
		).toEqual({ url: "redis://127.0.0.1:6390", keyPrefix: "b/" });
	});

	it.each([
		[["--redis-url", "127.0.0.1:6379"], "--redis-url must be a redis:// or rediss:// URL"],
		[["--redis-url", "http://127.0.0.1:6379"], "--redis-url must be a redis:// or rediss:// URL"],
		[["--redis-url", "redis://127.0.0.1:6379/db1"], "the path is a database number"],
		[["--redis-url", "redis://127.0.0.1:6379/0?tls=1"], "no query or fragment"],
		[["--redis-key-prefix", "a b"], "--redis-key-prefix must match ^[A-Za-z0-9_.:/-]{1,64}$"],
		[["--redis-key-prefix", "{tag}"], "--redis-key-prefix must match"],
		[["--redis-key-prefix", "x".repeat(65)], "--redis-key-prefix must match"],
		[["--redis-key-prefix="], "--redis-key-prefix must match"],
	])("%j is refused before any I/O: %s", (argv, error) => {
		// Checked whichever storage runs: a bad flag is an error even on the default storage.
		for (const storage of ["redis", "level"]) {
			expect(() => parseHostConfig(["--storage", storage, ...argv], {})).toThrow(ConfigError);
			expect(() => parseHostConfig(["--storage", storage, ...argv], {})).toThrow(error);
		}
	});

	it("names the variable, and never prints the URL's password", () => {
		const env = { VVM_REDIS_URL: "http://admin:hunter2@cache.example:6379" };
		expect(() => parseHostConfig(["--storage", "redis"], env)).toThrow(
			'VVM_REDIS_URL must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (scheme), got "http://***@cache.example:6379"',
		);
		expect(() => parseHostConfig(["--storage", "redis"], { VVM_REDIS_KEY_PREFIX: "a\tb" })).toThrow(
			"VVM_REDIS_KEY_PREFIX must match",
		);
	});

	it("--help lists the storage and its flags with their variables", () => {
		const text = helpText();
		for (const word of [
			"redis (Redis 7, one server)",
			"--redis-url",
			"VVM_REDIS_URL",
			"--redis-key-prefix",
			"VVM_REDIS_KEY_PREFIX",
		])
			expect(text).toContain(word);
	});
});

describe("--storage redis: opening", () => {
	// A port that accepts and closes every connection: a server that is there but is no Redis.
	let server: Server;
	let closingPort = 0;
	beforeAll(async () => {
		server = createServer((socket) => socket.destroy());
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		closingPort = (server.address() as { port: number }).port;
	});
	afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

	it("reports `cannot use <where>` with the cause, without the password", async () => {
		const port = await unusedPort();
		const storage = config([
			"--storage",
			"redis",
			"--redis-url",
			`redis://:hunter2@127.0.0.1:${port}/3`,
		]).storage;
		const opening = openStorage(storage);
		await expect(opening).rejects.toBeInstanceOf(StorageOpenError);
		const error = (await opening.catch((e: unknown) => e)) as StorageOpenError;
		expect(error.message).toBe(
			`redis storage: cannot use 127.0.0.1:${port} db 3 key prefix "vvm:": connect ECONNREFUSED 127.0.0.1:${port}`,
		);
		expect(error.message).not.toContain("hunter2");
		expect(error.code).toBe("HOST_STORAGE_OPEN");
	});

	it("fails on a server that closes the connection, naming where", async () => {
		const storage = config([
			"--storage",
			"redis",
			"--redis-url",
			`redis://127.0.0.1:${closingPort}`,
			"--redis-key-prefix",
			"t:",
		]).storage;
		await expect(openStorage(storage)).rejects.toThrow(
			`redis storage: cannot use 127.0.0.1:${closingPort} db 0 key prefix "t:":`,
		);
	});

	it("gives up at once when stopped, with the stop's reason", async () => {
		// A listener that never answers: the handshake waits until the stop.
		const sockets = new Set<Socket>();
		const silent = createServer((socket) => {
			sockets.add(socket);
		});
		await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
		try {
			const port = (silent.address() as { port: number }).port;
			const storage = config([
				"--storage",
				"redis",
				"--redis-url",
				`redis://127.0.0.1:${port}`,
			]).storage;
			const stop = new AbortController();
			const opening = openStorage(storage, stop.signal);
			const reason = new Error("stopped by SIGTERM");
			setImmediate(() => stop.abort(reason));
			await expect(opening).rejects.toBe(reason);
			const stopped = new AbortController();
			stopped.abort(reason);
			await expect(openStorage(storage, stopped.signal)).rejects.toBe(reason);
		} finally {
			for (const socket of sockets) socket.destroy();
			await new Promise<void>((resolve) => silent.close(() => resolve()));
		}
	});
});
