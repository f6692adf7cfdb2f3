// The published PostgreSQL driver against the published suites, on the real server, with the pg
// version the rehearsal installed: on the suites' mock clock, and on the database's clock.
import { electionsTestSuite } from "@vvm/ielections/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createPgTTLStorage, ensurePgSchema } from "@vvm/ttlstorage-pg";
import pg from "pg";
import { afterAll, beforeAll } from "vitest";

const pool = new pg.Pool({
	host: process.env.PGHOST ?? "127.0.0.1",
	port: Number(process.env.PGPORT ?? 54329),
	user: process.env.PGUSER ?? "vvm",
	database: process.env.PGDATABASE ?? "vvm",
});
pool.on("error", () => {});
const mock = `vvm_compat_${process.pid}_${Date.now().toString(36)}`;
const real = `${mock}_real`;
beforeAll(async () => {
	await ensurePgSchema(pool, { schema: mock });
	await ensurePgSchema(pool, { schema: real });
});
afterAll(async () => {
	await pool.query(`DROP SCHEMA IF EXISTS "${mock}" CASCADE`);
	await pool.query(`DROP SCHEMA IF EXISTS "${real}" CASCADE`);
	await pool.end();
});
ttlStorageTestSuite("compat: ttlstorage-pg", {
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	createStorage: ({ clock }) => createPgTTLStorage({ pool, schema: mock, clock }),
});
ttlStorageTestSuite("compat: ttlstorage-pg (database clock)", {
	time: "real",
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	createStorage: () => createPgTTLStorage({ pool, schema: real }),
});
electionsTestSuite("compat: ttlstorage-pg", {
	createStorage: ({ clock }) => createPgTTLStorage({ pool, schema: mock, clock }),
});
