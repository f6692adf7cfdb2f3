import { TTLStorageError } from "@vvm/ttlstorage";
import { DRIVER_NAME, isConnectionError, mapPgError } from "./errors.ts";
import { validatePgIdentifier } from "./names.ts";
import type { PgPool, PgPoolClient } from "./pool.ts";
import { guardConnection, guardConnections } from "./pool.ts";

/** Default schema. */
export const DEFAULT_SCHEMA = "public";
/** Default table name (its fences live in `<table>_fences`). */
export const DEFAULT_TABLE = "vvm_ttl";

/** Options of {@link ensurePgSchema}. */
export interface PgSchemaOptions {
	/** Schema to create if missing; default `"public"`. Rule: {@link validatePgIdentifier}. */
	readonly schema?: string;
	/** Table to create if missing; default `"vvm_ttl"`. Rule: {@link validatePgIdentifier}. */
	readonly table?: string;
	/**
	 * Accept a session whose commits are acknowledged before they are durable
	 * (`synchronous_commit = off`, or a server with `fsync = off`). Default `false`: such a
	 * session is refused, since a server crash then loses acknowledged writes (a raised fence, a
	 * lease, an event). For benchmarks and diagnostics only.
	 */
	readonly allowAsyncCommit?: boolean;
}

/** The names a storage and its schema use, validated (a `RangeError` before any I/O). @internal */
export function resolveNames(options: PgSchemaOptions): { schema: string; table: string } {
	const schema = options.schema ?? DEFAULT_SCHEMA;
	const table = options.table ?? DEFAULT_TABLE;
	validatePgIdentifier("schema", schema);
	validatePgIdentifier("table", table);
	return { schema, table };
}

/**
 * The statements {@link ensurePgSchema} runs (inside one transaction, after taking an advisory
 * lock), for review or for migration tools:
 * - the records: `p_key`, `c_cols`, `value` (`bytea`), `expire_at` (`int8`, ms since the Unix epoch
 *   by the database's clock, `NULL` = never), and the fenced writer's `f_epoch` and `f_seq`;
 * - a partial index on `expire_at` for the sweep of expired records;
 * - the fences: one row per scope with its raised `epoch`.
 *
 * @example
 * ```ts
 * for (const sql of pgSchemaStatements({ schema: "vvm" })) console.log(`${sql};`);
 * ```
 */
export function pgSchemaStatements(options: PgSchemaOptions = {}): readonly string[] {
	const { schema, table } = resolveNames(options);
	const s = `"${schema}"`;
	return [
		`CREATE SCHEMA IF NOT EXISTS ${s}`,
		`CREATE TABLE IF NOT EXISTS ${s}."${table}" (p_key bytea NOT NULL, c_cols bytea NOT NULL, value bytea NOT NULL, expire_at int8, f_epoch int8, f_seq int8, PRIMARY KEY (p_key, c_cols))`,
		`CREATE INDEX IF NOT EXISTS "${table}_expire_at" ON ${s}."${table}" (expire_at) WHERE expire_at IS NOT NULL`,
		`CREATE TABLE IF NOT EXISTS ${s}."${table}_fences" (scope bytea PRIMARY KEY, epoch int8 NOT NULL CHECK (epoch >= 0))`,
	];
}

/** The columns each table must have, as `name:type` (information_schema's `data_type`). */
const RECORD_COLUMNS =
	"c_cols:bytea,expire_at:bigint,f_epoch:bigint,f_seq:bigint,p_key:bytea,value:bytea";
const FENCE_COLUMNS = "epoch:bigint,scope:bytea";

/**
 * One key for every `ensurePgSchema` of this package (`pg_advisory_xact_lock(int8)`): the first
 * eight bytes of sha1("@vvm/ttlstorage-pg ensurePgSchema"), so concurrent callers take turns.
 */
const SCHEMA_LOCK_KEY = "-7541107719955533756";

/**
 * Creates the schema, the records table (with its expiry index) and the fences table unless they
 * exist, and checks the columns of tables that did. Safe to run from several processes at once: one
 * transaction under a transaction-scoped advisory lock, so concurrent callers take turns instead of
 * racing `CREATE … IF NOT EXISTS` (which can fail on a unique violation of the catalog). Names are
 * validated with a `RangeError` before any I/O; server errors reject with a `TTLStorageError`
 * (`TTLSTORAGE_FAILED` when an existing table has other columns).
 *
 * @returns `"created"` when this call created the records table, `"exists"` when it was there.
 * @example
 * ```ts
 * import pg from "pg";
 * import { createPgTTLStorage, ensurePgSchema } from "@vvm/ttlstorage-pg";
 * const pool = new pg.Pool(); // PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE
 * await ensurePgSchema(pool, { schema: "vvm" });
 * const storage = createPgTTLStorage({ pool, schema: "vvm" });
 * ```
 */
export async function ensurePgSchema(
	pool: PgPool,
	options: PgSchemaOptions = {},
): Promise<"created" | "exists"> {
	if (typeof options !== "object" || options === null)
		throw new TypeError("[@vvm/ttlstorage-pg] options must be an object");
	if (options.allowAsyncCommit !== undefined && typeof options.allowAsyncCommit !== "boolean")
		throw new TypeError("[@vvm/ttlstorage-pg] allowAsyncCommit must be a boolean");
	const statements = pgSchemaStatements(options);
	const { schema, table } = resolveNames(options);
	if (typeof pool?.connect !== "function")
		throw new TypeError("[@vvm/ttlstorage-pg] pool must be a node-postgres Pool");
	const operation = "ensurePgSchema";
	let client: PgPoolClient;
	guardConnections(pool);
	try {
		client = await pool.connect();
	} catch (error) {
		throw mapPgError(error, { operation, phase: "connect" });
	}
	let broken: unknown;
	guardConnection(client); // the statement that fails reports it
	try {
		const q = (text: string, values: unknown[] = []) => client.query({ text, values });
		await q("BEGIN");
		try {
			if (options.allowAsyncCommit !== true) await refuseAsyncCommit(q, operation);
			await q("SELECT pg_advisory_xact_lock($1::int8)", [SCHEMA_LOCK_KEY]);
			const before = await q("SELECT to_regclass($1) IS NOT NULL AS present", [
				`"${schema}"."${table}"`,
			]);
			const existed = before.rows[0]?.present === true;
			// CREATE SCHEMA needs the CREATE privilege on the database even when the schema exists.
			const hasSchema = await q("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
			const check = async (suffix: string, want: string): Promise<void> => {
				const columns = await q(
					`SELECT string_agg(column_name || ':' || data_type, ',' ORDER BY column_name) AS got
					FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2`,
					[schema, `${table}${suffix}`],
				);
				const got = columns.rows[0]?.got;
				if (got !== want)
					throw new TTLStorageError(
						"TTLSTORAGE_FAILED",
						`table ${schema}.${table}${suffix} exists with columns (${String(got)}); expected (${want})`,
						{ driver: DRIVER_NAME, operation },
					);
			};
			const [createSchema, createTable, createIndex, createFences] = statements as [
				string,
				string,
				string,
				string,
			];
			if (hasSchema.rows.length === 0) await q(createSchema);
			await q(createTable);
			await check("", RECORD_COLUMNS);
			await q(createIndex);
			await q(createFences);
			await check("_fences", FENCE_COLUMNS);
			await q("COMMIT");
			return existed ? "exists" : "created";
		} catch (error) {
			await q("ROLLBACK").catch(() => {});
			throw error;
		}
	} catch (error) {
		if (!TTLStorageError.is(error) && isConnectionError(error)) broken = error;
		throw mapPgError(error, { operation, phase: "write" });
	} finally {
		client.release(broken instanceof Error ? broken : broken !== undefined);
	}
}

/**
 * Refuses a session whose commits are acknowledged before they are durable (found by review:
 * nothing checked it, and `PGOPTIONS`, the pool's `options` or `ALTER ROLE … SET` can turn it off).
 * `local`, `remote_write`, `remote_apply` and `on` all flush the WAL here before answering.
 */
async function refuseAsyncCommit(
	q: (text: string) => Promise<{ readonly rows: ReadonlyArray<Record<string, unknown>> }>,
	operation: string,
): Promise<void> {
	const r = await q(
		"SELECT current_setting('synchronous_commit') AS commit, current_setting('fsync') AS fsync",
	);
	const commit = String(r.rows[0]?.commit);
	const fsync = String(r.rows[0]?.fsync);
	if (commit !== "off" && fsync !== "off") return;
	throw new TTLStorageError(
		"TTLSTORAGE_FAILED",
		`${commit === "off" ? "synchronous_commit" : "fsync"} is off for this session: a commit is answered before its WAL is on disk, so a server crash can lose acknowledged writes (a raised fence, a lease, an event). Turn it on (postgresql.conf, ALTER ROLE … SET, PGOPTIONS), or pass allowAsyncCommit: true for a benchmark`,
		{ driver: DRIVER_NAME, operation },
	);
}
