// Which partitions this process serves, and who serves the others: the split-brain guard every
// command passes. Two implementations: static (a partition belongs to a VVM slot and is served by
// that slot's leader) and leases (@vvm/leases: a placement driver grants each partition's lease).

/** Where a partition is served, when not here (`address` is the holder's advertised address). */
export interface PartitionHolder {
	readonly address: string;
	/** Wall-clock ms (the holder's view) until which it holds the partition, when known. */
	readonly until?: number;
}

/**
 * Where a partition is served now, as one answer for every route: `served` here (the lease is
 * valid by this process's monotonic clock and the partition is deployed), `held` by another
 * process (answer 421 with its address), or `nobody` known yet (answer 503 + `Retry-After`;
 * also while this process holds the partition but is still deploying it or its lease ran out).
 */
export type PartitionLocation =
	| { readonly kind: "served" }
	| { readonly kind: "held"; readonly holder: PartitionHolder }
	| { readonly kind: "nobody" };

/** A partition granted to this process: what its writes are fenced and bounded by. */
export interface PartitionGrant {
	/** Aborts when the grant ends (lease ended, leadership lost, close). */
	readonly signal: AbortSignal;
	/**
	 * Above every earlier holder's of this partition, whichever placement, slot or numVVM it came
	 * through: the partition's fencing epoch (`@vvm/cp` lease `epoch`).
	 */
	readonly fencingToken?: bigint;
	/**
	 * Whether this process may still write for the partition, by its own monotonic clock; `false`
	 * from the grant's local deadline on, for good (`@vvm/cp` lease `valid()`).
	 */
	readonly leaseValid: () => boolean;
	/**
	 * Gives the grant up: what was deployed for it closed on its own (a newer holder fenced it
	 * out) and cannot serve under it any more. The placement stops serving the partition here at
	 * once (`onEnded` follows) and hands it out again under a new fencing token: the leases
	 * placement ends the lease (it expires and is granted again), the static placement takes a new
	 * epoch after a pause (`epochRetry` delays, doubling with each release in one leadership).
	 * No-op once the grant ended. Optional for placements written elsewhere; both of this package
	 * have it.
	 */
	readonly release?: (reason: unknown) => void;
}

/** What a placement tells its owner when a partition starts or stops being served here. */
export interface PlacementHandlers {
	/**
	 * The partition is now this process's: deploy it and resolve when it accepts commands.
	 * `grant.signal` aborts when the grant ends, before or after that; a rejection declines it.
	 */
	onGranted(partition: number, grant: PartitionGrant): Promise<void>;
	/** The partition is no longer this process's (lease ended, leadership lost, close). */
	onEnded(partition: number, reason: string): void;
}

/** A placement: the per-request answer, the partitions served, and a view for operators. */
export interface PartitionPlacement {
	readonly mode: "static" | "leases";
	/**
	 * Starts taking part (heartbeat, checks, first reads); grants arrive through the handlers.
	 * `signal` is the **start deadline** only (e.g. `AbortSignal.timeout(60_000)`): when it aborts
	 * before `start` resolved, `start` rejects with its reason; once `start` resolved it is ignored.
	 * The placement runs until {@link PartitionPlacement.close}.
	 */
	start(signal: AbortSignal): Promise<void>;
	/** Where `partition` is served now (checked per request, on a monotonic deadline). */
	locate(partition: number): PartitionLocation;
	/** The partitions this process serves now, ascending. */
	served(): number[];
	/** A JSON-ready view for an operator (the host's `GET /leases` and status page). */
	describe(): unknown;
	/** Stops serving everything (`onEnded` for each), releases what it holds; idempotent. */
	close(): Promise<void>;
}

const SERVED: PartitionLocation = Object.freeze({ kind: "served" });
const NOBODY: PartitionLocation = Object.freeze({ kind: "nobody" });

/**
 * The one rule both placements answer by: served here when `serving`, else the holder when one is
 * known, else nobody.
 *
 * @example
 * ```ts
 * locateBy(serving(7), holderOf(7)); // { kind: "held", holder: { address: "10.0.0.2:8080" } }
 * ```
 */
export function locateBy(serving: boolean, holder: PartitionHolder | undefined): PartitionLocation {
	if (serving) return SERVED;
	return holder === undefined ? NOBODY : { kind: "held", holder };
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as `signal` aborts (the work itself goes
 * on; only the wait ends): how a placement's `start` honours its deadline.
 *
 * @example
 * ```ts
 * await abortable(firstRead(), AbortSignal.timeout(60_000));
 * ```
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
	if (signal.aborted) {
		promise.catch(() => {});
		return Promise.reject(signal.reason);
	}
	return new Promise<T>((resolve, reject) => {
		const onAbort = (): void => reject(signal.reason);
		signal.addEventListener("abort", onAbort, { once: true });
		promise.then(
			(value) => {
				signal.removeEventListener("abort", onAbort);
				resolve(value);
			},
			(error: unknown) => {
				signal.removeEventListener("abort", onAbort);
				reject(error);
			},
		);
	});
}
