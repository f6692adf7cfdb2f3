import type { TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { errors, types } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import type { StatementKind } from "../src/index.ts";
import { CQL_ERROR_CODES, mapCassandraError } from "../src/index.ts";

const codes = types.responseErrorCodes;

function response(code: number, extra: Record<string, unknown> = {}): Error {
	const e = new errors.ResponseError(code, `server said 0x${code.toString(16)}`);
	return Object.assign(e, extra);
}

function socketError(requestNotWritten: boolean): Error {
	// The shape cassandra-driver's Connection gives a socket failure (a DriverError with flags).
	const DriverError = errors.DriverError as unknown as new (message: string) => Error;
	return Object.assign(new DriverError("socket hang up"), {
		isSocketError: true,
		requestNotWritten,
	});
}

const map = (error: unknown, kind: StatementKind): TTLStorageErrorCode =>
	mapCassandraError(error, { operation: "op", kind }).code;

type Row = readonly [
	label: string,
	make: () => unknown,
	conditional: TTLStorageErrorCode,
	write: TTLStorageErrorCode,
	read: TTLStorageErrorCode,
];

const U = "TTLSTORAGE_UNAVAILABLE";
const O = "TTLSTORAGE_OUTCOME_UNKNOWN";
const T = "TTLSTORAGE_THROTTLED";
const F = "TTLSTORAGE_FAILED";

const table: Row[] = [
	[
		"writeTimeout, writeType CAS",
		() => response(codes.writeTimeout, { writeType: "CAS" }),
		O,
		O,
		U,
	],
	[
		"writeTimeout, writeType SIMPLE",
		() => response(codes.writeTimeout, { writeType: "SIMPLE" }),
		O,
		O,
		U,
	],
	["casWriteUnknown (0x1700)", () => response(CQL_ERROR_CODES.casWriteUnknown), O, O, U],
	[
		"OperationTimedOutError",
		() => new errors.OperationTimedOutError("no reply", "127.0.0.1:9042"),
		O,
		O,
		U,
	],
	["socket error after the request was written", () => socketError(false), O, O, U],
	["socket error before the request was written", () => socketError(true), U, U, U],
	["writeFailure", () => response(codes.writeFailure, { writeType: "CAS" }), O, O, F],
	["readTimeout", () => response(codes.readTimeout), O, O, U],
	[
		"unavailableException at SERIAL (a lightweight transaction's prepare)",
		() => response(codes.unavailableException, { consistencies: types.consistencies.serial }),
		U,
		U,
		U,
	],
	[
		"unavailableException at LOCAL_SERIAL",
		() =>
			response(codes.unavailableException, {
				consistencies: types.consistencies.localSerial,
			}),
		U,
		U,
		U,
	],
	[
		// A lightweight transaction's commit can be refused after its proposal was accepted.
		"unavailableException at QUORUM",
		() => response(codes.unavailableException, { consistencies: types.consistencies.quorum }),
		O,
		U,
		U,
	],
	["isBootstrapping", () => response(codes.isBootstrapping), U, U, U],
	// Also raised as a write goes out (a lightweight transaction's commit checks each replica's
	// hint backlog after the proposal was accepted): for a write the outcome is unknown.
	["overloaded", () => response(codes.overloaded), O, O, T],
	[
		"NoHostAvailableError with unavailable hosts",
		() =>
			new errors.NoHostAvailableError({
				"127.0.0.1:9042": response(codes.unavailableException, {
					consistencies: types.consistencies.serial,
				}),
				"127.0.0.2:9042": new errors.BusyConnectionError("127.0.0.2:9042", 2048, 1),
			}),
		U,
		U,
		U,
	],
	["NoHostAvailableError with no inner errors", () => new errors.NoHostAvailableError({}), U, U, U],
	[
		"NoHostAvailableError after a host may have received the write",
		() =>
			new errors.NoHostAvailableError({
				"127.0.0.1:9042": new errors.OperationTimedOutError("no reply", "127.0.0.1:9042"),
			}),
		O,
		O,
		U,
	],
	["BusyConnectionError", () => new errors.BusyConnectionError("127.0.0.1:9042", 2048, 1), U, U, U],
	["syntaxError", () => response(codes.syntaxError), F, F, F],
	["invalid", () => response(codes.invalid), F, F, F],
	["unauthorized", () => response(codes.unauthorized), F, F, F],
	["serverError", () => response(codes.serverError), O, O, F],
	["readFailure", () => response(codes.readFailure), F, F, F],
	["ArgumentError", () => new errors.ArgumentError("bad param"), F, F, F],
	["DriverInternalError", () => new errors.DriverInternalError("bug"), F, F, F],
	["a plain Error", () => new Error("boom"), F, F, F],
	["a thrown string", () => "boom", F, F, F],
	["null", () => null, F, F, F],
];

describe("mapCassandraError", () => {
	for (const [label, make, conditional, write, read] of table) {
		it(`${label} → ${conditional} / ${write} / ${read} (conditional / write / read)`, () => {
			expect(map(make(), "conditional")).toBe(conditional);
			expect(map(make(), "write")).toBe(write);
			expect(map(make(), "read")).toBe(read);
		});
	}

	it("never reports a write timeout on a lightweight transaction as anything but OUTCOME_UNKNOWN", () => {
		for (const writeType of ["CAS", "SIMPLE", "BATCH", "BATCH_LOG", "UNLOGGED_BATCH", "COUNTER"]) {
			expect(map(response(codes.writeTimeout, { writeType }), "conditional")).toBe(O);
		}
	});

	it("keeps the driver error as cause and names driver, operation and writeType in the message", () => {
		const cause = response(codes.writeTimeout, { writeType: "CAS" });
		const mapped = mapCassandraError(cause, { operation: "compareAndSwap", kind: "conditional" });
		expect(TTLStorageError.is(mapped)).toBe(true);
		expect(mapped.cause).toBe(cause);
		expect(mapped.driver).toBe("cas");
		expect(mapped.operation).toBe("compareAndSwap");
		expect(mapped.message).toMatch(/^\[@vvm\/ttlstorage-cas\] compareAndSwap: ResponseError/);
		expect(mapped.message).toContain("writeType CAS");
		expect(mapped.message).toContain("re-read");
	});

	it("passes a TTLStorageError through unchanged", () => {
		const original = new TTLStorageError("TTLSTORAGE_CLOSED", "closed", { driver: "cas" });
		expect(mapCassandraError(original, { operation: "get", kind: "read" })).toBe(original);
	});

	it("recognises errors by name and fields, so a second copy of cassandra-driver maps the same", () => {
		const foreign = { name: "ResponseError", code: 0x1100, message: "timeout", writeType: "CAS" };
		expect(map(foreign, "conditional")).toBe(O);
		expect(map({ name: "NoHostAvailableError", innerErrors: {} }, "conditional")).toBe(U);
	});

	it("uses the protocol codes of cassandra-driver where it names them", () => {
		expect(CQL_ERROR_CODES.writeTimeout).toBe(codes.writeTimeout);
		expect(CQL_ERROR_CODES.readTimeout).toBe(codes.readTimeout);
		expect(CQL_ERROR_CODES.unavailableException).toBe(codes.unavailableException);
		expect(CQL_ERROR_CODES.overloaded).toBe(codes.overloaded);
		expect(CQL_ERROR_CODES.serverError).toBe(codes.serverError);
		expect(CQL_ERROR_CODES.writeFailure).toBe(codes.writeFailure);
	});
});
