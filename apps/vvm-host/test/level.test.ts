import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, runCli, spawnHost } from "./support/host-process.ts";
import { withLevelStorage } from "./support/level-db.ts";

const spawned: HostProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
	for (const h of spawned) killHard(h);
	for (const d of dirs) await rm(d, { recursive: true, force: true });
});

let dir = "";
beforeEach(async () => {
	dir = await mkdtemp(join(tmpdir(), "vvm-host-level-"));
	dirs.push(dir);
});

/** Opens the host's database from the test (only while no host holds it). */
function withLeaderStorage<T>(
	path: string,
	use: (s: ReturnType<typeof vvmLeadershipStorage>) => Promise<T>,
): Promise<T> {
	return withLevelStorage(path, (driver) => use(vvmLeadershipStorage(driver)));
}

const levelArgs = (): string[] => [
	"--storage",
	"level",
	"--data-dir",
	dir,
	"--http-port",
	"0",
	"--log-level",
	"debug",
];

describe("vvm-host on the embedded level storage", () => {
	it("becomes leader, and on SIGTERM exits 0 with the leader record deleted", async () => {
		const host = spawnHost("level-host", levelArgs());
		spawned.push(host);
		const leader = await host.waitFor((l) => l.event === "leader");
		const address = leader.address as string;
		host.child.kill("SIGTERM");
		expect((await host.exited).code).toBe(0);
		expect(await withLeaderStorage(dir, (s) => s.get(1))).toBeUndefined();
		expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
	});

	it("cannot acquire a slot held by another within the timeout: exit 1 saying so", async () => {
		await withLeaderStorage(dir, (s) => s.insertIfNotExist(1, "10.0.0.9:8080", 60));
		const { code, stderr } = await runCli([
			...levelArgs(),
			"--acquire-timeout-ms",
			"300",
			"--acquire-retry-ms",
			"100",
		]);
		expect(code).toBe(1);
		expect(stderr).toContain("launch failed");
		expect(stderr).toContain("failed to acquire leadership of any slot in 1..1");
		expect(await withLeaderStorage(dir, (s) => s.get(1))).toBe("10.0.0.9:8080");
	});

	it("SIGTERM while waiting for a slot exits 0 without touching the holder's record", async () => {
		await withLeaderStorage(dir, (s) => s.insertIfNotExist(1, "10.0.0.9:8080", 60));
		const host = spawnHost("waiting-host", [...levelArgs(), "--acquire-retry-ms", "100"]);
		spawned.push(host);
		await host.waitFor((l) => l.event === "acquire-failed");
		const ready = await fetch(`http://127.0.0.1:${await host.port()}/readyz`);
		expect(ready.status).toBe(503);
		const leadership = (await (
			await fetch(`http://127.0.0.1:${await host.port()}/leadership`)
		).json()) as Record<string, unknown>;
		expect(leadership).toMatchObject({
			leader: false,
			phase: "waiting",
			slots: [{ slot: 1, holder: "10.0.0.9:8080" }],
		});
		host.child.kill("SIGTERM");
		expect((await host.exited).code).toBe(0);
		expect(await withLeaderStorage(dir, (s) => s.get(1))).toBe("10.0.0.9:8080");
	});

	it("a second host on the same data directory fails clearly with exit 1", async () => {
		const first = spawnHost("level-owner", levelArgs());
		spawned.push(first);
		await first.waitFor((l) => l.event === "leader");
		const { code, stderr } = await runCli(levelArgs());
		expect(code).toBe(1);
		expect(stderr).toContain("level storage: cannot open");
		expect(stderr).toContain("another vvm-host");
		first.child.kill("SIGTERM");
		expect((await first.exited).code).toBe(0);
	});
});
