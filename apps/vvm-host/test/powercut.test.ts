// The power-cut test of issue 32: the host on level storage in a directory of powercutfs
// (tooling/powercut), a FUSE filesystem that keeps only what was fsynced and drops everything else
// at a simulated power cut. The host acknowledges commands under load; the power is cut (the host
// is SIGKILLed and the filesystem put back into its durable image: unsynced writes, renames and
// unlinks lost), the filesystem remounted, the host restarted on what survived, several times.
// Then every acknowledged command must be in storage (`checkCpStorage` of @vvm/cp). The same run
// with `--level-durability unsafe-no-sync` must lose acknowledged commands: the checker and the
// filesystem catch a host that does not fsync.
//
// Needs /dev/fuse, root (or fusermount3) and the filesystem's binary
// (`bash tooling/powercut/install.sh`); skipped with the reason printed when FUSE cannot be
// mounted, except under CI=true, where that fails. VVM_POWERCUT_TEST_CUTS sets the number of
// power cuts of the durable case (6 in CI, 3 otherwise).
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import type { AcknowledgedCommand, CheckReport } from "@vvm/cp/testing";
import { checkCpStorage } from "@vvm/cp/testing";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { unusedPort } from "@vvm/vitest-config/servers";
import { ClassicLevel } from "classic-level";
import { afterAll, describe, expect, it } from "vitest";
import { HOST_APP_ID } from "../src/host.ts";
import type { HostProcess } from "./support/host-process.ts";
import { APP_DIR, killHard, spawnHost } from "./support/host-process.ts";
import { withLevelStorage } from "./support/level-db.ts";

const FS_BIN = resolve(APP_DIR, "../../tooling/powercut/bin/powercutfs");
const IN_CI = process.env.CI === "true" || process.env.CI === "1";
const CUTS = Number(process.env.VVM_POWERCUT_TEST_CUTS ?? (IN_CI ? 6 : 3));
const PARTITIONS = 4;
const WORKSPACES = 24;
const CLIENTS = 6;
const CUSTOMER = "app1pkg.Customer";

const spawned: HostProcess[] = [];
const mounts: PowerFs[] = [];
const dirs: string[] = [];
afterAll(async () => {
	for (const h of spawned) killHard(h);
	for (const m of mounts) await m.stop();
	for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** One mount of powercutfs. */
interface PowerFs {
	readonly mountpoint: string;
	/** Cuts the power: resolves with the filesystem's "powercut: ..." line once it restored. */
	cut(): Promise<string>;
	/** Unmounts without a cut (idempotent). */
	stop(): Promise<void>;
}

/** Mounts `backing` at `mountpoint`; rejects with the filesystem's error output if it cannot. */
async function mountFs(backing: string, mountpoint: string, state: string): Promise<PowerFs> {
	await mkdir(mountpoint, { recursive: true });
	await rm(state, { recursive: true, force: true });
	const child: ChildProcess = spawn(
		FS_BIN,
		["-backing", backing, "-mount", mountpoint, "-state", state],
		{ stdio: ["ignore", "pipe", "pipe"] },
	);
	const out: string[] = [];
	const err: string[] = [];
	createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (l) => out.push(l));
	createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (l) => err.push(l));
	const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
	child.once("error", (e) => err.push(String(e)));
	const deadline = performance.now() + 15_000;
	while (!out.some((l) => l.startsWith("ready"))) {
		if (child.exitCode !== null || child.signalCode !== null || performance.now() > deadline) {
			child.kill("SIGKILL");
			throw new Error(`powercutfs did not mount: ${[...err, ...out].join("\n") || "no output"}`);
		}
		await new Promise((r) => setTimeout(r, 10));
	}
	let done = false;
	const fs: PowerFs = {
		mountpoint,
		async cut() {
			done = true;
			child.kill("SIGUSR1");
			const code = await exited;
			if (code !== 0) throw new Error(`powercutfs exited with ${code}: ${err.join("\n")}`);
			return out.find((l) => l.startsWith("powercut:")) ?? "";
		},
		async stop() {
			if (done) return;
			done = true;
			child.kill("SIGTERM");
			await exited;
		},
	};
	mounts.push(fs);
	return fs;
}

/** Why the test cannot run here, or `undefined`: mounts and unmounts powercutfs once. */
async function fuseUnavailable(): Promise<string | undefined> {
	if (!existsSync(FS_BIN)) return `no ${FS_BIN} (run: bash tooling/powercut/install.sh)`;
	if (!existsSync("/dev/fuse")) return "no /dev/fuse";
	const base = await mkdtemp(join(tmpdir(), "vvm-powercut-probe-"));
	try {
		await mkdir(join(base, "disk"));
		const fs = await mountFs(join(base, "disk"), join(base, "mnt"), join(base, "state"));
		await fs.stop();
		return undefined;
	} catch (error) {
		return error instanceof Error ? error.message : String(error);
	} finally {
		await rm(base, { recursive: true, force: true });
	}
}

const unavailable = await fuseUnavailable();
if (unavailable !== undefined) {
	if (IN_CI)
		throw new Error(
			`the power-cut test must run in CI, but FUSE cannot be mounted: ${unavailable}`,
		);
	console.warn(`[powercut] skipped: FUSE cannot be mounted here: ${unavailable}`);
}

/** Concurrent clients creating customers and running sys.CUD (two records), across restarts. */
function startLoad(base: string) {
	const acknowledged: AcknowledgedCommand[] = [];
	const stats = { sent: 0, cutOff: 0, statuses: new Map<number, number>() };
	let running = true;
	let seq = 0;
	const one = async (): Promise<void> => {
		const wsid = 1 + Math.floor(Math.random() * WORKSPACES);
		const ws = `${base}/api/v2/apps/vvm/demo/workspaces/${wsid}`;
		const cud = Math.random() < 0.3;
		const url = cud ? `${ws}/commands/sys.CUD` : `${ws}/docs/${CUSTOMER}`;
		const body = cud
			? {
					cuds: [
						{ fields: { "sys.ID": 1, "sys.QName": CUSTOMER, name: `c${seq++}` } },
						{
							fields: {
								"sys.ID": 2,
								"sys.QName": "app1pkg.Address",
								"sys.ParentID": 1,
								city: "Oslo",
							},
						},
					],
				}
			: { name: `n${seq++}` };
		stats.sent++;
		let status: number;
		let text: string;
		let plogOffset: number;
		try {
			const res = await fetch(url, {
				method: "POST",
				body: JSON.stringify(body),
				headers: { "content-type": "application/json" },
				signal: AbortSignal.timeout(5_000),
			});
			status = res.status;
			plogOffset = Number(res.headers.get("vvm-plog-offset"));
			text = await res.text();
		} catch {
			stats.cutOff++; // the host is down or was killed mid-request: not acknowledged
			await new Promise((r) => setTimeout(r, 5));
			return;
		}
		stats.statuses.set(status, (stats.statuses.get(status) ?? 0) + 1);
		// 201 for a create, 200 for a command (sys.CUD): both acknowledge it.
		if (status !== 200 && status !== 201) {
			await new Promise((r) => setTimeout(r, 5));
			return;
		}
		const answer = JSON.parse(text) as {
			CurrentWLogOffset: number;
			NewIDs: Record<string, number>;
		};
		acknowledged.push({ wsid, result: { ...answer, plogOffset } });
	};
	const clients = Array.from({ length: CLIENTS }, async () => {
		while (running) await one();
	});
	return {
		acknowledged,
		stats,
		async stop() {
			running = false;
			await Promise.all(clients);
		},
	};
}

/** The killed host is provably dead: its leader record goes, so the next run leads at once. */
async function clearLeaderRecord(path: string): Promise<void> {
	await withLevelStorage(path, async (driver) => {
		const leaders = vvmLeadershipStorage(driver);
		const value = await leaders.get(1);
		if (value !== undefined) await leaders.compareAndDelete(1, value);
	});
}

/**
 * `cuts` times: mount, start the host, wait until this run acknowledged `perRun` commands (and a
 * random few ms more), SIGKILL the host and cut the power. Then mount once more and check.
 */
async function runPowerCuts(
	name: string,
	cuts: number,
	perRun: number,
	extraArgs: readonly string[],
	precreate: boolean,
): Promise<{ report: CheckReport; acknowledged: number; log: string[] }> {
	const base = await mkdtemp(join(tmpdir(), `vvm-powercut-${name}-`));
	dirs.push(base);
	const backing = join(base, "disk");
	const mnt = join(base, "mnt");
	await mkdir(join(backing, "data"), { recursive: true });
	if (precreate) {
		// A database that has lived for a while: LevelDB 1.20 never fsyncs the first MANIFEST of a
		// new database, nor the directory after pointing CURRENT at the next one; the host syncs
		// them after the open, but not with unsafe-no-sync, whose case is about acknowledged
		// commands, not about a database cut in its first second ("no meta-nextfile entry").
		const created = new ClassicLevel(join(backing, "data"));
		await created.open();
		await created.close();
	}
	const data = join(mnt, "data");
	const port = await unusedPort();
	const args = [
		"--storage",
		"level",
		"--data-dir",
		data,
		"--http-port",
		String(port),
		"--partitions",
		String(PARTITIONS),
		"--leadership-seconds",
		"5",
		"--acquire-retry-ms",
		"50",
		"--acquire-timeout-ms",
		"30000",
		"--work-interval-ms",
		"0",
		"--log-level",
		"warn",
		...extraArgs,
	];
	const load = startLoad(`http://127.0.0.1:${port}`);
	const log: string[] = [];
	try {
		for (let cut = 0; cut < cuts; cut++) {
			const fs = await mountFs(backing, mnt, join(base, `state-${cut}`));
			if (cut > 0) await clearLeaderRecord(data);
			const host = spawnHost(`${name}-${cut}`, args);
			spawned.push(host);
			const before = load.acknowledged.length;
			const deadline = performance.now() + 30_000;
			while (load.acknowledged.length < before + perRun && performance.now() < deadline) {
				if (host.child.exitCode !== null) break;
				await new Promise((r) => setTimeout(r, 5));
			}
			expect(host.child.exitCode, `run ${cut} exited: ${host.stderr.join("\n")}`).toBeNull();
			expect(
				load.acknowledged.length - before,
				`run ${cut} acknowledged too little within 30 s`,
			).toBeGreaterThanOrEqual(perRun);
			await new Promise((r) => setTimeout(r, Math.random() * 100));
			// The power goes: the process dies with the machine, then the disk keeps what was synced.
			killHard(host);
			await host.exited;
			const after = load.acknowledged.length;
			log.push(`cut ${cut}: ${after - before} acknowledged in this run; ${await fs.cut()}`);
		}
	} finally {
		await load.stop();
	}
	const fs = await mountFs(backing, mnt, join(base, "state-final"));
	try {
		const report = await withLevelStorage(data, (storage) =>
			checkCpStorage({
				storage,
				appId: HOST_APP_ID,
				partitions: PARTITIONS,
				acknowledged: load.acknowledged,
			}),
		);
		console.log(
			`[powercut ${name}] ${cuts} power cuts; ${load.acknowledged.length} acknowledged of ${load.stats.sent} sent ` +
				`(${load.stats.cutOff} cut off); answers ${JSON.stringify(Object.fromEntries(load.stats.statuses))}; ` +
				`storage: ${report.events} events, ${report.records} records, ${report.problems.length} problems\n  ${log.join("\n  ")}`,
		);
		return { report, acknowledged: load.acknowledged.length, log };
	} finally {
		await fs.stop();
	}
}

describe.skipIf(unavailable !== undefined)(
	"power cut: LevelDB on a filesystem that drops unsynced writes",
	() => {
		it(`the host on level storage loses no acknowledged command over ${CUTS} power cuts`, {
			timeout: 10 * 60_000,
		}, async () => {
			const { report, acknowledged } = await runPowerCuts("sync", CUTS, 60, [], false);
			expect(report.problems).toEqual([]);
			expect(report.ok).toBe(true);
			expect(report.acknowledged).toBe(acknowledged);
			expect(acknowledged).toBeGreaterThanOrEqual(CUTS * 60);
		});

		it("with --level-durability unsafe-no-sync, one power cut loses acknowledged commands (the test can fail)", {
			timeout: 5 * 60_000,
		}, async () => {
			const { report } = await runPowerCuts(
				"nosync",
				1,
				60,
				["--level-durability", "unsafe-no-sync"],
				true,
			);
			expect(report.ok).toBe(false);
			// Every command of the run was acknowledged and none was fsynced: the cut drops their events.
			expect(
				report.problems.filter((p) => p.includes("is not in the logs")).length,
			).toBeGreaterThanOrEqual(60);
		});
	},
);
