import type { Lease } from "./model.ts";

/**
 * Why this host stopped serving a group.
 *
 * @example
 * ```ts
 * onEnded: (end) => { if (end.reason === "revoked") logger.warn("clock skew beyond the bound?"); }
 * ```
 */
export type LeaseEndReason =
	/** Its local deadline (`expirationTime - maxClockSkewMs`, on this host's clock) passed. */
	| "expired"
	/** The batch shows another grant of the group before the local deadline (should not happen within the skew bound). */
	| "revoked"
	/** `onGranted` threw or rejected: the host could not take the group up. */
	| "declined"
	/** The host gave the group up (`grant.release()`): it could no longer serve it under this grant. */
	| "released"
	/** `close()`. */
	| "closed"
	/** Another incarnation took this node's address. */
	| "replaced";

/**
 * What one placement-driver tick did (only what reached storage is counted).
 *
 * @example
 * ```ts
 * onEvent: (e) => { if (e.type === "tick") histogram.observe(e.cpuMs); }
 * ```
 */
export interface TickSummary {
	/** `clock.monotonic()` duration of the tick (read, compute, write). */
	readonly durationMs: number;
	/** CPU time of this process during the tick (`process.cpuUsage`, user + system). */
	readonly cpuMs: number;
	/** `unchanged`, `written`, `resharded`, or `conflict`/`failed` (the batch is read again next tick). */
	readonly result: "unchanged" | "written" | "resharded" | "conflict" | "failed";
	readonly writes: number;
	readonly bytes: number;
	readonly granted: number;
	readonly prolonged: number;
	readonly accepted: number;
	readonly expired: number;
	readonly shed: number;
}

/**
 * A background loop of a lease node: the heartbeat write, the poll of the lease batch, the
 * placement driver's tick (its read of the members, campaign and batch write).
 *
 * @example
 * ```ts
 * const label: Record<SlowLoop, string> = { heartbeat: "heartbeat", poll: "poll", tick: "tick" };
 * ```
 */
export type SlowLoop = "heartbeat" | "poll" | "tick";

/**
 * Everything that happens, for logs and metrics. `at` is wall time (`clock.now()`, for logs).
 *
 * - `granted`: this node, as placement driver, stored a new lease.
 * - `tick`: one placement-driver tick (see {@link TickSummary}).
 * - `placement-driver`: this node became (`active: true`) or stopped being the active actor.
 * - `lease-started` / `lease-ended`: this node started / stopped serving a group.
 * - `resharded`: the batch moved to a new layout (`shards` records in epoch `epoch`).
 * - `storage-error`: a storage call of a background loop failed; the loop carries on.
 * - `batch-fault`: a read of the lease batch found it unusable (`error.code`
 *   `LEASES_BATCH_ROOT_MISSING` or `LEASES_CORRUPT_RECORD`); `operation` is `tick` (this node's
 *   placement driver, which then grants and prolongs nothing) or `read` (a poll). Emitted at every
 *   such read until the batch is repaired; an operator has to act (README, "Operator recovery").
 * - `replaced`: another incarnation took this node's address; the node stopped.
 * - `slow-loop`: a run of a background loop took longer than the loop's interval, so the
 *   timings the lease interval was chosen for do not hold: storage this slow makes leases lapse
 *   and partitions go dark (README, "Slow storage"). At most one per loop per lease interval:
 *   `durationMs` is the longest such run and `runs` their count since the last one.
 *
 * @example
 * ```ts
 * createLeaseNode({ ..., onEvent: (e) => logger.info({ ...e }, `leases.${e.type}`) });
 * ```
 */
export type LeaseEvent =
	| { readonly type: "granted"; readonly at: number; readonly lease: Lease }
	| ({ readonly type: "tick"; readonly at: number } & TickSummary)
	| { readonly type: "placement-driver"; readonly at: number; readonly active: boolean }
	| {
			readonly type: "lease-started";
			readonly at: number;
			readonly lease: Lease;
			/** Local deadline on `clock.monotonic()`. */
			readonly deadline: number;
	  }
	| {
			readonly type: "lease-ended";
			readonly at: number;
			readonly lease: Lease;
			readonly reason: LeaseEndReason;
	  }
	| {
			readonly type: "resharded";
			readonly at: number;
			readonly epoch: number;
			readonly shards: number;
	  }
	| {
			readonly type: "storage-error";
			readonly at: number;
			readonly operation: "heartbeat" | "read" | "tick" | "campaign" | "cleanup" | "leave";
			readonly error: unknown;
	  }
	| {
			readonly type: "batch-fault";
			readonly at: number;
			readonly operation: "tick" | "read";
			readonly error: unknown;
	  }
	| { readonly type: "replaced"; readonly at: number; readonly by: string }
	| {
			readonly type: "slow-loop";
			readonly at: number;
			readonly loop: SlowLoop;
			/** The longest run longer than `intervalMs` since this loop's last such event (monotonic ms). */
			readonly durationMs: number;
			/** Runs longer than `intervalMs` since this loop's last such event, this one included. */
			readonly runs: number;
			/** The loop's interval (`heartbeatIntervalMs`, `pollIntervalMs` or `tickIntervalMs`). */
			readonly intervalMs: number;
			readonly leaseIntervalMs: number;
	  };
