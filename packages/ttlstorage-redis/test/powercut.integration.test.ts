// Durability at a power cut: Redis with its append-only file on powercutfs (tooling/powercut, a
// FUSE filesystem that keeps only what was fsynced), writers acknowledged by the driver, then the
// server SIGKILLed and the power cut, the filesystem mounted again and Redis restarted on what the
// disk kept. With `appendfsync always` (the repository's setting) every acknowledged write and
// raised fence must be there; with `everysec` (the common default) acknowledged writes are lost,
// which is what the README says and what this file shows. Needs /dev/fuse, root (or
// fusermount3), redis-server and the filesystem's binary (bash tooling/powercut/install.sh);
// skipped with the reason otherwise, except under CI=true, where that fails.
import type { ChildProcess } from "node:child_process";
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { unusedPort } from "@vvm/vitest-config/servers";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "../src/index.ts";

const FS_BIN = resolve(
	fileURLToPath(import.meta.url),
	"../../../../tooling/powercut/bin/powercutfs",
);
// As the host's power-cut test: FUSE is not the Redis server, so only CI insists on it
// (scripts/test.sh builds the filesystem first and warns when it cannot, outside CI).
const MUST_RUN = process.env.CI === "true" || process.env.CI === "1";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
	for (const c of cleanups.splice(0).reverse()) await c();
});

/** A mount of powercutfs: `cut()` cuts the power and resolves once the disk holds what was synced. */
async function mount(backing: string, mountpoint: string, state: string) {
	await mkdir(mountpoint, { recursive: true });
	await rm(state, { recursive: true, force: true });
	const child = spawn(FS_BIN, ["-backing", backing, "-mount", mountpoint, "-state", state], {
		stdio: ["ignore", "pipe", "pipe"],
	});
	const lines: string[] = [];
	for (const s of [child.stdout, child.stderr])
		createInterface({ input: s }).on("line", (l) => lines.push(l));
	const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
	const ready = await new Promise<boolean>((r) => {
		const timer = setInterval(() => {
			if (lines.some((l) => l.startsWith("ready"))) r(true);
			else if (child.exitCode !== null) r(false);
		}, 10);
		setTimeout(() => r(false), 15_000);
		void exited.then(() => clearInterval(timer));
		void new Promise((done) => setTimeout(done, 15_000)).then(() => clearInterval(timer));
	});
	let done = false;
	const stop = async () => {
		if (done) return;
		done = true;
		child.kill("SIGTERM");
		await exited;
	};
	cleanups.push(stop);
	if (!ready) {
		child.kill("SIGKILL");
		throw new Error(`powercutfs did not mount: ${lines.join("\n") || "no output"}`);
	}
	return {
		async cut(): Promise<string> {
			done = true;
			child.kill("SIGUSR1");
			expect(await exited).toBe(0);
			return lines.find((l) => l.startsWith("powercut:")) ?? "";
		},
		stop,
	};
}

/** redis-server on `dir`, as tooling/servers/redis runs it but with `appendfsync` given. */
async function startRedis(dir: string, port: number, fsync: string, log: string) {
	const child: ChildProcess = spawn(
		"redis-server",
		[
			"--port",
			String(port),
			"--bind",
			"127.0.0.1",
			"--dir",
			dir,
			"--appendonly",
			"yes",
			"--appendfsync",
			fsync,
			"--save",
			"",
			"--daemonize",
			"no",
			"--logfile",
			log,
		],
		{ stdio: "ignore" },
	);
	const exited = new Promise<void>((r) => child.once("exit", () => r()));
	const kill = async () => {
		if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
		await exited;
	};
	cleanups.push(kill);
	const client = new Redis(port, "127.0.0.1", {
		...REDIS_CLIENT_OPTIONS,
		lazyConnect: true,
		retryStrategy: () => null,
	});
	client.on("error", () => {});
	for (let i = 0; ; i++) {
		try {
			await client.connect();
			if ((await client.ping()) === "PONG") break;
		} catch {
			client.disconnect();
			if (i > 300 || child.exitCode !== null)
				throw new Error(`redis-server did not start (log ${log})`);
			await new Promise((r) => setTimeout(r, 50));
		}
	}
	cleanups.push(() => client.disconnect());
	return { client, kill };
}

function unavailable(): string | undefined {
	if (!existsSync(FS_BIN)) return `no ${FS_BIN} (run: bash tooling/powercut/install.sh)`;
	if (!existsSync("/dev/fuse")) return "no /dev/fuse";
	if (spawnSync("redis-server", ["--version"]).status !== 0) return "no redis-server on PATH";
	return undefined;
}

const reason = unavailable();
if (reason !== undefined && MUST_RUN)
	throw new Error(`the Redis power-cut test must run: ${reason}`);
if (reason !== undefined) console.warn(`[powercut] skipped: ${reason}`);

/**
 * Writes until `acked` puts were acknowledged (and a few ms more), SIGKILLs Redis and cuts the
 * power; mounts again, restarts Redis on what survived, and returns what is missing.
 */
async function run(fsync: "always" | "everysec", acked: number) {
	const base = await mkdtemp(join(tmpdir(), "vvm-redis-powercut-"));
	cleanups.push(() => rm(base, { recursive: true, force: true }));
	const [disk, mnt, state] = [join(base, "disk"), join(base, "mnt"), join(base, "state")];
	// Redis 7.0 creates appendonlydir without fsyncing its parent: on a filesystem that keeps only
	// what was synced, a cut then loses the whole directory (this test found it). Created here
	// beforehand, durable at mount, as tooling/servers/redis/start.sh does.
	await mkdir(join(disk, "data", "appendonlydir"), { recursive: true });
	const port = await unusedPort();
	const fs = await mount(disk, mnt, state);
	const first = await startRedis(join(mnt, "data"), port, fsync, join(base, "redis-1.log"));
	const storage = createRedisTTLStorage({ client: first.client, sweepIntervalMs: 0 });
	const p = utf8("powercut");
	const scope = utf8("scope");
	const ackedKeys: number[] = [];
	let fence = 0n;
	let next = 0;
	let stop = false;
	const writer = async () => {
		while (!stop) {
			const i = next++;
			try {
				if (i % 10 === 9) {
					const e = await storage.raiseFence(scope);
					if (e > fence) fence = e;
				} else {
					await storage.put(p, utf8(String(i)), utf8(`v${i}`), 0, {
						fence: { scope, epoch: fence },
					});
					ackedKeys.push(i);
				}
			} catch (error) {
				// Refused by a raise that overtook it, or the server went away: not acknowledged.
				if (!TTLStorageError.is(error)) throw error;
				await new Promise((r) => setImmediate(r));
			}
		}
	};
	const writers = Array.from({ length: 4 }, writer);
	while (ackedKeys.length < acked) await new Promise((r) => setTimeout(r, 5));
	const killed = first.kill(); // the signal goes now, with writes in flight
	stop = true;
	await killed;
	await Promise.all(writers);
	const line = await fs.cut();
	await storage.close();
	await mount(disk, mnt, state);
	const second = await startRedis(join(mnt, "data"), port, fsync, join(base, "redis-2.log"));
	const after = createRedisTTLStorage({ client: second.client, sweepIntervalMs: 0 });
	const missing = [];
	for (const i of ackedKeys)
		if (Buffer.from((await after.get(p, utf8(String(i)))) ?? []).toString() !== `v${i}`)
			missing.push(i);
	// The stored epoch is at least the last acknowledged raise: a raise just below it is refused.
	const below =
		fence === 0n
			? "none"
			: await after.raiseFence(scope, fence - 1n).then(
					() => "accepted",
					(e: unknown) => (TTLStorageError.is(e) ? e.code : String(e)),
				);
	const fenceKept = fence === 0n || below === "TTLSTORAGE_FENCED";
	return { acked: ackedKeys.length, missing, fenceKept, line };
}

describe.skipIf(reason !== undefined)("Redis at a power cut (powercutfs)", () => {
	it("appendfsync always: every acknowledged write and raised fence survives", {
		timeout: 120_000,
	}, async () => {
		for (let cut = 0; cut < 2; cut++) {
			const r = await run("always", 300 + cut * 100);
			console.log(`always: ${r.acked} acknowledged, ${r.missing.length} lost; ${r.line}`);
			expect({ missing: r.missing, fenceKept: r.fenceKept }).toEqual({
				missing: [],
				fenceKept: true,
			});
		}
	});

	// Not every cut loses (CI, on a loaded machine, once saw 0 of 300 lost): Redis starts an fsync
	// about once a second, right after a write to the file; when one starts after the last
	// acknowledged write and SIGKILL comes before the next, the disk keeps them all. So up to five
	// cuts, of which one must lose an acknowledged write; on an idle machine the first does.
	it("appendfsync everysec: acknowledged writes are lost (what the README warns of)", {
		timeout: 300_000,
	}, async () => {
		const runs = [];
		for (let cut = 0; cut < 5; cut++) {
			const r = await run("everysec", 300);
			console.log(`everysec: ${r.acked} acknowledged, ${r.missing.length} lost; ${r.line}`);
			runs.push(r.missing.length);
			if (r.missing.length > 0) break;
		}
		expect(
			runs.some((lost) => lost > 0),
			`lost per cut: ${runs.join(", ")}`,
		).toBe(true);
	});
});
