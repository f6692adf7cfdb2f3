// The error mapping of node-postgres and server errors, case by case.
import { TTLStorageError } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { PgPhase } from "../src/index.ts";
import { mapPgError } from "../src/index.ts";

const server = (code: string, message = "m", severity = "ERROR") =>
	Object.assign(new Error(message), { code, severity });
const socket = (code: string) => Object.assign(new Error(`socket ${code}`), { code });
const codeOf = (error: unknown, phase: PgPhase) =>
	mapPgError(error, { operation: "op", phase }).code;

describe("mapPgError", () => {
	it.each([
		// [error, write, read, connect]
		[
			"connection lost",
			new Error("Connection terminated unexpectedly"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"client query_timeout",
			new Error("Query read timeout"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		["ECONNRESET", socket("ECONNRESET"), "OUTCOME_UNKNOWN", "UNAVAILABLE", "UNAVAILABLE"],
		[
			"ECONNREFUSED while connecting",
			Object.assign(socket("ECONNREFUSED"), { syscall: "connect" }),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"DNS",
			Object.assign(socket("ENOTFOUND"), { syscall: "getaddrinfo" }),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		// Linux ends a connection that timed out (retransmissions, keepalive) with the last ICMP
		// error it had: after the statement was sent, so the write may have committed.
		[
			"ECONNREFUSED on an open connection (an ICMP port unreachable, then a timeout)",
			Object.assign(socket("ECONNREFUSED"), { syscall: "read" }),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"EHOSTDOWN on an open connection",
			Object.assign(socket("EHOSTDOWN"), { syscall: "read" }),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"ENONET writing to an open connection",
			Object.assign(socket("ENONET"), { syscall: "write" }),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		// Without `syscall` nobody can tell when it came.
		[
			"ECONNREFUSED, no syscall",
			socket("ECONNREFUSED"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"PANIC in the commit (its WAL record may be on disk)",
			server("58030", 'could not fsync file "pg_wal/x": Input/output error', "PANIC"),
			"OUTCOME_UNKNOWN",
			"FAILED",
			"FAILED",
		],
		[
			"FATAL of another class (the session ended under the statement)",
			server("XX000", "internal error", "FATAL"),
			"OUTCOME_UNKNOWN",
			"FAILED",
			"FAILED",
		],
		// node-postgres gives the localized severity (lc_messages): the class decides as well.
		[
			"PANIC 58030 from a server whose lc_messages is German",
			server("58030", "konnte Datei nicht fsyncen", "PANIK"),
			"OUTCOME_UNKNOWN",
			"FAILED",
			"FAILED",
		],
		[
			"an ERROR of class XX",
			server("XX000", "internal error"),
			"OUTCOME_UNKNOWN",
			"FAILED",
			"FAILED",
		],
		[
			"an ERROR of another class: rolled back",
			server("22023", "invalid"),
			"FAILED",
			"FAILED",
			"FAILED",
		],
		[
			"EHOSTUNREACH on an open connection (a statement may have been sent)",
			Object.assign(socket("EHOSTUNREACH"), { syscall: "read" }),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"EHOSTUNREACH while connecting",
			Object.assign(socket("EHOSTUNREACH"), { syscall: "connect" }),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"pg_terminate_backend",
			server("57P01", "terminating connection due to administrator command", "FATAL"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"crash shutdown",
			server("57P02", "crash", "FATAL"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"starting up",
			server("57P03", "the database system is starting up", "FATAL"),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"statement_timeout",
			server("57014", "canceling statement due to statement timeout"),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"lock_timeout",
			server("55P03", "canceling statement due to lock timeout"),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"cancel request",
			server("57014", "canceling statement due to user request"),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		["deadlock", server("40P01"), "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"],
		["serialization", server("40001"), "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"],
		["read-only standby", server("25006"), "UNAVAILABLE", "UNAVAILABLE", "UNAVAILABLE"],
		[
			"too many connections",
			server("53300", "sorry, too many clients already", "FATAL"),
			"THROTTLED",
			"THROTTLED",
			"THROTTLED",
		],
		["disk full", server("53100"), "THROTTLED", "THROTTLED", "THROTTLED"],
		[
			"bad password",
			server("28P01", "password authentication failed", "FATAL"),
			"FAILED",
			"FAILED",
			"FAILED",
		],
		[
			"no database",
			server("3D000", "database does not exist", "FATAL"),
			"FAILED",
			"FAILED",
			"FAILED",
		],
		["no table", server("42P01"), "FAILED", "FAILED", "FAILED"],
		[
			"pool ended",
			new Error("Cannot use a pool after calling end on the pool"),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			// node-postgres refuses it before sending (a handed-on connection that broke): not unknown.
			"client broken before sending",
			new Error("Client has encountered a connection error and is not queryable"),
			"UNAVAILABLE",
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		// An error this mapping does not know: a write may have landed.
		["anything else", new Error("boom"), "OUTCOME_UNKNOWN", "FAILED", "UNAVAILABLE"],
	])("%s", (_, error, write, read, connect) => {
		expect(codeOf(error, "write")).toBe(`TTLSTORAGE_${write}`);
		expect(codeOf(error, "read")).toBe(`TTLSTORAGE_${read}`);
		expect(codeOf(error, "connect")).toBe(`TTLSTORAGE_${connect}`);
	});

	it("keeps the cause, names the driver, the operation and the SQLSTATE, and passes TTLStorageErrors through", () => {
		const cause = server("42P01", 'relation "x" does not exist');
		const mapped = mapPgError(cause, { operation: "get", phase: "read" });
		expect(mapped.cause).toBe(cause);
		expect(mapped.driver).toBe("pg");
		expect(mapped.operation).toBe("get");
		expect(mapped.message).toBe(
			'[@vvm/ttlstorage-pg] get: relation "x" does not exist (42P01); create the tables with ensurePgSchema',
		);
		const unknown = mapPgError(new Error("Connection terminated unexpectedly"), {
			operation: "put",
			phase: "write",
		});
		expect(unknown.message).toMatch(/re-read before deciding/);
		const own = new TTLStorageError("TTLSTORAGE_FENCED", "x");
		expect(mapPgError(own, { operation: "put", phase: "write" })).toBe(own);
		expect(codeOf("a string", "write")).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(codeOf("a string", "read")).toBe("TTLSTORAGE_FAILED");
	});
});
