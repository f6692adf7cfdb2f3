// --storage pg: PostgreSQL. Without --pg-url, node-postgres reads PGHOST, PGPORT, PGUSER,
// PGPASSWORD and PGDATABASE itself (its defaults otherwise).
import { validatePgIdentifier } from "@vvm/ttlstorage-pg";
import { ConfigError, nonEmpty } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import { load, message, StorageOpenError, untilStopped } from "./entry.ts";

interface PgSettings {
	readonly url: string | undefined;
	readonly schema: string;
	readonly table: string;
}

/** A statement that waits longer (a lock held by a stuck peer) fails instead of hanging a lease. */
const STATEMENT_TIMEOUT_MS = 5_000;

const postgresUrl = (raw: string, source: string): string => {
	let protocol = "";
	try {
		protocol = new URL(raw).protocol;
	} catch {}
	if (protocol !== "postgres:" && protocol !== "postgresql:")
		throw new ConfigError(
			`${source} must be a postgres:// URL such as postgres://vvm@127.0.0.1:54329/vvm, got "${raw.replace(/:[^:@/]*@/, ":***@")}"`,
		);
	return raw;
};

/** Where the pool connects, for the logs (never the password). */
function where(s: PgSettings): string {
	if (s.url !== undefined) {
		const u = new URL(s.url);
		return `${u.host}${u.pathname} table ${s.schema}.${s.table}`;
	}
	const env = process.env;
	return `${env.PGHOST ?? "localhost"}:${env.PGPORT ?? "5432"}/${env.PGDATABASE ?? env.PGUSER ?? "(default)"} table ${s.schema}.${s.table}`;
}

/** The PostgreSQL storage: `--pg-url`, `--pg-schema`, `--pg-table`. */
export const pgStorage: StorageEntry = {
	kind: "pg",
	summary: "PostgreSQL",
	options: [
		{
			key: "url",
			flag: "pg-url",
			env: ["VVM_PG_URL"],
			def: undefined,
			parse: postgresUrl,
			help: "pg: connection URL, e.g. postgres://vvm@127.0.0.1:54329/vvm (default: node-postgres reads PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE)",
		},
		{
			key: "schema",
			flag: "pg-schema",
			env: ["VVM_PG_SCHEMA"],
			def: "public",
			parse: nonEmpty,
			help: "pg: schema of the table (created if missing)",
		},
		{
			key: "table",
			flag: "pg-table",
			env: ["VVM_PG_TABLE"],
			def: "vvm_ttl",
			parse: nonEmpty,
			help: "pg: table of the records (created if missing, with <table>_fences beside it)",
		},
	],
	check(settings, name) {
		for (const what of ["schema", "table"] as const) {
			try {
				validatePgIdentifier(what, settings[what]);
			} catch (error) {
				const rule = error instanceof Error ? error.message.replace(/^\[[^\]]*\] /, "") : "";
				throw new ConfigError(`${name(what)}: ${rule}`);
			}
		}
	},
	async open(settings, signal) {
		const s = settings as unknown as PgSettings;
		const [pg, { createPgTTLStorage, ensurePgSchema }] = await Promise.all([
			load("pg", "pg storage", () => import("pg")),
			load("@vvm/ttlstorage-pg", "pg storage", () => import("@vvm/ttlstorage-pg")),
		]);
		const Pool = (pg as unknown as { default?: typeof pg }).default?.Pool ?? pg.Pool;
		const pool = new Pool({
			...(s.url === undefined ? {} : { connectionString: s.url }),
			max: 20,
			statement_timeout: STATEMENT_TIMEOUT_MS,
			application_name: "vvm-host",
		});
		// A connection that breaks while idle is replaced by the pool; without a listener it would crash.
		pool.on("error", () => {});
		const at = where(s);
		try {
			await untilStopped(signal, ensurePgSchema(pool, { schema: s.schema, table: s.table }), () =>
				pool.end(),
			);
		} catch (error) {
			await pool.end().catch(() => {});
			if (signal?.aborted) throw signal.reason;
			throw new StorageOpenError(`pg storage: cannot use ${at}: ${message(error)}`, {
				cause: error,
			});
		}
		const driver = createPgTTLStorage({ pool, schema: s.schema, table: s.table });
		return {
			driver,
			location: at,
			close: async () => {
				await driver.close();
				await pool.end();
			},
		};
	},
};
