// Argument and option checks: every bad input is a TypeError or RangeError before any I/O (the
// pool below fails the test if anything connects).
import type { Clock } from "@vvm/clock";
import { lateTimers, MockClock, systemClock } from "@vvm/clock";
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { PgPool } from "../src/index.ts";
import {
	createPgTTLStorage,
	ensurePgSchema,
	pgSchemaStatements,
	validatePgIdentifier,
	validatePgTTLStorageOptions,
} from "../src/index.ts";

const noIO: PgPool = {
	connect: () => {
		throw new Error("no I/O expected");
	},
};

async function thrown(fn: () => unknown): Promise<unknown> {
	try {
		await fn();
	} catch (e) {
		return e;
	}
	return undefined;
}

describe("validatePgIdentifier", () => {
	it("accepts lower-case identifiers up to 48 characters", () => {
		for (const name of ["a", "vvm", "vvm_ttl", "t2", `a${"b".repeat(47)}`])
			expect(() => validatePgIdentifier("table", name)).not.toThrow();
	});

	it("refuses what would need quoting, fold case or be reserved", () => {
		for (const name of [
			"",
			"Vvm",
			"1abc",
			"_x",
			"a-b",
			"a b",
			'a"b',
			"a;drop",
			`a${"b".repeat(48)}`,
			7,
			null,
		])
			expect(() => validatePgIdentifier("table", name), String(name)).toThrow(RangeError);
		expect(() => validatePgIdentifier("schema", "pg_catalog")).toThrow(/reserved/);
		expect(() => validatePgIdentifier("table", "pg_table")).not.toThrow();
	});
});

describe("validatePgTTLStorageOptions", () => {
	it("accepts the defaults and a configuration without a pool", () => {
		expect(() => validatePgTTLStorageOptions({})).not.toThrow();
		expect(() =>
			validatePgTTLStorageOptions({
				schema: "vvm",
				table: "leases",
				sweepIntervalMs: 0,
				sweepBatchSize: 1,
				pageSize: 10,
				writesInFlight: 1,
				maxGroupItems: 1,
				prepare: false,
				clock: new MockClock(),
			}),
		).not.toThrow();
	});

	it.each([
		[{ schema: "Bad" }, RangeError],
		[{ table: "x-y" }, RangeError],
		[{ sweepIntervalMs: -1 }, RangeError],
		[{ sweepIntervalMs: 1.5 }, RangeError],
		[{ sweepBatchSize: 0 }, RangeError],
		[{ pageSize: Number.NaN }, RangeError],
		[{ writesInFlight: 0 }, RangeError],
		[{ maxGroupItems: 2.5 }, RangeError],
		[{ prepare: "yes" }, TypeError],
		[{ pool: {} }, TypeError],
		[{ clock: { now: () => 0 } }, TypeError],
	] as const)("refuses %o", (options, type) => {
		expect(() => validatePgTTLStorageOptions(options as never)).toThrow(type);
	});

	// Found by review: a misspelt option from a configuration file was ignored without a word.
	it("refuses an unknown option, naming it and the known ones", () => {
		expect(() => validatePgTTLStorageOptions({ sweepIntervalMS: 1_000 } as never)).toThrow(
			'unknown option "sweepIntervalMS"; the options are pool, schema, table, clock, sweepIntervalMs, sweepBatchSize, pageSize, prepare, writesInFlight, readsInFlight, maxGroupItems, logger',
		);
		expect(() =>
			createPgTTLStorage({ pool: noIO, sweepIntervalMs: 0, writeInFlight: 4 } as never),
		).toThrow(/unknown option "writeInFlight"/);
		expect(() => validatePgTTLStorageOptions({ tabel: "x", scheme: "y" } as never)).toThrow(
			/unknown options "tabel", "scheme"/,
		);
	});

	// Found by review: the "tests only" clock took systemClock, so each client's wall clock decided
	// expiry, with no bound on the skew between two hosts (a host 25 s ahead took over a live lease).
	it("refuses systemClock and any wall clock as the test clock, naming the database's clock", () => {
		const ahead: Clock = { ...systemClock, now: () => Date.now() + 25_000 };
		for (const clock of [systemClock, ahead, lateTimers(systemClock, () => 0)]) {
			expect(() => validatePgTTLStorageOptions({ clock })).toThrow(
				/clock is for tests only.*decided by the database's clock/,
			);
			expect(() => createPgTTLStorage({ pool: noIO, clock, sweepIntervalMs: 0 })).toThrow(
				TypeError,
			);
		}
		expect(() =>
			validatePgTTLStorageOptions({ clock: lateTimers(new MockClock(), () => 5) }),
		).not.toThrow();
	});

	it("refuses a non-object", () => {
		expect(() => validatePgTTLStorageOptions(null as never)).toThrow(TypeError);
	});
});

describe("createPgTTLStorage", () => {
	it("needs a pool and valid options, before any I/O", () => {
		expect(() => createPgTTLStorage({} as never)).toThrow(TypeError);
		expect(() => createPgTTLStorage({ pool: noIO, table: "Bad" })).toThrow(RangeError);
		const storage = createPgTTLStorage({ pool: noIO, sweepIntervalMs: 0 });
		expect(storage.supports).toEqual({ atomicBatches: true, fencing: "epoch" });
	});

	it("refuses bad arguments of every operation without connecting", async () => {
		const storage = createPgTTLStorage({ pool: noIO, sweepIntervalMs: 0 });
		const ok = utf8("k");
		const bad: Array<[() => unknown, typeof TypeError | typeof RangeError]> = [
			[() => storage.insertIfNotExists(new Uint8Array(), ok, ok, 1), RangeError],
			[() => storage.compareAndSwap(ok, ok, ok, ok, -1), RangeError],
			[() => storage.compareAndDelete(ok, ok, "x" as never), TypeError],
			[() => storage.put(ok, ok, ok, 0, { fence: { scope: ok, epoch: 1 as never } }), TypeError],
			[
				() => storage.putBatch([{ pKey: ok, cCols: ok, value: new Uint8Array(70_000) }]),
				RangeError,
			],
			[
				() =>
					storage.putBatchIf([
						{ pKey: ok, cCols: ok, value: ok, expected: null },
						{ pKey: ok, cCols: ok, value: ok },
					]),
				TypeError,
			],
			[() => storage.raiseFence?.(new Uint8Array(), 1n), RangeError],
			[() => storage.raiseFence?.(ok, -1n), RangeError],
			[() => storage.get(ok, "x" as never), TypeError],
			[() => storage.queryTTL(new Uint8Array(), ok), RangeError],
			[() => storage.read(ok, { from: "a" as never }), TypeError],
		];
		for (const [fn, type] of bad) expect(await thrown(fn)).toBeInstanceOf(type);
	});

	it("an empty batch and a closed storage do no I/O", async () => {
		const storage = createPgTTLStorage({ pool: noIO, sweepIntervalMs: 0 });
		await storage.putBatch([]);
		expect(await storage.putBatchIf([])).toBe(true);
		await storage.close();
		const error = await thrown(() => storage.get(utf8("p"), utf8("k")));
		expect((error as { code?: unknown }).code).toBe("TTLSTORAGE_CLOSED");
	});
});

describe("ensurePgSchema and pgSchemaStatements", () => {
	it("validate names and the pool before any I/O", async () => {
		expect(await thrown(() => ensurePgSchema(noIO, { schema: "Bad" }))).toBeInstanceOf(RangeError);
		expect(await thrown(() => ensurePgSchema({} as never))).toBeInstanceOf(TypeError);
		expect(await thrown(() => ensurePgSchema(noIO, null as never))).toBeInstanceOf(TypeError);
		expect(() => pgSchemaStatements({ table: "pg-x" })).toThrow(RangeError);
	});

	it("quote the validated names and default to public.vvm_ttl", () => {
		const [schema, table, index, fences] = pgSchemaStatements();
		expect(schema).toBe('CREATE SCHEMA IF NOT EXISTS "public"');
		expect(table).toMatch(/^CREATE TABLE IF NOT EXISTS "public"\."vvm_ttl" \(p_key bytea NOT NULL/);
		expect(index).toMatch(/"vvm_ttl_expire_at" ON "public"\."vvm_ttl" \(expire_at\) WHERE/);
		expect(fences).toMatch(/"public"\."vvm_ttl_fences" \(scope bytea PRIMARY KEY/);
	});
});
