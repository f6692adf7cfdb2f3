/**
 * Why a leadership ended; the `code` of the {@link ElectionsError} found in `signal.reason`.
 *
 * - `ELECTIONS_RELEASED`: `releaseLeadership(key)` was called.
 * - `ELECTIONS_LOST`: a renewal found the record changed or gone (compare-and-swap returned `false`).
 * - `ELECTIONS_STORAGE_ERROR`: every renewal attempt of one tick failed with a storage error
 *   (`cause` = the last error).
 * - `ELECTIONS_CLEANUP`: `cleanup()` was called.
 */
export type ElectionsErrorCode =
	| "ELECTIONS_RELEASED"
	| "ELECTIONS_LOST"
	| "ELECTIONS_STORAGE_ERROR"
	| "ELECTIONS_CLEANUP";

/** All codes, for iteration and validation. */
export const ELECTIONS_ERROR_CODES: readonly ElectionsErrorCode[] = Object.freeze([
	"ELECTIONS_RELEASED",
	"ELECTIONS_LOST",
	"ELECTIONS_STORAGE_ERROR",
	"ELECTIONS_CLEANUP",
]);

const MARKER = Symbol.for("vvm.error.ElectionsError");

/**
 * The reason of every aborted leadership signal. Check it with {@link ElectionsError.is}, which
 * survives duplicate installs of this package.
 *
 * @example
 * ```ts
 * const signal = await elections.acquireLeadership(1, "10.0.0.1", 20);
 * signal?.addEventListener("abort", () => {
 *   if (ElectionsError.is(signal.reason)) console.log(signal.reason.code, signal.reason.cause);
 * });
 * ```
 */
export class ElectionsError extends Error {
	override readonly name: string = "ElectionsError";
	readonly code: ElectionsErrorCode;

	constructor(code: ElectionsErrorCode, message: string, options: { cause?: unknown } = {}) {
		super(
			`[@vvm/ielections] ${message}`,
			options.cause === undefined ? undefined : { cause: options.cause },
		);
		this.code = code;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `ElectionsError`, from any copy of this package. */
	static is(error: unknown): error is ElectionsError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}
