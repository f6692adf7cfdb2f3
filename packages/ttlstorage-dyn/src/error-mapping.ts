import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";

const DRIVER_NAME = "dyn";

const THROTTLING = new Set([
	"ProvisionedThroughputExceededException",
	"ThrottlingException",
	"RequestLimitExceeded",
	"TooManyRequestsException",
]);

/** Resolver errors: they come before a connection, so before a request was sent. */
const NOT_SENT = new Set(["ENOTFOUND", "EAI_AGAIN"]);
/**
 * Socket errors that show nothing was sent only when raised by `connect`: an open (kept-alive)
 * socket can raise any of them after a request was written (Linux ends a connection that timed
 * out with the last ICMP error it had: ECONNREFUSED for a port unreachable, EHOSTUNREACH, ...).
 */
const NOT_SENT_ON_CONNECT = new Set([
	"ECONNREFUSED",
	"EHOSTUNREACH",
	"ENETUNREACH",
	"EADDRNOTAVAIL",
	"ETIMEDOUT",
]);
/** Error names of a 4xx answer that still may hide a request the server went on with. */
const TIMEOUT_NAMES = new Set(["TimeoutError", "RequestTimeout", "RequestTimeoutException"]);

interface SdkLikeError {
	readonly name?: unknown;
	readonly code?: unknown;
	readonly syscall?: unknown;
	readonly message?: unknown;
	readonly $metadata?: { readonly httpStatusCode?: unknown };
}

function fields(error: unknown): SdkLikeError {
	return typeof error === "object" && error !== null ? (error as SdkLikeError) : {};
}

/** Whether DynamoDB rejected a conditional write because its condition was false. @internal */
export function isConditionFailed(error: unknown): boolean {
	return fields(error).name === "ConditionalCheckFailedException";
}

/** A socket error that shows the request never left this process (connection refused, DNS). */
function isNotSent(e: SdkLikeError): boolean {
	const code = typeof e.code === "string" ? e.code : "";
	return NOT_SENT.has(code) || (NOT_SENT_ON_CONNECT.has(code) && e.syscall === "connect");
}

function isThrottling(e: SdkLikeError): boolean {
	return THROTTLING.has(String(e.name)) || THROTTLING.has(String(e.code));
}

/** DynamoDB answered with a 4xx: it refused the request, nothing of it was applied. */
function isRefusedAnswer(e: SdkLikeError): boolean {
	const status = e.$metadata?.httpStatusCode;
	return (
		typeof status === "number" &&
		status >= 400 &&
		status < 500 &&
		!TIMEOUT_NAMES.has(String(e.name))
	);
}

/**
 * Whether the request of `error` provably wrote nothing: it was never sent (connection refused,
 * DNS failure), or DynamoDB answered it with a 4xx (throttling, a failed condition, validation,
 * a missing table, bad credentials). A lost answer (timeout, abort, reset socket), a 5xx, or an
 * error without an HTTP status is not proof. @internal
 */
export function isProvablyUnapplied(error: unknown): boolean {
	const e = fields(error);
	return isNotSent(e) || isRefusedAnswer(e);
}

/**
 * What the write guard (`write-guard.ts`) of one write command saw of its HTTP attempts.
 *
 * @internal
 */
export interface WriteAttempts {
	/**
	 * The error of the attempt that may have been applied (no answer, a timeout, a reset socket, a
	 * 5xx, an unreadable answer), if one did; no attempt after it was sent.
	 */
	maybeApplied: { readonly error: unknown } | undefined;
}

/** What a request does, which decides how a failure without an answer is reported. @internal */
export type RequestKind = "read" | "write";

/**
 * The contract's code for a failed DynamoDB request.
 *
 * - a write whose guard saw an attempt that may have been applied → `TTLSTORAGE_OUTCOME_UNKNOWN`;
 * - a credentials error (nothing was sent) → `TTLSTORAGE_FAILED`;
 * - throttling → `TTLSTORAGE_THROTTLED` (DynamoDB refused it: nothing was written);
 * - a connection that could not be opened, a host not found → `TTLSTORAGE_UNAVAILABLE`;
 * - any other 4xx answer (validation, missing table, access denied) → `TTLSTORAGE_FAILED`;
 * - anything else: no answer (timeout, abort, reset socket), a 5xx, an error without an HTTP
 *   status → `TTLSTORAGE_OUTCOME_UNKNOWN` for a write (the request may have been applied, fenced
 *   or not, conditional or not), `TTLSTORAGE_UNAVAILABLE` for a read.
 *
 * @internal
 */
function errorCode(
	error: unknown,
	kind: RequestKind,
	attempts?: WriteAttempts,
): TTLStorageErrorCode {
	if (TTLStorageError.is(error)) return error.code;
	if (kind === "write" && attempts?.maybeApplied !== undefined) return "TTLSTORAGE_OUTCOME_UNKNOWN";
	const e = fields(error);
	if (e.name === "CredentialsProviderError") return "TTLSTORAGE_FAILED";
	if (isThrottling(e)) return "TTLSTORAGE_THROTTLED";
	if (isNotSent(e)) return "TTLSTORAGE_UNAVAILABLE";
	if (isRefusedAnswer(e)) return "TTLSTORAGE_FAILED";
	return kind === "write" ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
}

/**
 * Wraps a DynamoDB/SDK error in the contract's error. For a write, `attempts` is what its guard
 * saw: when an attempt may have been applied, that attempt's error is the `cause`. @internal
 */
export function toStorageError(
	error: unknown,
	operation: string,
	kind: RequestKind,
	attempts?: WriteAttempts,
): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const code = errorCode(error, kind, attempts);
	const original =
		kind === "write" && attempts?.maybeApplied !== undefined ? attempts.maybeApplied.error : error;
	const e = fields(original);
	const detail = [e.name, e.code].filter((x) => typeof x === "string" && x !== "Error").join("/");
	const message = typeof e.message === "string" ? e.message : String(original);
	const hint =
		code === "TTLSTORAGE_OUTCOME_UNKNOWN"
			? "; the write may or may not have been applied (it was not re-sent): re-read before deciding"
			: "";
	return new TTLStorageError(code, `${detail ? `${detail}: ${message}` : message}${hint}`, {
		cause: original,
		driver: DRIVER_NAME,
		operation,
	});
}
