// HTTPS: --tls-cert / --tls-key. A self-signed certificate for 127.0.0.1 made by openssl for the
// test; the client trusts exactly it.
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseHostConfig } from "../src/config.ts";
import { AuthConfigError, readTlsFiles } from "../src/http/auth.ts";
import type { HttpServer } from "../src/http/router.ts";
import { createRouteTable, startHttpServer } from "../src/http/router.ts";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, runCli, spawnHost } from "./support/host-process.ts";

let dir = "";
let cert = "";
let key = "";
const servers: HttpServer[] = [];
const hosts: HostProcess[] = [];

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "vvm-tls-"));
	cert = join(dir, "cert.pem");
	key = join(dir, "key.pem");
	// openssl is in every Debian image (CI's too); the test would fail, not skip, without it.
	execFileSync(
		"openssl",
		[
			"req",
			"-x509",
			"-newkey",
			"ec",
			"-pkeyopt",
			"ec_paramgen_curve:P-256",
			"-nodes",
			"-keyout",
			key,
			"-out",
			cert,
			"-days",
			"1",
			"-subj",
			"/CN=127.0.0.1",
			"-addext",
			"subjectAltName=IP:127.0.0.1",
		],
		{ stdio: "ignore" },
	);
});
afterAll(async () => {
	for (const s of servers) await s.close();
	for (const h of hosts) killHard(h);
	if (dir !== "") await rm(dir, { recursive: true, force: true });
});

/** GET over HTTPS trusting only the test's certificate. */
function get(port: number, path: string): Promise<{ status: number; body: string }> {
	return new Promise((resolve, reject) => {
		readFile(cert, "utf8").then((ca) => {
			const req = request({ host: "127.0.0.1", port, path, ca }, (res) => {
				let body = "";
				res.on("data", (d: Buffer) => {
					body += d.toString("utf8");
				});
				res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
			});
			req.on("error", reject);
			req.end();
		}, reject);
	});
}

describe("HTTPS", () => {
	it("serves the route table over TLS, and plain HTTP on that port gets no answer", async () => {
		const tls = readTlsFiles({ tlsCert: cert, tlsKey: key });
		expect(tls).toBeDefined();
		const table = createRouteTable([
			{ method: "GET", path: "/ok", handle: () => ({ status: 200, body: { ok: true } }) },
		]);
		const http = await startHttpServer(table, "127.0.0.1", 0, {}, tls);
		servers.push(http);
		expect(await get(http.port, "/ok")).toEqual({ status: 200, body: '{"ok":true}\n' });
		const plain = await fetch(`http://127.0.0.1:${http.port}/ok`).then(
			(r) => r.status,
			() => "refused",
		);
		expect(plain).not.toBe(200);
	});

	it("a connection that never starts its TLS handshake is closed after the headers' bound (node's own: 120 s)", async () => {
		const tls = readTlsFiles({ tlsCert: cert, tlsKey: key });
		const table = createRouteTable([]);
		const http = await startHttpServer(table, "127.0.0.1", 0, { headersTimeoutMs: 300 }, tls);
		servers.push(http);
		const socket = connect(http.port, "127.0.0.1");
		const began = performance.now();
		const closedAfter = await new Promise<number>((resolve) => {
			socket.on("error", () => {});
			socket.on("close", () => resolve(performance.now() - began));
		});
		// Closed by the server within a few check intervals, not held for two minutes.
		expect(closedAfter).toBeLessThan(10_000);
	});

	it("needs both flags and readable PEM files, naming the flag", async () => {
		expect(() => parseHostConfig(["--tls-cert", cert], {})).toThrow(ConfigError);
		expect(() => parseHostConfig(["--tls-cert", cert], {})).toThrow("--tls-cert needs --tls-key");
		expect(() => parseHostConfig(["--tls-key", key], {})).toThrow("--tls-key needs --tls-cert");
		const notPem = join(dir, "not.pem");
		await writeFile(notPem, "hello");
		expect(() => readTlsFiles({ tlsCert: notPem, tlsKey: key })).toThrow(AuthConfigError);
		expect(() => readTlsFiles({ tlsCert: notPem, tlsKey: key })).toThrow("--tls-cert");
		expect(() => readTlsFiles({ tlsCert: cert, tlsKey: join(dir, "missing") })).toThrow(
			"--tls-key",
		);
		const { code, stderr } = await runCli([
			"--storage",
			"mem",
			"--http-port",
			"0",
			"--tls-cert",
			cert,
			"--tls-key",
			notPem,
		]);
		expect(code).toBe(2);
		expect(stderr).toContain("--tls-key");
	}, 30_000);

	it("a host with --tls-cert/--tls-key answers over HTTPS and logs an https URL", async () => {
		const data = await mkdtemp(join(tmpdir(), "vvm-tls-host-"));
		try {
			const host = spawnHost("tls", [
				"--storage",
				"level",
				"--data-dir",
				data,
				"--http-port",
				"0",
				"--tls-cert",
				cert,
				"--tls-key",
				key,
			]);
			hosts.push(host);
			const listening = await host.waitFor((l) => l.event === "listening");
			expect(String(listening.url)).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
			const port = await host.port();
			expect((await get(port, "/healthz")).status).toBe(200);
			host.child.kill("SIGTERM");
			expect((await host.exited).code).toBe(0);
		} finally {
			await rm(data, { recursive: true, force: true });
		}
	}, 60_000);
});
