/**
 * Stable error codes of `@vvm/cp`. Codes are API; messages may change. The README maps each to the
 * HTTP status the host answers with.
 *
 * - `CP_BAD_REQUEST`: the request is malformed; `field` names the offending field. Nothing was
 *   written and no sequence number was taken.
 * - `CP_NOT_FOUND`: the table, command or record does not exist (`field` says which).
 * - `CP_NOT_ALLOWED`: the operation is not allowed on the table (e.g. creating an ODoc through the
 *   docs API, updating an ODoc).
 * - `CP_WRONG_PARTITION`: the workspace belongs to another partition than the one asked.
 * - `CP_BUSY`: the partition cannot take a command now (actualizing, flush backlog, queue full);
 *   `retryAfterMs` says when to retry. Nothing was written, no number taken.
 * - `CP_CONFLICT`: a sequences violation: an insert-if-not-exists found another value at `key`.
 *   That value was not overwritten; the partition re-actualizes.
 * - `CP_STORAGE`: the storage failed; `committed` says whether the event is durable.
 * - `CP_CLOSED`: the partition was undeployed, its lease ended, or a newer holder took it over.
 * - `CP_IDEMPOTENCY_KEY_REUSED`: the idempotency key was used before for a different request.
 * - `CP_IDEMPOTENCY_KEY_IN_FLIGHT`: a command with the same idempotency key is still running.
 * - `CP_INTERNAL`: an application command failed or an invariant broke.
 *
 * Every error says in `committed` whether the command's event is durable (see {@link CpCommitted}).
 */
export type CpErrorCode =
	| "CP_BAD_REQUEST"
	| "CP_NOT_FOUND"
	| "CP_NOT_ALLOWED"
	| "CP_WRONG_PARTITION"
	| "CP_BUSY"
	| "CP_CONFLICT"
	| "CP_STORAGE"
	| "CP_CLOSED"
	| "CP_IDEMPOTENCY_KEY_REUSED"
	| "CP_IDEMPOTENCY_KEY_IN_FLIGHT"
	| "CP_INTERNAL";

/**
 * Whether the event of a failed command is in the PLog:
 * - `"no"`: it is not, and never will be (safe to retry);
 * - `"yes"`: it is durable; its records and WLog entry are (re-)applied when the partition
 *   recovers, before the next command, on this host or on the next holder;
 * - `"unknown"`: a write's outcome is unknown; recovery applies the event if it landed. Retry
 *   with the same idempotency key (it answers the first execution's result if there was one),
 *   or read the WLog before sending the command again.
 */
export type CpCommitted = "no" | "yes" | "unknown";

/**
 * A storage key named by an error or a log entry: what it is and its bytes in hex.
 *
 * @example
 * ```ts
 * const k: CpKeyInfo = { kind: "plog", description: "PLog partition 0 offset 7", pKey: "00…", cCols: "00…" };
 * ```
 */
export interface CpKeyInfo {
	readonly kind: "plog" | "wlog" | "record";
	/** Human-readable, e.g. `record wsid 1001 id 322685000131073`. */
	readonly description: string;
	readonly pKey: string;
	readonly cCols: string;
}

/** Options of a {@link CpError}. */
export interface CpErrorOptions {
	readonly cause?: unknown;
	readonly field?: string;
	readonly retryAfterMs?: number;
	readonly key?: CpKeyInfo;
	readonly committed?: CpCommitted;
}

const MARKER = Symbol.for("vvm.error.CpError");

/**
 * The one error class of `@vvm/cp`.
 *
 * @example
 * ```ts
 * try { await partition.createRecord(req); }
 * catch (e) { if (CpError.is(e) && e.code === "CP_BUSY") retryAfter(e.retryAfterMs); }
 * ```
 */
export class CpError extends Error {
	override readonly name: string = "CpError";
	readonly code: CpErrorCode;
	/** The request field at fault (`CP_BAD_REQUEST`, `CP_NOT_FOUND`), e.g. `cuds[1].fields.name`. */
	readonly field: string | undefined;
	/** When to retry (`CP_BUSY`), in ms. */
	readonly retryAfterMs: number | undefined;
	/** The conflicting key (`CP_CONFLICT`). */
	readonly key: CpKeyInfo | undefined;
	/** Whether the command's event is durable; `"no"` for every refusal before a write. */
	readonly committed: CpCommitted;

	constructor(code: CpErrorCode, message: string, options: CpErrorOptions = {}) {
		super(
			`[@vvm/cp] ${message}`,
			options.cause === undefined ? undefined : { cause: options.cause },
		);
		this.code = code;
		this.field = options.field;
		this.retryAfterMs = options.retryAfterMs;
		this.key = options.key;
		this.committed = options.committed ?? "no";
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `CpError`, from any copy of this package. */
	static is(error: unknown): error is CpError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}

/** @internal A bad request naming `field`. */
export function badRequest(field: string, message: string): CpError {
	return new CpError("CP_BAD_REQUEST", `${field}: ${message}`, { field });
}
