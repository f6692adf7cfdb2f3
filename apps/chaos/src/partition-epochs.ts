// The partition-epoch check of the commands workload, from the hosts' logs: no two incarnations
// deployed one partition under one epoch. Every host logs `partition-deployed` (partition,
// fencingToken: the partition's epoch, whichever placement gave it) before it serves; both
// placements take that epoch by compare-and-swap of one counter per partition, so two holders of
// one epoch would mean two holders the storage fence cannot tell apart (review5 F2a). Across
// `--num-vvm` changes and placement switches, this is the invariant the operator actions test.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { eachJsonLine, RUN_FILES } from "./run-files.ts";

/** What {@link checkPartitionEpochs} found. */
export interface PartitionEpochReport {
	readonly ok: boolean;
	/** `partition-deployed` lines read. */
	readonly deployments: number;
	/** Distinct (partition, epoch) pairs. */
	readonly epochs: number;
	/**
	 * Deployments whose epoch is not above the previous deployment of the partition by another
	 * incarnation, in log (`mono`) order: not an anomaly by itself (a holder stopped between its
	 * claim and its log line logs late, and its writes are fenced), counted to show the order.
	 */
	readonly outOfOrder: number;
	/** One line per (partition, epoch) deployed by two incarnations or more. */
	readonly anomalies: readonly string[];
}

/** One host log line's fields this check reads. */
export interface DeployLine {
	readonly event?: unknown;
	readonly partition?: unknown;
	readonly fencingToken?: unknown;
	readonly pid?: unknown;
	readonly mono?: unknown;
}

/**
 * Checks `partition-deployed` lines of every host: `lines` gives each host's name and its lines.
 *
 * @example
 * ```ts
 * checkDeployments([["H1", [{ event: "partition-deployed", partition: 0, fencingToken: "5", pid: 1, mono: 10 }]]]);
 * ```
 */
export function checkDeployments(
	lines: Iterable<readonly [string, Iterable<DeployLine>]>,
): PartitionEpochReport {
	const holders = new Map<string, Set<string>>();
	const byPartition = new Map<number, { mono: number; epoch: bigint; who: string }[]>();
	let deployments = 0;
	for (const [host, hostLines] of lines)
		for (const l of hostLines) {
			if (l.event !== "partition-deployed" || typeof l.partition !== "number") continue;
			if (typeof l.fencingToken !== "string" && typeof l.fencingToken !== "number") continue;
			deployments++;
			const who = `${host}/pid ${String(l.pid)}`;
			const key = `${l.partition}@${String(l.fencingToken)}`;
			const set = holders.get(key) ?? new Set<string>();
			set.add(who);
			holders.set(key, set);
			const list = byPartition.get(l.partition) ?? [];
			list.push({
				mono: typeof l.mono === "number" ? l.mono : 0,
				epoch: BigInt(l.fencingToken),
				who,
			});
			byPartition.set(l.partition, list);
		}
	const anomalies: string[] = [];
	for (const [key, set] of holders)
		if (set.size > 1) {
			const [p, e] = key.split("@");
			anomalies.push(
				`partition ${p} deployed under epoch ${e} by ${set.size} incarnations: ${[...set].join(", ")}`,
			);
		}
	let outOfOrder = 0;
	for (const list of byPartition.values()) {
		list.sort((a, b) => a.mono - b.mono);
		for (let i = 1; i < list.length; i++) {
			const prev = list[i - 1];
			const cur = list[i];
			if (
				prev !== undefined &&
				cur !== undefined &&
				cur.who !== prev.who &&
				cur.epoch <= prev.epoch
			)
				outOfOrder++;
		}
	}
	return { ok: anomalies.length === 0, deployments, epochs: holders.size, outOfOrder, anomalies };
}

/**
 * {@link checkDeployments} over the host logs of the run in `dir`.
 *
 * @example
 * ```ts
 * const report = await checkPartitionEpochs(".chaos/2026-11-26T14-00-00-dyn-commands-L2-seed1");
 * ```
 */
export async function checkPartitionEpochs(dir: string): Promise<PartitionEpochReport> {
	const hostsDir = join(dir, RUN_FILES.hostsDir);
	const all: [string, DeployLine[]][] = [];
	for (const file of readdirSync(hostsDir).sort()) {
		if (!file.endsWith(".log") || file.endsWith(".stderr.log")) continue;
		const lines: DeployLine[] = [];
		await eachJsonLine(join(hostsDir, file), (v) => {
			if ((v as DeployLine).event === "partition-deployed") lines.push(v as DeployLine);
		});
		all.push([file.slice(0, -".log".length), lines]);
	}
	return checkDeployments(all);
}
