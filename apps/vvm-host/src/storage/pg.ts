// --storage pg: PostgreSQL. Without --pg-url, node-postgres reads PGHOST, PGPORT, PGUSER,
// PGPASSWORD and PGDATABASE itself (its defaults otherwise).
import { validatePgIdentifier, validatePgTTLStorageOptions } from "@vvm/ttlstorage-pg";
import { ConfigError, integer, nonEmpty } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import {
	load,
	message,
	STARTUP_REQUEST_TIMEOUT_MS,
	StorageOpenError,
	untilStopped,
	within,
} from "./entry.ts";
import { maskUserinfo } from "./mask-url.ts";

interface PgSettings {
	readonly url: string | undefined;
	readonly schema: string;
	readonly table: string;
	readonly writesInFlight: number | undefined;
	readonly readsInFlight: number | undefined;
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
			`${source} must be a postgres:// URL such as postgres://vvm@127.0.0.1:54329/vvm, got "${maskUserinfo(raw)}"`,
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
	// A partition's next create rides in its predecessor's group statement as a link (the driver's
	// "Links"): 16 clients over 10 partitions, level 0, 3 482 creates/s against 2 500 at 1.
	defaultPipelineDepth: 8,
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
		{
			key: "writesInFlight",
			flag: "pg-writes-in-flight",
			env: ["VVM_PG_WRITES_IN_FLIGHT"],
			def: undefined,
			parse: integer,
			help: "pg: group statements at the server at once (the driver's writesInFlight, >= 1; default 1 with --pipeline-depth above 1, else the driver's 2); writes arriving meanwhile go together in the next one",
		},
		{
			// The driver's 1 unless given. A cold workspace's first command reads its numbers, then
			// its log past them; 2 let the second read skip the wait for the statement before it.
			// Six alternating pairs of runs (16 clients, 2026-11-28): cold creates/s at 2 against 1,
			// medians, level 0 3 598 against 3 489 and level 2 3 692 against 3 465, faster in 9 of 12
			// pairs; warm and statements per create alike. Within this machine's noise: not the default.
			key: "readsInFlight",
			flag: "pg-reads-in-flight",
			env: ["VVM_PG_READS_IN_FLIGHT"],
			def: undefined,
			parse: integer,
			help: "pg: read statements at the server at once (the driver's readsInFlight, >= 1; default the driver's 1); reads arriving meanwhile go together in the next one",
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
		for (const what of ["writesInFlight", "readsInFlight"] as const) {
			const value = settings[what] as number | undefined;
			try {
				validatePgTTLStorageOptions(value === undefined ? {} : { [what]: value });
			} catch (error) {
				const rule = error instanceof Error ? error.message.replace(/^\[[^\]]*\] /, "") : "";
				throw new ConfigError(`${name(what)}: ${rule}`);
			}
		}
	},
	// Pipelined numbering: the creates of a partition ride as links in one group statement, so one
	// statement at a time makes the groups larger (16 clients, level 0, depth 8, two rounds: 3 345
	// creates/s and 139 µs of PostgreSQL CPU per create against 3 125 and 202 at 2, cold 1 439
	// against 1 141; level 2: 3 331 and 134 against 3 383 and 182, cold 1 399 against 1 238). At
	// depth 1 nothing is linked and the driver's 2 at once is faster (level 2: 2 499 against 1 989).
	// Again on 2026-11-28, level 0 warm, two alternating pairs: 5 130 and 5 393 at 1, 4 340 and
	// 4 310 at 2 (PostgreSQL CPU 129 and 120 µs per create against 166 and 172).
	tune(settings, cp) {
		if (settings.writesInFlight !== undefined || cp.pipelineDepth === 1) return settings;
		return { ...settings, writesInFlight: 1 };
	},
	async open(settings, signal, logger) {
		const s = settings as unknown as PgSettings;
		const [pg, { createPgTTLStorage, ensurePgSchema }] = await Promise.all([
			load("pg", "pg storage", () => import("pg")),
			load("@vvm/ttlstorage-pg", "pg storage", () => import("@vvm/ttlstorage-pg")),
		]);
		const Pool = (pg as unknown as { default?: typeof pg }).default?.Pool ?? pg.Pool;
		const pool = new Pool({
			...(s.url === undefined ? {} : { connectionString: s.url }),
			max: 20,
			// A server that accepts and never answers held the start-up (and a stop request, which
			// waited for the undo) for good (found by review). Only taking a connection is bounded:
			// a write that waited for one failed before it was sent ("unavailable", nothing
			// written); no query_timeout, which would make a sent write "unknown" on the client's clock.
			connectionTimeoutMillis: STARTUP_REQUEST_TIMEOUT_MS,
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
			await within(pool.end());
			if (signal?.aborted) throw signal.reason;
			throw new StorageOpenError(`pg storage: cannot use ${at}: ${message(error)}`, {
				cause: error,
			});
		}
		const driver = createPgTTLStorage({
			pool,
			schema: s.schema,
			table: s.table,
			...(s.writesInFlight === undefined ? {} : { writesInFlight: s.writesInFlight }),
			...(s.readsInFlight === undefined ? {} : { readsInFlight: s.readsInFlight }),
			...(logger === undefined ? {} : { logger }),
		});
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
