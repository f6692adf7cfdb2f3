/**
 * Stable error codes of `@vvm/leases`. Codes are API; messages may change.
 *
 * - `LEASES_CLOSED`: the node was closed; a pending wait or a call after `close()` ends with it.
 * - `LEASES_LEASE_ENDED`: the reason of a lease's signal once this host stops serving the group
 *   (`reason` says why: expired, revoked, declined, closed, replaced).
 * - `LEASES_REPLACED`: another incarnation took over this node's address in the member table (a
 *   restarted process with the same address); this node stopped serving everything at once.
 * - `LEASES_CORRUPT_RECORD`: a stored lease, root or heartbeat record cannot be decoded (another
 *   format, or bytes not written by this package).
 * - `LEASES_STORAGE_ERROR`: a storage call failed where the caller asked for a result (`start`,
 *   `refresh`); `cause` is the `TTLStorageError`.
 * - `LEASES_BATCH_ROOT_MISSING`: the lease batch has no root record although the cluster was
 *   created (shard records exist, or the creation marker does): a storage fault or an operator's
 *   mistake. Nothing is granted (and, once the placement driver has read it, nothing prolonged)
 *   until an operator repairs it (`repairLeaseRoot`).
 *
 * @example
 * ```ts
 * const code: LeasesErrorCode = "LEASES_REPLACED";
 * ```
 */
export type LeasesErrorCode =
	| "LEASES_CLOSED"
	| "LEASES_LEASE_ENDED"
	| "LEASES_REPLACED"
	| "LEASES_CORRUPT_RECORD"
	| "LEASES_STORAGE_ERROR"
	| "LEASES_BATCH_ROOT_MISSING";

/**
 * All codes, for iteration and validation.
 *
 * @example
 * ```ts
 * LEASES_ERROR_CODES.includes(error.code); // true for any LeasesError
 * ```
 */
export const LEASES_ERROR_CODES: readonly LeasesErrorCode[] = Object.freeze([
	"LEASES_CLOSED",
	"LEASES_LEASE_ENDED",
	"LEASES_REPLACED",
	"LEASES_CORRUPT_RECORD",
	"LEASES_STORAGE_ERROR",
	"LEASES_BATCH_ROOT_MISSING",
]);

const MARKER = Symbol.for("vvm.error.LeasesError");

/**
 * The one error class of `@vvm/leases`. Check it with {@link LeasesError.is}, which survives
 * duplicate installs of this package.
 *
 * @example
 * ```ts
 * node.signal.addEventListener("abort", () => {
 *   if (LeasesError.is(node.signal.reason) && node.signal.reason.code === "LEASES_REPLACED") exit(1);
 * });
 * ```
 */
export class LeasesError extends Error {
	override readonly name: string = "LeasesError";
	readonly code: LeasesErrorCode;

	constructor(code: LeasesErrorCode, message: string, options: { cause?: unknown } = {}) {
		super(
			`[@vvm/leases] ${message}`,
			options.cause === undefined ? undefined : { cause: options.cause },
		);
		this.code = code;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `LeasesError`, from any copy of this package. */
	static is(error: unknown): error is LeasesError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}

/** A `LEASES_CORRUPT_RECORD` error naming what could not be decoded. */
export function corrupt(what: string): LeasesError {
	return new LeasesError("LEASES_CORRUPT_RECORD", `cannot decode ${what}`);
}
