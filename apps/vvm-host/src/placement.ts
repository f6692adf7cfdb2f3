// Which partitions this host serves, and who serves the others. The command processor's routes
// ask it per request; two implementations: "static" (a partition belongs to a VVM slot, served by
// that slot's leader) and "leases" (@vvm/leases: a placement driver grants each partition's lease).

/** Where a partition is served, for a 421 reply (`holder` is a host's advertised address). */
export interface PartitionHolder {
	readonly address: string;
	/** Wall-clock ms (the holder's view) until which it holds the partition, when known. */
	readonly until?: number;
}

/** A partition granted to this host: what its writes are fenced and bounded by. */
interface PartitionGrant {
	/** Aborts when the grant ends (lease ended, leadership lost, close). */
	readonly signal: AbortSignal;
	/** Above every earlier holder's: the partition's fencing epoch (`@vvm/cp` lease `epoch`). */
	readonly fencingToken?: bigint;
	/**
	 * Whether this host may still write for the partition, by its own monotonic clock; `false`
	 * from the grant's local deadline on, for good (`@vvm/cp` lease `valid()`).
	 */
	readonly leaseValid: () => boolean;
}

/** What a placement tells the host when a partition starts or stops being served here. */
export interface PlacementHandlers {
	/**
	 * The partition is now this host's: deploy it (the command processor's partition and its
	 * sequencer) and resolve when it accepts commands. `signal` aborts when the grant ends before
	 * or after that; a rejection declines the grant.
	 */
	onGranted(partition: number, grant: PartitionGrant): Promise<void>;
	/** The partition is no longer this host's (lease ended, leadership lost, close): undeploy it. */
	onEnded(partition: number, reason: string): void;
}

/** The placement of a host: the per-request check and the introspection behind GET /leases. */
export interface PartitionPlacement {
	readonly mode: "static" | "leases";
	/** Starts taking part (heartbeat, leadership...); grants arrive through the handlers. */
	start(signal: AbortSignal): Promise<void>;
	/** Whether this host may serve `partition` now (checked per request, on a monotonic deadline). */
	serving(partition: number): boolean;
	/** Who serves `partition` when this host does not (undefined: nobody known yet: answer 503). */
	holderOf(partition: number): PartitionHolder | undefined;
	/** The partitions this host serves now, ascending. */
	served(): number[];
	/** A JSON-ready view for GET /leases and the status page. */
	describe(): unknown;
	/** Stops serving everything (onEnded for each), releases what it holds; idempotent. */
	close(): Promise<void>;
}
