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

/** Whether DynamoDB refused the request for capacity (throttling). @internal */
export function isThrottlingError(error: unknown): boolean {
	return isThrottling(fields(error));
}

/**
 * Whether a request that provably wrote nothing is worth sending again: DynamoDB throttled it, or
 * its connection was never opened. Another 4xx (validation, a missing table) is not. @internal
 */
export function isRetryableRefusal(error: unknown): boolean {
	const e = fields(error);
	return isThrottling(e) || isNotSent(e);
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
	/**
	 * The error of the last attempt DynamoDB refused (a 4xx answer: throttling, a failed condition)
	 * or that never opened a connection. While {@link maybeApplied} is unset, every attempt sent
	 * was refused like this or never left the process, so nothing was written.
	 */
	refused?: { readonly error: unknown } | undefined;
	/**
	 * The command ran through the client's middleware stack (a real client; a stubbed `send`
	 * skips it). Only then does "no attempt may have been applied" prove that nothing was sent.
	 */
	stackRan?: boolean;
}

/** What a request does, which decides how a failure without an answer is reported. @internal */
export type RequestKind = "read" | "write";

/**
 * The contract's code for a failed DynamoDB request.
 *
 * - a write whose guard saw an attempt that may have been applied → `TTLSTORAGE_OUTCOME_UNKNOWN`;
 * - a write whose guard saw no such attempt: every attempt sent was refused or none was sent (the
 *   request timeout fired during the SDK's backoff, or while the request waited for a pooled
 *   connection), so nothing was written: the code of the last refusal (throttling →
 *   `TTLSTORAGE_THROTTLED`), else `TTLSTORAGE_UNAVAILABLE`, never unknown;
 * - a credentials error (nothing was sent) → `TTLSTORAGE_FAILED`;
 * - throttling → `TTLSTORAGE_THROTTLED` (DynamoDB refused it: nothing was written);
 * - a connection that could not be opened, a host not found → `TTLSTORAGE_UNAVAILABLE`;
 * - any other 4xx answer (validation, missing table, access denied) → `TTLSTORAGE_FAILED`;
 * - anything else: no answer (timeout, abort, reset socket), a 5xx, an error without an HTTP
 *   status → `TTLSTORAGE_OUTCOME_UNKNOWN` for a write sent without a guard, `TTLSTORAGE_UNAVAILABLE`
 *   for a read.
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
	// A guarded write that saw no attempt that may have been applied wrote nothing.
	if (kind === "write" && attempts?.stackRan === true) return "TTLSTORAGE_UNAVAILABLE";
	return kind === "write" ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
}

/**
 * What an `OUTCOME_UNKNOWN` write's message says: it may still land later, and until when. A
 * request that DynamoDB has not yet received can still arrive (a slow link, a proxy's queue), and
 * DynamoDB refuses a signed request only once its signature is about 15 minutes old (the SigV4
 * window, against DynamoDB's clock). @internal
 */
const OUTCOME_UNKNOWN_HINT =
	"; the write may or may not have been applied, and it was not re-sent, but the request may still reach DynamoDB and be applied later: a signed request is refused only once it is about 15 minutes old, so a re-read settles it only after that; prefer writes that are safe to land late (fenced, or the same bytes again)";

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
	// A write: the attempt that may have been applied, else the last refusal, tells what happened.
	const basis =
		kind === "write" ? (attempts?.maybeApplied?.error ?? attempts?.refused?.error ?? error) : error;
	const code = errorCode(basis, kind, attempts);
	const e = fields(basis);
	const detail = [e.name, e.code].filter((x) => typeof x === "string" && x !== "Error").join("/");
	const message = typeof e.message === "string" ? e.message : String(basis);
	const last = fields(error);
	const then =
		basis === error || attempts?.maybeApplied !== undefined || last.name === "WriteNotResentError"
			? ""
			: ` (then ${typeof last.name === "string" ? last.name : "an error"} before another attempt was sent)`;
	const hint = code === "TTLSTORAGE_OUTCOME_UNKNOWN" ? OUTCOME_UNKNOWN_HINT : "";
	return new TTLStorageError(code, `${detail ? `${detail}: ${message}` : message}${then}${hint}`, {
		cause: basis,
		driver: DRIVER_NAME,
		operation,
	});
}
