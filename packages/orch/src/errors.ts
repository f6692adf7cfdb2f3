/**
 * Stable codes of {@link VVMError}. Codes are API; messages may change.
 *
 * - `VVM_LEADERSHIP_ACQUISITION`: no slot in `1..numVVM` could be acquired within the acquisition
 *   duration.
 * - `VVM_LEADERSHIP_LOST`: the leadership was lost while the VVM ran (the renewal failed, the record
 *   was taken or deleted); `cause` is the elections' reason.
 * - `VVM_SERVICES_LAUNCH`: a service failed to start; `cause` is its error.
 * - `VVM_SHUTDOWN`: stopping a service or releasing the leadership failed during shutdown (reported
 *   only when no earlier problem exists).
 */
export type VVMErrorCode =
	| "VVM_LEADERSHIP_ACQUISITION"
	| "VVM_LEADERSHIP_LOST"
	| "VVM_SERVICES_LAUNCH"
	| "VVM_SHUTDOWN";

const MARKER = Symbol.for("vvm.error.VVMError");

/**
 * The problem a VVM reports through its problem signal and {@link VVM.shutdown}.
 *
 * @example
 * ```ts
 * const error = await vvm.shutdown();
 * if (VVMError.is(error) && error.code === "VVM_LEADERSHIP_LOST") process.exitCode = 1;
 * ```
 */
export class VVMError extends Error {
	override readonly name: string = "VVMError";
	readonly code: VVMErrorCode;

	constructor(code: VVMErrorCode, message: string, options?: { cause?: unknown }) {
		super(
			`[@vvm/orch] ${message}`,
			options?.cause === undefined ? undefined : { cause: options.cause },
		);
		this.code = code;
		Object.defineProperty(this, MARKER, { value: true });
	}

	/** `true` for any `VVMError`, from any copy of this package. */
	static is(error: unknown): error is VVMError {
		return (
			typeof error === "object" &&
			error !== null &&
			(error as Record<symbol, unknown>)[MARKER] === true
		);
	}
}
