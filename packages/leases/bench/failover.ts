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
	/** From the kill until the placement driver stored the last new grant of the dead host's groups. */
	readonly granted: { readonly median: number; readonly max: number; readonly bound: number };
	/** From the kill until another host serves every one of them. */
	readonly served: { readonly median: number; readonly max: number; readonly bound: number };
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
		const served: number[] = [];
		const granted: number[] = [];
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
			const killedAt = Date.now();
			await cluster.crash(victim as TestHost);
			served.push(
				await waitFor(() => groups.every((g) => cluster.served().get(g)?.length === 1), 20 * I),
			);
			// The grants, from the placement drivers' own events (wall time of this process).
			const grantedAt = cluster.hosts
				.flatMap((h) => h.events)
				.flatMap((e) =>
					e.type === "granted" && groups.includes(e.lease.group) && e.at >= killedAt ? [e.at] : [],
				);
			granted.push(Math.max(...grantedAt) - killedAt);
			if (cluster.violations.length > 0 || cluster.log.overlaps().length > 0)
				throw new Error("safety broken during the failover benchmark");
			await cluster.close();
			await s.close();
		}
		const stats = (xs: number[]) => {
			const sorted = [...xs].sort((a, b) => a - b);
			return {
				median: Math.round(sorted[Math.floor(sorted.length / 2)] ?? 0),
				max: Math.round(sorted.at(-1) ?? 0),
			};
		};
		// The driver grants at its first tick after the lease expired (a lease interval after the
		// dead host was last seen alive); a holder in another process learns it at its next poll.
		// A dead driver is replaced within its leadership TTL (1 s) and a tick.
		const grantBound = Math.max(I, 1000 + tickMs) + tickMs;
		rows.push({
			what: killDriver ? "host running the active placement driver" : "holder (not the driver)",
			runs: served.length,
			granted: { ...stats(granted), bound: killDriver ? grantBound : I + tickMs },
			served: { ...stats(served), bound: (killDriver ? grantBound : I + tickMs) + tickMs },
		});
	}
	return rows;
}
