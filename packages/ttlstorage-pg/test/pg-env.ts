// Shared set-up of the real-PostgreSQL test files: the gate, one pool and one schema per file.
// Connection settings are node-postgres' own PG* variables (PGHOST, PGPORT, PGUSER, PGPASSWORD,
// PGDATABASE); unset ones default to the server of tooling/servers/postgres (127.0.0.1:54329, role
// and database vvm, trust authentication).
import { postgresEnv, postgresGate } from "@vvm/vitest-config/servers";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";
import type { PgSchemaOptions } from "../src/index.ts";
import { ensurePgSchema } from "../src/index.ts";

/** The connection settings of the tests' server (the repository's servers helper). */
export const pgSettings: { host: string; port: number; user: string; database: string } =
	postgresEnv();

/** `false` when PostgreSQL is reachable, else the reason to skip; throws in CI instead of skipping. */
export const pgGate: () => Promise<false | string> = postgresGate;

/** A pool for the tests' server (the caller ends it); idle connections that break are dropped. */
export function newPool(extra: pg.PoolConfig = {}): pg.Pool {
	const pool = new pg.Pool({ ...pgSettings, ...extra });
	pool.on("error", () => {});
	return pool;
}

let counter = 0;
/** A schema name unique to this run. */
export function uniqueSchema(prefix: string): string {
	return `${prefix}_${process.pid.toString(36)}${Date.now().toString(36)}${(++counter).toString(36)}`;
}

export interface PgFixture {
	/** The file's pool. */
	readonly pool: pg.Pool;
	/** The file's schema (unique per run, dropped in `afterAll`), with the default tables. */
	readonly schema: string;
}

/**
 * Registers `beforeAll`/`afterAll` that open one pool, create one schema unique to this run with the
 * default tables, and drop it again. Does nothing when `skip` is a reason.
 */
export function usePgSchema(
	prefix: string,
	skip: false | string,
	options: Omit<PgSchemaOptions, "schema"> = {},
): () => PgFixture {
	const schema = uniqueSchema(prefix);
	let pool: pg.Pool | undefined;
	if (!skip) {
		beforeAll(async () => {
			pool = newPool();
			await ensurePgSchema(pool, { schema, ...options });
		});
		afterAll(async () => {
			if (pool === undefined) return;
			try {
				await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
			} finally {
				await pool.end();
			}
		});
	}
	return () => {
		if (pool === undefined) throw new Error("the PostgreSQL pool is not open");
		return { pool, schema };
	};
}
