/**
 * Stable error codes of `@vvm/isequencer`. Codes are API; messages may change.
 *
 * - `SEQUENCER_UNKNOWN_SEQ_ID`: `next` was asked for a sequence not defined for the workspace kind.
 * - `SEQUENCER_UNKNOWN_WS_KIND`: `start` was given a workspace kind not in `seqTypes`.
 * - `SEQUENCER_MISUSE`: a call out of order (`start` twice, `next`/`flush`/`actualize` outside a
 *   transaction, `flush` while a `next` is still reading storage).
 * - `SEQUENCER_CLEANED_UP`: any call after cleanup, and a `next` whose storage read was cut short by it.
 * - `SEQUENCER_STOPPED`: any call after the storage refused a call for good (by default: a write
 *   refused by a newer fence, `TTLSTORAGE_FENCED`, so another holder serves the partition); the
 *   sequencer stopped itself. Its `cause` is the storage's error.
 */
export type SequencerErrorCode =
	| "SEQUENCER_UNKNOWN_SEQ_ID"
	| "SEQUENCER_UNKNOWN_WS_KIND"
	| "SEQUENCER_MISUSE"
	| "SEQUENCER_CLEANED_UP"
	| "SEQUENCER_STOPPED";

/**
 * The code `next` throws for an unknown sequence; named after voedger's `ErrUnknownSeqID`.
 *
 * @example
 * ```ts
 * try { seq.next(99); } catch (e) { if (SequencerError.is(e) && e.code === ErrUnknownSeqID) … }
 * ```
 */
export const ErrUnknownSeqID: "SEQUENCER_UNKNOWN_SEQ_ID" = "SEQUENCER_UNKNOWN_SEQ_ID";

const MARKER = Symbol.for("vvm.error.SequencerError");

/**
 * The one error class of `@vvm/isequencer`. Storage errors never surface here: the sequencer
 * retries them until success or cleanup, except one that can never succeed (`SEQUENCER_STOPPED`).
 *
 * @example
 * ```ts
 * try { seq.flush(); } catch (e) { if (SequencerError.is(e)) console.error(e.code); }
 * ```
 */
export class SequencerError extends Error {
	override readonly name: string = "SequencerError";
	readonly code: SequencerErrorCode;

	constructor(code: SequencerErrorCode, message: string, options?: { cause?: unknown }) {
		super(`[@vvm/isequencer] ${message}`, options);
		this.code = code;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `SequencerError`, from any copy of this package. */
	static is(error: unknown): error is SequencerError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}
