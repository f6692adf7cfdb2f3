/**
 * Stable error codes of every TTL storage driver. Codes are API; messages may change.
 *
 * - `TTLSTORAGE_UNAVAILABLE`: the storage could not be reached or refused the request; nothing was
 *   written. Safe to retry.
 * - `TTLSTORAGE_OUTCOME_UNKNOWN`: a write timed out; it may or may not have been applied. Re-read
 *   before deciding (never treat it as `false`).
 * - `TTLSTORAGE_THROTTLED`: the storage rejected the request for capacity reasons; nothing was written.
 * - `TTLSTORAGE_CLOSED`: the storage was closed.
 * - `TTLSTORAGE_FENCED`: a fenced write (or `raiseFence`) of an epoch that a newer one of its scope
 *   superseded; nothing was written. The writer was deposed: it must stop writing for that scope.
 * - `TTLSTORAGE_FAILED`: any other storage failure.
 */
export type TTLStorageErrorCode =
	| "TTLSTORAGE_UNAVAILABLE"
	| "TTLSTORAGE_OUTCOME_UNKNOWN"
	| "TTLSTORAGE_THROTTLED"
	| "TTLSTORAGE_CLOSED"
	| "TTLSTORAGE_FENCED"
	| "TTLSTORAGE_FAILED";

/** All codes, for iteration and validation. */
export const TTL_STORAGE_ERROR_CODES: readonly TTLStorageErrorCode[] = Object.freeze([
	"TTLSTORAGE_UNAVAILABLE",
	"TTLSTORAGE_OUTCOME_UNKNOWN",
	"TTLSTORAGE_THROTTLED",
	"TTLSTORAGE_CLOSED",
	"TTLSTORAGE_FENCED",
	"TTLSTORAGE_FAILED",
]);

const MARKER = Symbol.for("vvm.error.TTLStorageError");

/** Options of a {@link TTLStorageError}. */
export interface TTLStorageErrorOptions {
	/** The driver's own error. */
	readonly cause?: unknown;
	/** Driver name, e.g. `"cas"`, used as the message prefix. */
	readonly driver?: string;
	/** The operation that failed, e.g. `"compareAndSwap"`. */
	readonly operation?: string;
}

/**
 * The one error class every driver rejects with. Check it with {@link TTLStorageError.is}, which
 * survives duplicate installs of this package.
 *
 * @example
 * ```ts
 * try { await storage.compareAndSwap(p, c, v, v, 20); }
 * catch (e) { if (TTLStorageError.is(e) && e.code === "TTLSTORAGE_OUTCOME_UNKNOWN") reread(); }
 * ```
 */
export class TTLStorageError extends Error {
	override readonly name: string = "TTLStorageError";
	readonly code: TTLStorageErrorCode;
	readonly driver: string | undefined;
	readonly operation: string | undefined;

	constructor(code: TTLStorageErrorCode, message: string, options: TTLStorageErrorOptions = {}) {
		const prefix = `[@vvm/ttlstorage${options.driver ? `-${options.driver}` : ""}]`;
		const op = options.operation ? `${options.operation}: ` : "";
		super(
			`${prefix} ${op}${message}`,
			options.cause === undefined ? undefined : { cause: options.cause },
		);
		this.code = code;
		this.driver = options.driver;
		this.operation = options.operation;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `TTLStorageError`, from any copy of this package. */
	static is(error: unknown): error is TTLStorageError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}

/** The error every driver rejects with once closed. */
export function closedError(driver: string, operation: string): TTLStorageError {
	return new TTLStorageError("TTLSTORAGE_CLOSED", "the storage is closed", { driver, operation });
}

/**
 * The error of a write (or a `raiseFence`) whose epoch a newer one of its scope superseded.
 *
 * @example
 * ```ts
 * throw fencedError("level", "put", 7n, 9n);
 * ```
 */
export function fencedError(
	driver: string,
	operation: string,
	epoch: bigint,
	current: bigint,
): TTLStorageError {
	return new TTLStorageError(
		"TTLSTORAGE_FENCED",
		`epoch ${epoch} was superseded by epoch ${current} of its scope; nothing was written`,
		{ driver, operation },
	);
}
