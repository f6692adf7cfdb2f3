import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";

/** Driver name used in error messages (`[@vvm/ttlstorage-redis] ...`). */
export const DRIVER_NAME = "redis";

/**
 * What was sent when an error happened, which decides how an ambiguous failure is reported:
 * - `"write"`: a script that writes was sent;
 * - `"read"`: a read was sent; it never changes data, so a lost answer is just "unavailable".
 */
export type RedisPhase = "write" | "read";

interface ErrorShape {
	readonly name?: unknown;
	readonly code?: unknown;
	readonly message?: unknown;
}

const shape = (error: unknown): ErrorShape =>
	typeof error === "object" && error !== null ? (error as ErrorShape) : {};

/**
 * Server errors (their first word) that refuse a command before it runs: a script is not started
 * on a busy server (`BUSY`: another script runs past its time limit), while loading its data
 * (`LOADING`), on a read-only replica (`READONLY`, a flagged write script is refused before it
 * runs), while a replica has no link to its primary (`MASTERDOWN`), when a write cannot persist
 * (`MISCONF`), with too few good replicas (`NOREPLICAS`), or in a cluster in flux.
 */
const REFUSED = new Set([
	"BUSY",
	"LOADING",
	"READONLY",
	"MASTERDOWN",
	"MISCONF",
	"NOREPLICAS",
	"TRYAGAIN",
	"CLUSTERDOWN",
	"MOVED",
	"ASK",
]);

/** Client messages that say the command was never written to a connection. */
const NOT_SENT = /Stream isn't writeable|enableOfflineQueue options is false|is not ready/i;
/** Client messages that say a command was sent and its answer is lost. */
const LOST =
	/Connection is closed|max retries per request|Command timed out|socket (closed|hang up)|ECONNRESET|EPIPE|ETIMEDOUT|ECONNABORTED/i;

function codeOf(error: unknown, phase: RedisPhase): TTLStorageErrorCode {
	const e = shape(error);
	const message = typeof e.message === "string" ? e.message : String(error);
	if (e.name === "ReplyError") {
		const word = message.split(" ", 1)[0] ?? "";
		if (word === "OOM") return "TTLSTORAGE_THROTTLED";
		if (REFUSED.has(word)) return "TTLSTORAGE_UNAVAILABLE";
		return "TTLSTORAGE_FAILED";
	}
	if (e.name === "MaxRetriesPerRequestError")
		return phase === "write" ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
	if (NOT_SENT.test(message)) return "TTLSTORAGE_UNAVAILABLE";
	if (LOST.test(message) || (typeof e.code === "string" && LOST.test(e.code)))
		return phase === "write" ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
	// Not the server's reply and not known: a client error on a command already sent (ioredis
	// rejects every command in flight with a `ParserError` when the stream is corrupt), so a
	// write may have run.
	return phase === "write" ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_FAILED";
}

/**
 * Turns an error of ioredis (a server's error reply, a lost connection, a client timeout) into a
 * {@link TTLStorageError} with a stable code; the original is the `cause`. A `TTLStorageError`
 * passes through unchanged. Only for errors of commands sent while the client was `"ready"`: the
 * driver refuses to send otherwise (`TTLSTORAGE_UNAVAILABLE`).
 *
 * | error | write | read |
 * | --- | --- | --- |
 * | the connection closed with the command in flight (`Connection is closed.`, `MaxRetriesPerRequestError`), `Command timed out` (`commandTimeout`) | OUTCOME_UNKNOWN | UNAVAILABLE |
 * | `Stream isn't writeable…` (not sent) | UNAVAILABLE | UNAVAILABLE |
 * | `BUSY`, `LOADING`, `READONLY`, `MASTERDOWN`, `MISCONF`, `NOREPLICAS`, cluster redirections | UNAVAILABLE | UNAVAILABLE |
 * | `OOM` (over `maxmemory`; a write script is refused before it runs) | THROTTLED | THROTTLED |
 * | any other error reply (`NOAUTH`, `WRONGPASS`, `NOPERM`, `WRONGTYPE`, a script error) | FAILED | FAILED |
 * | any other error (not a reply: a `ParserError` of a corrupt stream, one the driver does not know) | OUTCOME_UNKNOWN | FAILED |
 *
 * @example
 * ```ts
 * try { await client.callBuffer("PING"); }
 * catch (e) { throw mapRedisError(e, { operation: "ping", phase: "read" }); }
 * ```
 */
export function mapRedisError(
	error: unknown,
	context: { readonly operation: string; readonly phase: RedisPhase },
): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const code = codeOf(error, context.phase);
	const e = shape(error);
	const detail = typeof e.message === "string" && e.message !== "" ? e.message : String(error);
	const hint =
		code === "TTLSTORAGE_OUTCOME_UNKNOWN"
			? "; the write may or may not have been applied: re-read before deciding"
			: "";
	return new TTLStorageError(code, `${detail}${hint}`, {
		driver: DRIVER_NAME,
		operation: context.operation,
		cause: error,
	});
}
