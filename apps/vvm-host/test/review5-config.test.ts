// Review 5 (command line, configuration, start-up, shutdown): the host's part. Each case failed on
// the code the review was written against (its finding named in the describe). The spawned-host
// cases run the build when it is up to date (a second signal only shows there: tsx takes it).
import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigError, parseHostConfig } from "../src/config.ts";
import type { HostProcess } from "./support/host-process.ts";
import { killHard } from "./support/host-process.ts";

let dir = "";
const hosts: HostProcess[] = [];
const servers: Server[] = [];

beforeAll(async () => {
	dir = await mkdtemp(join(tmpdir(), "vvm-review5-config-"));
});
afterAll(async () => {
	for (const h of hosts) killHard(h);
	for (const s of servers) s.close();
	if (dir !== "") await rm(dir, { recursive: true, force: true });
});

const configError = (argv: string[], env: Record<string, string> = {}): string => {
	try {
		parseHostConfig(argv, env);
	} catch (error) {
		if (error instanceof ConfigError) return error.message;
		throw error;
	}
	throw new Error(`accepted: ${argv.join(" ")}`);
};

describe("command-line values silently dropped", () => {
	it("a flag given twice is refused naming it, not last-one-wins (values not shown)", () => {
		expect(configError(["--storage", "mem", "--storage", "level"])).toBe(
			"--storage is given 2 times: give it once",
		);
		const message = configError([
			"--storage",
			"redis",
			"--redis-url",
			"redis://:secret1@127.0.0.1:6390/0",
			"--redis-url=redis://:secret2@127.0.0.1:6390/0",
		]);
		expect(message).toContain("--redis-url is given 2 times");
		expect(message).not.toContain("secret");
	});

	it("a flag of another storage than --storage is refused naming both (a forgotten --storage pg ran on local level)", () => {
		expect(
			configError(["--pg-url", "postgres://vvm:pw@10.0.0.5:5432/vvm", "--http-port", "0"]),
		).toBe(
			"--pg-url is a flag of --storage pg, but --storage is level (the default): give --storage pg, or drop --pg-url",
		);
		expect(configError(["--storage", "mem", "--data-dir", "/tmp/x"])).toContain(
			"--data-dir is a flag of --storage level, but --storage is mem",
		);
		expect(configError(["--redis-key-prefix", "a:"], { VVM_STORAGE: "pg" })).toContain(
			"but VVM_STORAGE is pg",
		);
	});

	it("a variable of another storage stays accepted (an environment may hold every storage's settings)", () => {
		const parsed = parseHostConfig(["--storage", "mem"], {
			VVM_PG_URL: "postgres://vvm@127.0.0.1:54329/vvm",
			VVM_DATA_DIR: "/tmp/x",
		});
		expect(parsed.help === false && parsed.config.storage.kind).toBe("mem");
	});
});
