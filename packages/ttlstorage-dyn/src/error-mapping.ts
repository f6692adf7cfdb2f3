import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";

const DRIVER_NAME = "dyn";

const THROTTLING = new Set([
	"ProvisionedThroughputExceededException",
	"ThrottlingException",
	"RequestLimitExceeded",
	"TooManyRequestsException",
]);

/** Socket errors raised before a request could reach the server: nothing was sent. */
const NOT_SENT = new Set([
	"ECONNREFUSED",
	"ENOTFOUND",
	"EAI_AGAIN",
	"EHOSTUNREACH",
	"ENETUNREACH",
	"EADDRNOTAVAIL",
]);

/** Socket errors and error names that may hide a request the server received and applied. */
const MAYBE_SENT_CODES = new Set([
	"ECONNRESET",
	"EPIPE",
	"ETIMEDOUT",
	"ECONNABORTED",
	"ESOCKETTIMEDOUT",
	"ERR_STREAM_PREMATURE_CLOSE",
]);
const MAYBE_SENT_NAMES = new Set([
	"TimeoutError",
	"AbortError",
	"RequestTimeout",
	"RequestTimeoutException",
	"InternalServerError",
	"ServiceUnavailable",
	"ServiceUnavailableException",
]);

interface SdkLikeError {
	readonly name?: unknown;
	readonly code?: unknown;
	readonly message?: unknown;
	readonly $fault?: unknown;
	readonly $metadata?: { readonly httpStatusCode?: unknown; readonly attempts?: unknown };
}

function fields(error: unknown): SdkLikeError {
	return typeof error === "object" && error !== null ? (error as SdkLikeError) : {};
}

/** Whether DynamoDB rejected a conditional write because its condition was false. @internal */
export function isConditionFailed(error: unknown): boolean {
	return fields(error).name === "ConditionalCheckFailedException";
}

/** How many attempts the SDK made (its retry middleware records it on errors); 1 when unknown. @internal */
export function attemptsOf(error: unknown): number {
	const attempts = fields(error).$metadata?.attempts;
	return typeof attempts === "number" && attempts > 0 ? attempts : 1;
}

/**
 * The contract's code for a failed DynamoDB request.
 *
 * - a conditional write the SDK already retried (`$metadata.attempts > 1`) that ends in a
 *   transient error (throttling, 5xx, timeout, network) → `TTLSTORAGE_OUTCOME_UNKNOWN`: the final
 *   error says nothing about the earlier attempts, one of which may have timed out or got a 5xx
 *   after it was applied;
 * - throttling → `TTLSTORAGE_THROTTLED` (nothing was written);
 * - a response the server never answered (timeout, abort, reset socket, 5xx, or no HTTP status at
 *   all) → `TTLSTORAGE_OUTCOME_UNKNOWN` for a conditional write, `TTLSTORAGE_UNAVAILABLE` otherwise;
 * - a connection that could not be opened → `TTLSTORAGE_UNAVAILABLE`;
 * - any other answer from the server (validation, missing table, access denied) →
 *   `TTLSTORAGE_FAILED`.
 *
 * @internal
 */
function errorCode(error: unknown, conditional: boolean): TTLStorageErrorCode {
	if (TTLStorageError.is(error)) return error.code;
	const e = fields(error);
	const name = typeof e.name === "string" ? e.name : "";
	const code = typeof e.code === "string" ? e.code : "";
	// Failed before anything was sent, for a reason a retry will not fix.
	if (name === "CredentialsProviderError") return "TTLSTORAGE_FAILED";
	const throttled = THROTTLING.has(name) || THROTTLING.has(code);
	const notSent = NOT_SENT.has(code);
	const status = e.$metadata?.httpStatusCode;
	const answered = typeof status === "number";
	const maybeApplied =
		!throttled &&
		!notSent &&
		(MAYBE_SENT_CODES.has(code) ||
			MAYBE_SENT_NAMES.has(name) ||
			(answered && status >= 500) ||
			e.$fault === "server" ||
			!answered);
	// Checked first: only the last attempt's error is reported, an earlier one may have applied.
	if (conditional && attemptsOf(error) > 1 && (throttled || notSent || maybeApplied)) {
		return "TTLSTORAGE_OUTCOME_UNKNOWN";
	}
	if (throttled) return "TTLSTORAGE_THROTTLED";
	if (notSent) return "TTLSTORAGE_UNAVAILABLE";
	if (maybeApplied) return conditional ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
	return "TTLSTORAGE_FAILED";
}

/** Wraps a DynamoDB/SDK error in the contract's error. @internal */
export function toStorageError(
	error: unknown,
	operation: string,
	conditional: boolean,
): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const e = fields(error);
	const detail = [e.name, e.code].filter((x) => typeof x === "string" && x !== "Error").join("/");
	const message = typeof e.message === "string" ? e.message : String(error);
	return new TTLStorageError(
		errorCode(error, conditional),
		detail ? `${detail}: ${message}` : message,
		{ cause: error, driver: DRIVER_NAME, operation },
	);
}
