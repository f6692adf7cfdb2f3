import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";

/** Driver name used in error messages (`[@vvm/ttlstorage-pg] ...`). */
export const DRIVER_NAME = "pg";

/**
 * Where an error happened, which decides how an ambiguous failure is reported:
 * - `"connect"`: taking a connection from the pool; nothing was sent;
 * - `"write"`: a statement that writes (conditional or not) was sent;
 * - `"read"`: a read was sent; it never changes data, so a lost answer is just "unavailable".
 */
export type PgPhase = "connect" | "write" | "read";

interface PgErrorShape {
	readonly code?: unknown;
	readonly syscall?: unknown;
	readonly message?: unknown;
	readonly severity?: unknown;
	readonly routine?: unknown;
}

const shape = (error: unknown): PgErrorShape =>
	typeof error === "object" && error !== null ? (error as PgErrorShape) : {};

/** A five-character SQLSTATE, as node-postgres puts a server error's code. */
const SQLSTATE = /^[0-9A-Z]{5}$/;

/**
 * Node socket errors. Node names the system call on each (`syscall`), which tells whether it came
 * before anything was sent; without it nobody can tell, so a write that got one may have landed.
 */
const SOCKET_CODES = new Set([
	"ECONNREFUSED",
	"ENOTFOUND",
	"EAI_AGAIN",
	"EHOSTUNREACH",
	"ENETUNREACH",
	"EADDRNOTAVAIL",
	"ECONNRESET",
	"EPIPE",
	"ETIMEDOUT",
	"ECONNABORTED",
]);

/** The system calls whose errors come before anything is sent: opening a socket, resolving. */
const BEFORE_SENDING_SYSCALLS = new Set(["connect", "getaddrinfo"]);

/**
 * SQLSTATEs that only a connection's start-up raises (it is refused), so a session that ran a
 * statement never gets them.
 */
const STARTUP_STATES = new Set(["57P03", "53300", "08001", "08004"]);

/**
 * `true` when the connection that raised `error` must not go back to the pool: anything but a
 * plain SQL error reported by a healthy session.
 */
export function isConnectionError(error: unknown): boolean {
	const e = shape(error);
	if (typeof e.code !== "string" || !SQLSTATE.test(e.code)) return true;
	if (e.severity === "FATAL" || e.severity === "PANIC") return true;
	return e.code.startsWith("08") || e.code.startsWith("57P");
}

/** `true` for the errors that abort a statement before anything of it is applied (retry-safe). */
export function isRetryableConflict(error: unknown): boolean {
	const code = shape(error).code;
	return code === "40001" || code === "40P01";
}

function sqlStateCode(code: string, message: string, writes: boolean): TTLStorageErrorCode {
	switch (code) {
		case "40001": // serialization_failure
		case "40P01": // deadlock_detected
		case "55P03": // lock_not_available (lock_timeout)
		case "25006": // read_only_sql_transaction (a standby, or a primary being demoted)
		case "57P03": // cannot_connect_now (starting up, shutting down, in recovery)
		case "08001": // sqlclient_unable_to_establish_sqlconnection
		case "08004": // sqlserver_rejected_establishment_of_sqlconnection
			return "TTLSTORAGE_UNAVAILABLE";
		case "57014":
			// statement_timeout is switched off before the commit: a statement it cancelled was
			// rolled back. A cancel request (pg_cancel_backend) may come in after the commit.
			if (/statement timeout|lock timeout/i.test(message) || !writes)
				return "TTLSTORAGE_UNAVAILABLE";
			return "TTLSTORAGE_OUTCOME_UNKNOWN";
	}
	if (code.startsWith("53")) return "TTLSTORAGE_THROTTLED"; // insufficient_resources
	if (code.startsWith("08") || code.startsWith("57P")) {
		// The session ended under the statement (pg_terminate_backend, a server shut down or
		// crashing): the commit may have happened just before.
		return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
	}
	return "TTLSTORAGE_FAILED";
}

/**
 * The code for one error of node-postgres (or of the server through it) in `phase`. Once a write
 * was sent, only the server's `ERROR` (its statement rolled back, the session alive) or an error
 * raised before sending says nothing was written: every other failure of a write, one this
 * mapping does not know included, is `OUTCOME_UNKNOWN`.
 */
function codeOf(error: unknown, phase: PgPhase): TTLStorageErrorCode {
	const e = shape(error);
	const message = typeof e.message === "string" ? e.message : "";
	const code = typeof e.code === "string" ? e.code : undefined;
	const writes = phase === "write";
	const unsure = writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
	if (code !== undefined && SQLSTATE.test(code)) {
		// Authentication, a missing database or role: configuration, not availability.
		if (code.startsWith("28") || code === "3D000") return "TTLSTORAGE_FAILED";
		if (phase === "connect" && sqlStateCode(code, message, false) !== "TTLSTORAGE_FAILED")
			return code.startsWith("53") ? "TTLSTORAGE_THROTTLED" : "TTLSTORAGE_UNAVAILABLE";
		// The session ended (FATAL) or the server went down (PANIC) under a write: the commit may
		// have come first (a PANIC in the commit's critical section, after its WAL record). The
		// severity node-postgres gives is the localized one (lc_messages), so the classes of such
		// failures count whatever it says: 58 (an I/O error, "could not fsync") and XX (internal).
		if (
			writes &&
			(e.severity === "FATAL" ||
				e.severity === "PANIC" ||
				code.startsWith("58") ||
				code.startsWith("XX")) &&
			!STARTUP_STATES.has(code)
		)
			return "TTLSTORAGE_OUTCOME_UNKNOWN";
		return sqlStateCode(code, message, writes);
	}
	if (phase === "connect") return "TTLSTORAGE_UNAVAILABLE";
	// "Client was closed and is not queryable", "Client has encountered a connection error and is
	// not queryable" and the like: refused before sending (so before the broken-connection test,
	// which the second would match).
	if (/not queryable|after calling end|pool is ending/i.test(message))
		return "TTLSTORAGE_UNAVAILABLE";
	if (typeof e.syscall === "string") {
		// A system call's error (node names the call on each). On an open connection any code can
		// come after the statement was sent: Linux ends a connection that timed out with the last
		// ICMP error it had (ECONNREFUSED for a port unreachable, EHOSTDOWN, ENONET, ...).
		return BEFORE_SENDING_SYSCALLS.has(e.syscall) ? "TTLSTORAGE_UNAVAILABLE" : unsure;
	}
	if (
		(code !== undefined && SOCKET_CODES.has(code)) ||
		/Connection terminated|Query read timeout|connection error|ended unexpectedly/i.test(message)
	) {
		return unsure;
	}
	// An error this mapping does not know: a write may have landed.
	return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_FAILED";
}

/**
 * Turns any error of node-postgres (a server error with its SQLSTATE, a socket error, a client
 * timeout) into a {@link TTLStorageError} with a stable code; the original is the `cause`. A
 * `TTLStorageError` passes through unchanged.
 *
 * | error | write | read | taking a connection |
 * | --- | --- | --- | --- |
 * | connection lost after sending (`Connection terminated…`, `ECONNRESET`), client `query_timeout` (`Query read timeout`), `57P01` (`pg_terminate_backend`), `57P02`, class `08` | OUTCOME_UNKNOWN | UNAVAILABLE | UNAVAILABLE |
 * | any socket error on an open connection (`syscall` not `connect`: `ECONNREFUSED`, `EHOSTDOWN`, `EHOSTUNREACH`, … after a timeout), a socket code without `syscall` | OUTCOME_UNKNOWN | UNAVAILABLE | UNAVAILABLE |
 * | the server's `FATAL` or `PANIC` (other than start-up's `57P03`, `53300`, `08001`, `08004`, class `28`, `3D000`), and classes `58` (I/O) and `XX` (internal) whatever the (localized) severity | OUTCOME_UNKNOWN | as its SQLSTATE | as its SQLSTATE |
 * | `57014` by `statement_timeout` or `lock_timeout`, `55P03`, `40001`, `40P01` (after 3 tries), `25006`, `57P03` | UNAVAILABLE | UNAVAILABLE | UNAVAILABLE |
 * | `57014` by a cancel request | OUTCOME_UNKNOWN | UNAVAILABLE | – |
 * | class `53` (too many connections, out of memory, disk full) | THROTTLED | THROTTLED | THROTTLED |
 * | a socket error of `connect` or `getaddrinfo` (refused, DNS, unreachable), pool timeout, pool ended, a client that refused before sending | UNAVAILABLE | UNAVAILABLE | UNAVAILABLE |
 * | class `28` (authentication), `3D000` (no such database), any other server `ERROR` (`42P01`: run `ensurePgSchema`) | FAILED | FAILED | FAILED |
 * | any other error (one this mapping does not know) | OUTCOME_UNKNOWN | FAILED | UNAVAILABLE |
 *
 * @example
 * ```ts
 * try { await client.query(sql); }
 * catch (e) { throw mapPgError(e, { operation: "compareAndSwap", phase: "write" }); }
 * ```
 */
export function mapPgError(
	error: unknown,
	context: { readonly operation: string; readonly phase: PgPhase },
): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const code = codeOf(error, context.phase);
	const e = shape(error);
	const detail = typeof e.message === "string" && e.message !== "" ? e.message : String(error);
	const state = typeof e.code === "string" ? ` (${e.code})` : "";
	const hint =
		code === "TTLSTORAGE_OUTCOME_UNKNOWN"
			? "; the write may or may not have been applied: re-read before deciding"
			: e.code === "42P01"
				? "; create the tables with ensurePgSchema"
				: "";
	return new TTLStorageError(code, `${detail}${state}${hint}`, {
		driver: DRIVER_NAME,
		operation: context.operation,
		cause: error,
	});
}
