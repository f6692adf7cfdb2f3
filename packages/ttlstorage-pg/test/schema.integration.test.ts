// ensurePgSchema against a real PostgreSQL: several processes creating one schema at once, an
// existing table of another shape, and what a storage does without its tables.
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createPgTTLStorage, ensurePgSchema, pgSchemaStatements } from "../src/index.ts";
import { newPool, pgGate, uniqueSchema } from "./pg-env.ts";

const skip = await pgGate();
const RACERS = 8;

async function rejection(p: Promise<unknown>): Promise<TTLStorageError> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e,
	);
	expect(TTLStorageError.is(error), `expected a TTLStorageError, got ${String(error)}`).toBe(true);
	return error as TTLStorageError;
}

describe.skipIf(skip)(`ensurePgSchema on PostgreSQL${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it(`run by ${RACERS} pools at once on a new schema: all succeed, one creates, every pool reads what each wrote`, async () => {
		const schema = uniqueSchema("vvm_race");
		const pools = Array.from({ length: RACERS }, () => newPool({ max: 1 }));
		try {
			const results = await Promise.allSettled(
				pools.map((pool) => ensurePgSchema(pool, { schema })),
			);
			expect(
				results.map((r) => (r.status === "fulfilled" ? r.value : String(r.reason))).sort(),
			).toEqual(["created", ...Array.from({ length: RACERS - 1 }, () => "exists")]);
			const storages = pools.map((pool) => createPgTTLStorage({ pool, schema }));
			await Promise.all(
				storages.map((s, i) =>
					s.insertIfNotExists(utf8(`race/${i}`), utf8("k"), utf8(`v${i}`), 60),
				),
			);
			for (const s of storages) {
				const seen = await Promise.all(storages.map((_, i) => s.get(utf8(`race/${i}`), utf8("k"))));
				expect(
					seen.map((v) => (v === undefined ? "missing" : new TextDecoder().decode(v))),
				).toEqual(storages.map((_, i) => `v${i}`));
			}
			await Promise.all(storages.map((s) => s.close()));
		} finally {
			await pools[0]?.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await Promise.all(pools.map((p) => p.end()));
		}
	});

	it("refuses a session whose commits are not durable (synchronous_commit off) unless allowAsyncCommit", async () => {
		// Found by review: nothing checked it, so a pool with synchronous_commit off had its raised
		// fences and leases acknowledged before their WAL was on disk.
		const schema = uniqueSchema("vvm_async");
		const pool = newPool({ options: "-c synchronous_commit=off" });
		try {
			const error = await rejection(ensurePgSchema(pool, { schema }));
			expect(error.code).toBe("TTLSTORAGE_FAILED");
			expect(error.message).toContain("synchronous_commit is off");
			expect(
				(await pool.query("SELECT to_regclass($1) AS t", [`"${schema}".vvm_ttl`])).rows[0]?.t,
			).toBeNull();
			expect(await ensurePgSchema(pool, { schema, allowAsyncCommit: true })).toBe("created");
			// "local" still flushes the WAL here before answering.
			const local = newPool({ options: "-c synchronous_commit=local" });
			try {
				expect(await ensurePgSchema(local, { schema })).toBe("exists");
			} finally {
				await local.end();
			}
			await expect(
				ensurePgSchema(pool, { schema, allowAsyncCommit: "yes" as never }),
			).rejects.toThrow("allowAsyncCommit must be a boolean");
		} finally {
			await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await pool.end();
		}
	});

	it("is idempotent, creates what pgSchemaStatements says, and keeps two tables of one schema apart", async () => {
		const schema = uniqueSchema("vvm_idem");
		const pool = newPool();
		try {
			expect(await ensurePgSchema(pool, { schema })).toBe("created");
			expect(await ensurePgSchema(pool, { schema })).toBe("exists");
			expect(await ensurePgSchema(pool, { schema, table: "second" })).toBe("created");
			const tables = await pool.query(
				"SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY tablename",
				[schema],
			);
			expect(tables.rows.map((r) => r.tablename)).toEqual([
				"second",
				"second_fences",
				"vvm_ttl",
				"vvm_ttl_fences",
			]);
			const indexes = await pool.query(
				"SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'vvm_ttl' ORDER BY 1",
				[schema],
			);
			expect(indexes.rows.map((r) => r.indexname)).toEqual(["vvm_ttl_expire_at", "vvm_ttl_pkey"]);
			expect(pgSchemaStatements({ schema })).toHaveLength(4);
			const a = createPgTTLStorage({ pool, schema });
			const b = createPgTTLStorage({ pool, schema, table: "second" });
			await a.put(utf8("p"), utf8("k"), utf8("a"));
			expect(await b.get(utf8("p"), utf8("k"))).toBeUndefined();
			await a.raiseFence?.(utf8("scope"), 5n);
			expect(await b.raiseFence?.(utf8("scope"))).toBe(1n);
		} finally {
			await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await pool.end();
		}
	});

	it("an existing table of another shape is TTLSTORAGE_FAILED, naming its columns", async () => {
		const schema = uniqueSchema("vvm_shape");
		const pool = newPool();
		try {
			await pool.query(`CREATE SCHEMA "${schema}"`);
			await pool.query(`CREATE TABLE "${schema}".vvm_ttl (p_key bytea, value text)`);
			const error = await rejection(ensurePgSchema(pool, { schema }));
			expect(error.code).toBe("TTLSTORAGE_FAILED");
			expect(error.message).toMatch(/exists with columns \(p_key:bytea,value:text\)/);
		} finally {
			await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			await pool.end();
		}
	});

	it("a storage whose tables do not exist rejects with TTLSTORAGE_FAILED and says to run ensurePgSchema", async () => {
		const pool = newPool();
		try {
			const storage = createPgTTLStorage({ pool, schema: uniqueSchema("vvm_none") });
			const error = await rejection(storage.get(utf8("p"), utf8("k")));
			expect(error.code).toBe("TTLSTORAGE_FAILED");
			expect(error.message).toMatch(/42P01.*ensurePgSchema/);
		} finally {
			await pool.end();
		}
	});
});
