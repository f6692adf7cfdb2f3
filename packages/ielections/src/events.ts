import type { ElectionsErrorCode } from "./errors.ts";

/**
 * What happened to a leadership, for metrics and structured logs. `at` is wall time
 * (`clock.now()` ms, for logs); `leaseDeadline` is on `clock.monotonic()` (compare it only with
 * that clock) and `leaseLeftMs` is the time left until it when the event was emitted.
 * Every leadership that was acquired ends with exactly one `released` or `release-failed` event;
 * `lost` comes first when it ended because renewal failed.
 *
 * - `acquired`: the record was inserted; `leaseDeadline` = insert sent + `0.8 d`.
 * - `acquire-failed`: not acquired: `held` (the key exists in storage, or is held here already),
 *   `finalized` (after `cleanup()`), `storage-error` (`error` = the storage error).
 * - `renewed`: a compare-and-swap succeeded; `latencyMs` = its round trip on the clock.
 * - `renewal-failed`: one per compare-and-swap attempt that failed with a storage error.
 * - `lost`: renewal ended the leadership (`ELECTIONS_LOST` or `ELECTIONS_STORAGE_ERROR`).
 * - `released`: the compare-and-delete of the record finished (whether or not it still existed).
 * - `release-failed`: that compare-and-delete failed; the record expires by its TTL.
 *
 * @example
 * ```ts
 * createElections(storage, { onEvent: (e) => logger.info({ ...e, key: String(e.key) }, e.type) });
 * ```
 */
export type LeadershipEvent<K = unknown, V = unknown> =
	| {
			type: "acquired";
			key: K;
			value: V;
			at: number;
			leaseDeadline: number;
			leaseLeftMs: number;
			/** The acquisition's fencing token, when the storage keeps tokens. */
			fencingToken?: number;
	  }
	| {
			type: "acquire-failed";
			key: K;
			value: V;
			at: number;
			reason: "held" | "finalized" | "storage-error";
			error?: unknown;
	  }
	| {
			type: "renewed";
			key: K;
			value: V;
			at: number;
			leaseDeadline: number;
			leaseLeftMs: number;
			latencyMs: number;
	  }
	| { type: "renewal-failed"; key: K; value: V; at: number; attempt: number; error: unknown }
	| { type: "lost"; key: K; value: V; at: number; reason: ElectionsErrorCode; error?: unknown }
	| { type: "released"; key: K; value: V; at: number; reason: ElectionsErrorCode }
	| { type: "release-failed"; key: K; value: V; at: number; error: unknown };
