/**
 * Stable error codes of `@vvm/seqstorage`. Codes are API; messages may change. Errors of the
 * underlying TTL storage propagate unchanged as `TTLStorageError`s.
 *
 * - `SEQSTORAGE_CORRUPTED_VALUE`: a stored number or offset is not 8 bytes.
 * - `SEQSTORAGE_PLOG_ORDER`: the PLog reader returned an event out of offset order.
 */
export type SeqStorageErrorCode = "SEQSTORAGE_CORRUPTED_VALUE" | "SEQSTORAGE_PLOG_ORDER";

const MARKER = Symbol.for("vvm.error.SeqStorageError");

/**
 * The error class of `@vvm/seqstorage`.
 *
 * @example
 * ```ts
 * try { await seqStorage.readNextPLogOffset(); }
 * catch (e) { if (SeqStorageError.is(e)) console.error(e.code); }
 * ```
 */
export class SeqStorageError extends Error {
	override readonly name: string = "SeqStorageError";
	readonly code: SeqStorageErrorCode;

	constructor(code: SeqStorageErrorCode, message: string) {
		super(`[@vvm/seqstorage] ${message}`);
		this.code = code;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `SeqStorageError`, from any copy of this package. */
	static is(error: unknown): error is SeqStorageError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}
