import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";

/** Driver name used in error messages (`[@vvm/ttlstorage-cas] ...`). */
export const DRIVER_NAME = "cas";

/**
 * What a statement does, which decides how an ambiguous failure is reported:
 * - `"conditional"`: a lightweight transaction (`IF NOT EXISTS`, `IF value = ?`);
 * - `"write"`: a plain write (`put`, `putBatch`);
 * - `"read"`: a read; it never changes data, so a timeout is just "unavailable".
 */
export type StatementKind = "conditional" | "write" | "read";

/**
 * CQL native protocol error codes this driver distinguishes (`cassandra-driver`'s
 * `types.responseErrorCodes`, plus `casWriteUnknown`, which protocol v5 added and
 * `cassandra-driver` 4.x does not name).
 */
export const CQL_ERROR_CODES: Readonly<{
	serverError: 0x0000;
	unavailableException: 0x1000;
	overloaded: 0x1001;
	isBootstrapping: 0x1002;
	writeTimeout: 0x1100;
	readTimeout: 0x1200;
	readFailure: 0x1300;
	writeFailure: 0x1500;
	casWriteUnknown: 0x1700;
}> = Object.freeze({
	serverError: 0x0000,
	unavailableException: 0x1000,
	overloaded: 0x1001,
	isBootstrapping: 0x1002,
	writeTimeout: 0x1100,
	readTimeout: 0x1200,
	readFailure: 0x1300,
	writeFailure: 0x1500,
	casWriteUnknown: 0x1700,
});

interface DriverErrorShape {
	readonly name?: unknown;
	readonly message?: unknown;
	readonly code?: unknown;
	readonly writeType?: unknown;
	readonly isSocketError?: unknown;
	readonly requestNotWritten?: unknown;
	readonly innerErrors?: unknown;
	readonly consistencies?: unknown;
}

const shape = (error: unknown): DriverErrorShape =>
	typeof error === "object" && error !== null ? (error as DriverErrorShape) : {};

/**
 * The code for one `cassandra-driver` error. Errors are recognised by `name` and fields, not by
 * `instanceof`, so a second copy of `cassandra-driver` in the tree is handled the same way.
 */
function codeOf(error: unknown, kind: StatementKind): TTLStorageErrorCode {
	const e = shape(error);
	const writes = kind !== "read";
	switch (e.name) {
		case "NoHostAvailableError": {
			// Thrown when no host could take the request. For a write, a host tried before may have
			// received it (a client timeout or a broken socket after sending): then it is ambiguous.
			const inner =
				typeof e.innerErrors === "object" && e.innerErrors !== null
					? Object.values(e.innerErrors as Record<string, unknown>)
					: [];
			if (writes && inner.some((x) => codeOf(x, kind) === "TTLSTORAGE_OUTCOME_UNKNOWN")) {
				return "TTLSTORAGE_OUTCOME_UNKNOWN";
			}
			return "TTLSTORAGE_UNAVAILABLE";
		}
		case "OperationTimedOutError":
			// The client stopped waiting; the server may still apply the write.
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
		case "BusyConnectionError":
			return "TTLSTORAGE_UNAVAILABLE";
		case "ResponseError":
			return responseCodeOf(typeof e.code === "number" ? e.code : -1, kind, e.consistencies);
	}
	if (e.isSocketError === true) {
		if (e.requestNotWritten === true || !writes) return "TTLSTORAGE_UNAVAILABLE";
		return "TTLSTORAGE_OUTCOME_UNKNOWN";
	}
	return "TTLSTORAGE_FAILED";
}

/** SERIAL and LOCAL_SERIAL (`types.consistencies`): the Paxos prepare phase, before any proposal. */
const SERIAL_CONSISTENCIES: ReadonlySet<unknown> = new Set([0x0008, 0x0009]);

function responseCodeOf(
	code: number,
	kind: StatementKind,
	consistency: unknown,
): TTLStorageErrorCode {
	const writes = kind !== "read";
	switch (code) {
		case CQL_ERROR_CODES.writeTimeout:
		case CQL_ERROR_CODES.casWriteUnknown:
			// Paxos may have committed (CASSANDRA-9328): never report `false`, never "nothing written".
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
		case CQL_ERROR_CODES.writeFailure:
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_FAILED";
		case CQL_ERROR_CODES.readTimeout:
			// A read timeout of a write (a lightweight transaction's read) is reported conservatively.
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_UNAVAILABLE";
		case CQL_ERROR_CODES.unavailableException:
			// Refused before any mutation was sent, except for a lightweight transaction past its
			// prepare phase: the commit can be refused after the proposal was accepted (then it is
			// decided, and the next Paxos round on the key completes it).
			if (kind === "conditional" && !SERIAL_CONSISTENCIES.has(consistency))
				return "TTLSTORAGE_OUTCOME_UNKNOWN";
			return "TTLSTORAGE_UNAVAILABLE";
		case CQL_ERROR_CODES.isBootstrapping:
			return "TTLSTORAGE_UNAVAILABLE";
		case CQL_ERROR_CODES.overloaded:
			// Also raised after a write went out: a lightweight transaction's commit checks each
			// replica's hint backlog as it sends to it (after the proposal was accepted), a plain
			// write's coordinator the same as it sends to each replica.
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_THROTTLED";
		case CQL_ERROR_CODES.serverError:
			// An unexpected exception in the coordinator, which may come after the write went out.
			return writes ? "TTLSTORAGE_OUTCOME_UNKNOWN" : "TTLSTORAGE_FAILED";
		default:
			return "TTLSTORAGE_FAILED";
	}
}

/**
 * Turns any error thrown by `cassandra-driver` into a {@link TTLStorageError} with a stable code
 * (the original is the `cause`). A `TTLStorageError` passes through unchanged.
 *
 * | driver error | conditional write | plain write | read |
 * | --- | --- | --- | --- |
 * | `ResponseError` writeTimeout (any `writeType`, e.g. `CAS`), casWriteUnknown | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | UNAVAILABLE |
 * | `OperationTimedOutError` (client-side timeout) | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | UNAVAILABLE |
 * | socket error after the request was written | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | UNAVAILABLE |
 * | `ResponseError` writeFailure | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | FAILED |
 * | `ResponseError` readTimeout | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | UNAVAILABLE |
 * | `NoHostAvailableError` | UNAVAILABLE, or OUTCOME_UNKNOWN if a host may have received it | same | UNAVAILABLE |
 * | unavailable at SERIAL / LOCAL_SERIAL (the Paxos prepare) | UNAVAILABLE | – | – |
 * | unavailable at another consistency (an LWT's commit, after its proposal may have been accepted) | OUTCOME_UNKNOWN | UNAVAILABLE | UNAVAILABLE |
 * | isBootstrapping, `BusyConnectionError`, socket error before writing | UNAVAILABLE | UNAVAILABLE | UNAVAILABLE |
 * | overloaded (also raised as a write goes out to the replicas) | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | THROTTLED |
 * | serverError (an unexpected exception in the coordinator) | OUTCOME_UNKNOWN | OUTCOME_UNKNOWN | FAILED |
 * | anything else (syntax, invalid, unauthorized, ...: refused before running) | FAILED | FAILED | FAILED |
 *
 * @example
 * ```ts
 * try { await client.execute(cql, params, { prepare: true }); }
 * catch (e) { throw mapCassandraError(e, { operation: "compareAndSwap", kind: "conditional" }); }
 * ```
 */
export function mapCassandraError(
	error: unknown,
	context: { readonly operation: string; readonly kind: StatementKind },
): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const code = codeOf(error, context.kind);
	const e = shape(error);
	const detail = typeof e.message === "string" && e.message !== "" ? e.message : String(error);
	const name = typeof e.name === "string" ? e.name : "error";
	const writeType = typeof e.writeType === "string" ? ` (writeType ${e.writeType})` : "";
	const hint =
		code === "TTLSTORAGE_OUTCOME_UNKNOWN"
			? "; the write may or may not have been applied, and it may still be applied later: a coordinator drops a request only once it has waited native_transport_timeout (12 s by default in 5.0) plus network queueing, and a Paxos round already accepted can be completed by the next one, so a re-read (even at SERIAL) settles nothing before that; prefer writes that are safe to land late (fenced, or the same bytes again)"
			: "";
	return new TTLStorageError(code, `${name}${writeType}: ${detail}${hint}`, {
		driver: DRIVER_NAME,
		operation: context.operation,
		cause: error,
	});
}
