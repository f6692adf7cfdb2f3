// Failover inside one process: hosts on one storage with a short lease interval; one dies (its
// process stops and its storage link fails), and we time until every group it served is served
// by another host again.
import { systemClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { TestHost } from "../src/testing/index.ts";
import { LeaseCluster } from "../src/testing/index.ts";

export interface FailoverRow {
	readonly what: string;
	readonly runs: number;
	readonly msMin: number;
	readonly msMedian: number;
	readonly msMax: number;
	readonly boundMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function waitFor(predicate: () => boolean, maxMs: number): Promise<number> {
	const start = performance.now();
	while (!predicate()) {
		if (performance.now() - start > maxMs) throw new Error(`not within ${maxMs} ms`);
		await sleep(2);
	}
	return performance.now() - start;
}

/**
 * `runs` failovers of a holder (not the placement driver) and, if `driver`, of the host running
 * the active placement driver too. Each run starts a fresh cluster of `hosts` hosts.
 */
export async function benchFailover(
	storage: () => TTLStorage,
	options: {
		leaseIntervalMs: number;
		tickMs: number;
		hosts: number;
		groups: number;
		runs: number;
		namespace: string;
	},
): Promise<FailoverRow[]> {
	const { leaseIntervalMs: I, tickMs } = options;
	const rows: FailoverRow[] = [];
	for (const killDriver of [false, true]) {
		const times: number[] = [];
		for (let run = 0; run < options.runs; run++) {
			const s = storage();
			const cluster = new LeaseCluster({
				storage: s,
				clock: systemClock,
				namespace: `${options.namespace}-${killDriver ? "pd" : "holder"}-${run}`,
				groups: options.groups,
				leaseIntervalMs: I,
				maxClockSkewMs: 100,
				tickIntervalMs: tickMs,
				heartbeatTtlSeconds: Math.max(1, Math.ceil(I / 1000)),
				leadershipSeconds: 1,
			});
			for (let i = 0; i < options.hosts; i++) await cluster.add(`h${i}`);
			await waitFor(
				() =>
					cluster.allServedOnce() &&
					cluster.hosts.every((h) => h.node.table().leases.every((l) => l.accepted)),
				20 * I,
			);
			await sleep(I); // settled, prolonged a few times
			const pd = cluster.activeDrivers()[0];
			const victim = killDriver ? pd : cluster.hosts.find((h) => h !== pd);
			const groups = (victim as TestHost).node.servedGroups();
			await cluster.crash(victim as TestHost);
			times.push(
				await waitFor(() => groups.every((g) => cluster.served().get(g)?.length === 1), 20 * I),
			);
			if (cluster.violations.length > 0 || cluster.log.overlaps().length > 0)
				throw new Error("safety broken during the failover benchmark");
			await cluster.close();
			await s.close();
		}
		const sorted = [...times].sort((a, b) => a - b);
		rows.push({
			what: killDriver ? "host running the active placement driver" : "holder (not the driver)",
			runs: times.length,
			msMin: Math.round(sorted[0] ?? 0),
			msMedian: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
			msMax: Math.round(sorted.at(-1) ?? 0),
			boundMs: killDriver ? I + tickMs + 1000 + tickMs : I + tickMs,
		});
	}
	return rows;
}
