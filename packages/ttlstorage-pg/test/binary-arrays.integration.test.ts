// The group statement's array parameters go in PostgreSQL's binary format: what the server
// reads back from them is exactly what was encoded (NULLs, empty arrays, bytes of every value,
// int8 at both ends of its range).
import { describe, expect, it } from "vitest";
import { byteaArray, int4Array, int8Array } from "../src/binary-arrays.ts";
import { readArray } from "./binary-array.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_binarr", skip);

describe.skipIf(skip)(`ttlstorage-pg binary arrays${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("the server reads bytea[], int4[] and int8[] parameters as encoded", async () => {
		const { pool } = fixture();
		const bytes = [Buffer.from([0, 1, 255]), null, Buffer.alloc(0), Buffer.from("x".repeat(300))];
		const ints = [0, 1, -1, 2 ** 31 - 1, -(2 ** 31)];
		const longs = [0n, null, 2n ** 63n - 1n, -(2n ** 63n), 1_700_000_000_000_000];
		const result = await pool.query({
			text: `SELECT $1::bytea[] AS b, $2::int4[] AS i, $3::int8[]::text[] AS l,
				cardinality($4::bytea[]) AS e, cardinality($5::int8[]) AS e8`,
			values: [byteaArray(bytes), int4Array(ints), int8Array(longs), byteaArray([]), int8Array([])],
		});
		const row = result.rows[0];
		expect(row.b.map((b: Buffer | null) => (b === null ? null : [...b]))).toEqual(
			bytes.map((b) => (b === null ? null : [...b])),
		);
		expect(row.i).toEqual(ints);
		expect(row.l).toEqual(longs.map((l) => (l === null ? null : String(l))));
		expect([row.e, row.e8]).toEqual([0, 0]);
	});

	it("the tests' reader reads what the encoder wrote", () => {
		expect(readArray(int4Array([3, -4]))).toEqual([3, -4]);
		expect(readArray(int8Array([5n, null]))).toEqual([5n, null]);
		expect(readArray(byteaArray([Buffer.from("a"), null]))).toEqual([Buffer.from("a"), null]);
		expect(readArray(byteaArray([]))).toEqual([]);
	});
});
