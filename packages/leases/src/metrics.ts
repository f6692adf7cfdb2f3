import { LeasesError } from "./errors.ts";

/**
 * Counters and gauges of one node, for a `/metrics` endpoint. Placement-driver counters count
 * only what this node stored while it was the active actor (what reached storage, once).
 *
 * @example
 * ```ts
 * const m = node.metrics();
 * gauge("vvm_leases_held").set(m.leasesHeld);
 * gauge("vvm_leases_placement_driver_active").set(m.placementDriverActive ? 1 : 0);
 * ```
 */
export interface LeaseMetrics {
	/** Groups this node serves now. */
	readonly leasesHeld: number;
	/** Leases this node granted (new holder or new term). */
	readonly granted: number;
	/** Leases whose expiration this node moved forward. */
	readonly prolonged: number;
	/** Leases that expired without being prolonged (seen by this node as active actor). */
	readonly expired: number;
	/** Grants this node marked accepted after the holder acknowledged them. */
	readonly accepted: number;
	/** Leases this node made not prolongable to rebalance. */
	readonly shed: number;
	/** Writes of the batch that lost a compare-and-swap (another actor wrote first). */
	readonly conflicts: number;
	readonly reshards: number;
	readonly ticks: number;
	readonly writes: number;
	readonly writtenBytes: number;
	/** Duration of the last tick (monotonic ms), its CPU time, and the longest tick. */
	readonly lastTickMs: number | undefined;
	readonly lastTickCpuMs: number | undefined;
	readonly maxTickMs: number | undefined;
	/** This node is the active placement driver. */
	readonly placementDriverActive: boolean;
	/** The active placement driver (`address/incarnation`) as last seen, if any. */
	readonly activeActor: string | undefined;
	/** Failed storage calls of the background loops (heartbeat, polls, ticks, campaigns). */
	readonly storageErrors: number;
	/**
	 * Runs of the background loops (heartbeat, polls, ticks) that took longer than their interval
	 * (`slow-loop` events): the storage is too slow for the lease interval.
	 */
	readonly slowRuns: number;
	/**
	 * Reads of the lease batch that found it unusable (`batch-fault` events): its root missing
	 * (`LEASES_BATCH_ROOT_MISSING`) or a record that cannot be decoded (`LEASES_CORRUPT_RECORD`).
	 */
	readonly batchFaults: number;
	/**
	 * The batch's state as of this node's last read (a poll, or a tick of its placement driver):
	 * `undefined` when it was usable, else the code of the fault. While set, nothing is granted
	 * from the batch and this host stops serving at its deadlines: an operator has to act (README,
	 * "Operator recovery").
	 */
	readonly batchFault: "LEASES_BATCH_ROOT_MISSING" | "LEASES_CORRUPT_RECORD" | undefined;
}

/** Mutable counters behind {@link LeaseMetrics}. @internal */
export interface Counters {
	granted: number;
	prolonged: number;
	expired: number;
	accepted: number;
	shed: number;
	conflicts: number;
	reshards: number;
	ticks: number;
	writes: number;
	writtenBytes: number;
	lastTickMs: number | undefined;
	lastTickCpuMs: number | undefined;
	maxTickMs: number | undefined;
	storageErrors: number;
	slowRuns: number;
	batchFaults: number;
	batchFault: LeaseMetrics["batchFault"];
}

/** @internal */
export function newCounters(): Counters {
	return {
		granted: 0,
		prolonged: 0,
		expired: 0,
		accepted: 0,
		shed: 0,
		conflicts: 0,
		reshards: 0,
		ticks: 0,
		writes: 0,
		writtenBytes: 0,
		lastTickMs: undefined,
		lastTickCpuMs: undefined,
		maxTickMs: undefined,
		storageErrors: 0,
		slowRuns: 0,
		batchFaults: 0,
		batchFault: undefined,
	};
}

/**
 * Records what a read of the batch found: `error` undefined for a usable batch. Returns the
 * fault's code when `error` is a batch fault (root missing, undecodable record), else `undefined`
 * (a storage error, counted by the caller).
 * @internal
 */
export function noteBatchRead(counters: Counters, error?: unknown): LeaseMetrics["batchFault"] {
	if (error === undefined) {
		counters.batchFault = undefined;
		return undefined;
	}
	const code = LeasesError.is(error) ? error.code : undefined;
	if (code !== "LEASES_BATCH_ROOT_MISSING" && code !== "LEASES_CORRUPT_RECORD") return undefined;
	counters.batchFaults++;
	counters.batchFault = code;
	return code;
}
