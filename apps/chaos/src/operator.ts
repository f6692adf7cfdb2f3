// The commands workload's operator actions (`--operator`): what an operator does to a running
// cluster, done the documented way while clients write and faults go on, one at a time, each after
// `--operator-interval-ms`, in a seeded order:
// - `num-vvm` (static placement): stop every host, start one with `--num-vvm M --num-vvm-from N`,
//   wait until it changed the stored value (its `num-vvm-changed` line), then start the rest with
//   `--num-vvm M` (vvm-host README, "Changing --num-vvm");
// - `placement-switch`: stop every host, start them all in the other `--placement` (the same
//   `--lease-namespace`, so both placements share each partition's epoch counter);
// - `root-loss` (leases placement): delete the lease batch's root record on the storage (and, half
//   the time, one shard record: the repair's `unknown` case), see every
//   running host report `leases.batch-fault` (LEASES_BATCH_ROOT_MISSING) and no grant for a lease
//   interval plus the skew bound, run `vvm-host repair-lease-root`, see every partition served again.
// An action that needs the other placement is preceded by a `placement-switch`. Every step goes to
// events.jsonl (`operator`, `operator-step`, `operator-end`); an action that does not complete
// (a host that never changed the value, hosts that never reported the fault, partitions never
// served again, a grant while the root was missing) fails the run.
import { spawn } from "node:child_process";
import { utf8 } from "@vvm/ttlstorage";
import type { HostBuild } from "@vvm/vvm-host/launch";
import { hostCliArgs } from "@vvm/vvm-host/launch";
import type { ChaosHost, HostLine } from "./chaos-host.ts";
import type { EventLog } from "./events.ts";
import type { ClusterShape } from "./host-command.ts";
import { hostCommand } from "./host-command.ts";
import { monoMs, sleep } from "./mono.ts";
import type { ChaosOptions, OperatorAction } from "./options.ts";
import type { Rng } from "./rng.ts";
import type { StorageBackend } from "./storage-backend.ts";

/** The hosts' `--lease-namespace` (the default: the chaos hosts pass none). */
const NAMESPACE = "vvm";
/**
 * The lease batch record and its root's clustering columns (`<namespace>/leases`, cCols `[0]`:
 * packages/leases README "Storage layout").
 */
const BATCH_KEY = utf8(`${NAMESPACE}/leases`);
const ROOT_CCOLS = Uint8Array.of(0);

/**
 * How long one step of an action may take before the action fails (JVM, tsx start-up, faults):
 * a liveness bound under dense faults, not the failover bound. Measured: a switch from leases to
 * static took 53 s under the run's faults at load 2 (hosts' own killers ended leaders while slots
 * were taken again), 47 s without faults at load 15; CI runs this beside other chaos runs.
 */
const STEP_TIMEOUT_MS = 180_000;

/** One action as it went. */
interface OperatorRecord {
	readonly action: OperatorAction;
	readonly startMono: number;
	readonly endMono: number;
	readonly ok: boolean;
	/** What went wrong, when not ok. */
	readonly problem?: string;
	/** Its facts: num-vvm from/to, placement from/to, root-loss times and the repair's result. */
	readonly details: Readonly<Record<string, unknown>>;
}

/** The operator's part of a run's result. */
export interface OperatorReport {
	readonly ok: boolean;
	readonly actions: readonly OperatorRecord[];
}

/** What the operator needs of the run. */
export interface OperatorContext {
	readonly options: ChaosOptions;
	readonly hosts: readonly ChaosHost[];
	/** The shape the hosts' commands are built from at each start (the operator changes it). */
	readonly cluster: { current: ClusterShape };
	readonly backend: StorageBackend;
	readonly build: HostBuild;
	readonly events: EventLog;
	readonly say: (line: string) => void;
}

/** A running operator. */
export interface Operator {
	/** Every host log line (the run's `onLine`). */
	onLine(host: ChaosHost, line: HostLine): void;
	/** Actions done so far. */
	readonly done: number;
	/** Lets the current action finish (every host running again), starts no other. */
	stop(): Promise<OperatorReport>;
}

interface Seen {
	readonly host: string;
	readonly line: HostLine;
	readonly mono: number;
}

/**
 * Starts the operator: its first action after `--operator-interval-ms`.
 *
 * @example
 * ```ts
 * const operator = startOperator({ options, hosts, cluster, backend, build, events, say }, rng.fork("operator"));
 * // … hosts' onLine: operator.onLine(host, line); at the end:
 * const report = await operator.stop();
 * ```
 */
export function startOperator(context: OperatorContext, rng: Rng): Operator {
	const { options, hosts, cluster, events, say } = context;
	const stopCtl = new AbortController();
	const records: OperatorRecord[] = [];
	// Host lines since the current step began (only the ones the steps look for, only while an
	// action runs).
	let seen: Seen[] = [];
	let acting = false;
	const watched = new Set([
		"num-vvm-changed",
		"leases.batch-fault",
		"leases.granted",
		"partition-ready",
		// A refused --num-vvm-from: the host's `exit` line names the stored value.
		"exit",
	]);

	const waitFor = async (what: string, cond: () => boolean): Promise<void> => {
		const end = monoMs() + STEP_TIMEOUT_MS;
		while (!cond()) {
			if (monoMs() > end)
				throw new Error(`timed out after ${STEP_TIMEOUT_MS} ms waiting for ${what}`);
			await sleep(50);
		}
	};
	const running = (): ChaosHost[] => hosts.filter((h) => h.current !== undefined);
	const step = (
		action: OperatorAction,
		name: string,
		fields: Record<string, unknown> = {},
	): void => {
		events.emit("operator-step", { action, step: name, ...fields });
	};
	const pauseAll = async (): Promise<void> => {
		await Promise.all(hosts.map((h) => h.pause()));
	};
	/** Every partition has a `partition-ready` line since `since` (mono). */
	const allServedSince = (since: number): boolean => {
		const served = new Set<number>();
		for (const s of seen)
			if (
				s.line.event === "partition-ready" &&
				s.mono >= since &&
				typeof s.line.partition === "number"
			)
				served.add(s.line.partition);
		return served.size >= options.partitions;
	};

	async function switchPlacement(details: Record<string, unknown>): Promise<void> {
		const from = cluster.current.placement;
		const to = from === "static" ? "leases" : "static";
		details.from = from;
		details.to = to;
		await pauseAll();
		step("placement-switch", "stopped", { hosts: hosts.length });
		cluster.current = { ...cluster.current, placement: to, numVVMFrom: undefined };
		seen = [];
		const started = monoMs();
		for (const h of hosts) h.resume();
		step("placement-switch", "started", { placement: to });
		await waitFor(`every partition served under --placement ${to}`, () => allServedSince(started));
		details.servedAfterMs = Math.round(monoMs() - started);
	}

	async function changeNumVVM(details: Record<string, unknown>): Promise<void> {
		const from = cluster.current.numVVM;
		// 1..hosts-1: a spare host keeps every slot led while the host's own killer ends leaders
		// (with as many slots as hosts, one slot stayed unled for 80 s at load 15 on 2 cores).
		const most = Math.max(1, hosts.length - 1);
		const range = (n: number) =>
			Array.from({ length: n }, (_, i) => i + 1).filter((m) => m !== from);
		const to = rng.pick(range(most)) ?? rng.pick(range(hosts.length)) ?? from;
		details.from = from;
		details.to = to;
		await pauseAll();
		step("num-vvm", "stopped", { hosts: hosts.length });
		seen = [];
		const started = monoMs();
		// The one host that changes the stored value; no fault may end it before it did (a restart
		// would run --num-vvm-from again, harmless, but refused once the value changed).
		cluster.current = { ...cluster.current, numVVM: to, numVVMFrom: from };
		const first = hosts[0] as ChaosHost;
		first.busy = true;
		try {
			first.resume();
			step("num-vvm", "first-started", { host: first.name, numVVM: to, numVVMFrom: from });
			await waitFor(`${first.name} to change the stored num-vvm from ${from} to ${to}`, () =>
				seen.some(
					(s) =>
						s.line.event === "num-vvm-changed" ||
						// Killed after its compare-and-swap, before its line: its restart says so.
						new RegExp(`stored num-vvm is ${to}, not ${from}`).test(String(s.line.msg ?? "")),
				),
			);
		} finally {
			cluster.current = { ...cluster.current, numVVMFrom: undefined };
			first.busy = false;
		}
		details.changedAfterMs = Math.round(monoMs() - started);
		step("num-vvm", "changed", { from, to });
		for (const h of hosts) h.resume();
		step("num-vvm", "all-started", { numVVM: to });
		await waitFor(`every partition served with --num-vvm ${to}`, () => allServedSince(started));
		details.servedAfterMs = Math.round(monoMs() - started);
	}

	/** Runs `vvm-host repair-lease-root` (through host `index`'s storage path); its report line. */
	function runRepair(
		index: number,
	): Promise<{ code: number | null; stdout: string; stderr: string }> {
		const base = hostCommand(
			options,
			context.build,
			context.backend.hostArgs(index),
			{},
			cluster.current,
		);
		const args = [
			...hostCliArgs(context.build),
			"repair-lease-root",
			...context.backend.hostArgs(index),
			...["--partitions", String(options.partitions), "--lease-namespace", NAMESPACE],
		];
		return new Promise((resolve) => {
			const child = spawn(base.command, args, {
				cwd: base.cwd,
				env: base.env,
				stdio: ["ignore", "pipe", "pipe"],
			});
			let stdout = "";
			let stderr = "";
			child.stdout?.on("data", (d: Buffer) => {
				stdout += d.toString();
			});
			child.stderr?.on("data", (d: Buffer) => {
				stderr += d.toString();
			});
			const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
			child.once("close", (code) => {
				clearTimeout(timer);
				resolve({ code, stdout, stderr });
			});
		});
	}

	async function loseRoot(details: Record<string, unknown>): Promise<void> {
		const direct = await context.backend.checkerStorage();
		try {
			// Delete the root as it is now (compare-and-delete: a re-sharding driver may be moving it).
			let deleted = false;
			for (let i = 0; i < 10 && !deleted; i++) {
				const root = await direct.storage.get(BATCH_KEY, ROOT_CCOLS);
				if (root === undefined) throw new Error("the lease batch has no root record to delete");
				deleted = await direct.storage.compareAndDelete(BATCH_KEY, ROOT_CCOLS, root);
			}
			if (!deleted) throw new Error("the root record changed under every delete");
			// Half the time a shard record goes too: the repair cannot rebuild the table then
			// (`unknown`: every partition leased to nobody known for a lease interval plus the skew).
			details.shardDeleted = false;
			if (rng.chance(0.5)) {
				const shards: { cCols: Uint8Array; value: Uint8Array }[] = [];
				for await (const r of direct.storage.read(BATCH_KEY))
					if (!(r.cCols.length === 1 && r.cCols[0] === 0)) shards.push(r);
				const shard = rng.pick(shards);
				if (shard !== undefined)
					details.shardDeleted = await direct.storage.compareAndDelete(
						BATCH_KEY,
						shard.cCols,
						shard.value,
					);
			}
		} finally {
			await direct.close();
		}
		seen = [];
		const deletedAt = monoMs();
		step("root-loss", "root-deleted", { shardDeleted: details.shardDeleted });
		// Every running host reports it (holders at their poll, the active driver at its tick).
		const reported = (h: ChaosHost): boolean =>
			seen.some(
				(s) =>
					s.host === h.name &&
					s.line.event === "leases.batch-fault" &&
					s.line.code === "LEASES_BATCH_ROOT_MISSING" &&
					s.line.pid === h.current?.pid,
			);
		await waitFor("every running host to report LEASES_BATCH_ROOT_MISSING", () =>
			running().every(reported),
		);
		const reportedAt = monoMs();
		details.reportedAfterMs = Math.round(reportedAt - deletedAt);
		details.hostsReporting = running().length;
		step("root-loss", "reported", { hosts: running().map((h) => h.name) });
		// No grant while it is missing: wait out every lease (an interval plus the skew bound).
		await sleep(options.leaseIntervalMs + options.leaseMaxClockSkewMs + 500);
		const grants = seen.filter((s) => s.line.event === "leases.granted" && s.mono >= reportedAt);
		details.grantsWhileMissing = grants.length;
		if (grants.length > 0)
			throw new Error(
				`${grants.length} lease(s) granted while the root was missing (after every host reported it)`,
			);
		let result: string | undefined;
		let lastFailure = "";
		for (let attempt = 0; attempt < 3 && result === undefined; attempt++) {
			const r = await runRepair((attempt * 3) % hosts.length);
			const m = /: (intact|not-created|rebuilt|unknown) \(/.exec(r.stdout);
			if (r.code === 0 && m !== null) result = m[1];
			else lastFailure = `exit ${r.code}: ${(r.stderr || r.stdout).trim().slice(0, 300)}`;
		}
		if (result === undefined)
			throw new Error(`vvm-host repair-lease-root failed 3 times (${lastFailure})`);
		const repairedAt = monoMs();
		details.repair = result;
		details.repairedAfterMs = Math.round(repairedAt - deletedAt);
		step("root-loss", "repaired", { result });
		await waitFor("every partition served again after the repair", () =>
			allServedSince(repairedAt),
		);
		details.servedAfterRepairMs = Math.round(monoMs() - repairedAt);
	}

	async function act(action: OperatorAction): Promise<void> {
		const needs = action === "num-vvm" ? "static" : action === "root-loss" ? "leases" : undefined;
		if (needs !== undefined && cluster.current.placement !== needs) await act("placement-switch");
		const startMono = monoMs();
		const details: Record<string, unknown> = {};
		acting = true;
		seen = [];
		events.emit("operator", { action });
		say(`[chaos] operator: ${action}`);
		let problem: string | undefined;
		try {
			if (action === "placement-switch") await switchPlacement(details);
			else if (action === "num-vvm") await changeNumVVM(details);
			else await loseRoot(details);
		} catch (error) {
			problem = error instanceof Error ? error.message : String(error);
			// Whatever happened, the cluster runs again.
			cluster.current = { ...cluster.current, numVVMFrom: undefined };
			for (const h of hosts) h.resume();
		}
		acting = false;
		seen = [];
		const record: OperatorRecord = {
			action,
			startMono,
			endMono: monoMs(),
			ok: problem === undefined,
			...(problem === undefined ? {} : { problem }),
			details,
		};
		records.push(record);
		events.emit("operator-end", { ...record });
		say(
			`[chaos] operator: ${action} ${problem === undefined ? "done" : `FAILED: ${problem}`} ${JSON.stringify(details)}`,
		);
	}

	const loop = (async () => {
		const order = [...options.operator];
		// A seeded order, then the same cycle.
		for (let i = order.length - 1; i > 0; i--) {
			const j = rng.int(0, i);
			[order[i], order[j]] = [order[j] as OperatorAction, order[i] as OperatorAction];
		}
		for (let n = 0; !stopCtl.signal.aborted; n++) {
			await sleep(options.operatorIntervalMs, stopCtl.signal).catch(() => {});
			if (stopCtl.signal.aborted) break;
			await act(order[n % order.length] as OperatorAction);
		}
	})();

	return {
		onLine(host, line) {
			if (acting && line.event !== undefined && watched.has(line.event))
				seen.push({
					host: host.name,
					line,
					mono: typeof line.mono === "number" ? line.mono : monoMs(),
				});
		},
		get done() {
			return records.length;
		},
		async stop() {
			stopCtl.abort();
			await loop;
			return { ok: records.every((r) => r.ok), actions: records };
		},
	};
}
