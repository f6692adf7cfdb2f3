import type { Client } from "cassandra-driver";
import { mapCassandraError } from "./errors.ts";
import { validateCassandraIdentifier } from "./names.ts";
import { FENCE_STAMP_COLUMN } from "./statements.ts";

/** Default table name. */
export const DEFAULT_TABLE = "ttl_values";

/** Replication map of `CREATE KEYSPACE`, e.g. `{ class: "NetworkTopologyStrategy", dc1: 3 }`. */
export type CassandraReplication = Readonly<Record<string, string | number>>;

/** Options of {@link ensureCassandraSchema}. */
export interface CassandraSchemaOptions {
	/** Keyspace to create if missing. */
	readonly keyspace: string;
	/** Table to create if missing; default `"ttl_values"`. */
	readonly table?: string;
	/**
	 * Replication of a new keyspace; default `{ class: "SimpleStrategy", replication_factor: 1 }`
	 * (development only: use `NetworkTopologyStrategy` with RF 3 in production). An existing
	 * keyspace keeps its replication.
	 */
	readonly replication?: CassandraReplication;
}

const quote = (s: string): string => `'${s.replaceAll("'", "''")}'`;

/** The CQL map literal of a replication setting; throws a `TypeError`/`RangeError` on bad input. */
function replicationLiteral(replication: CassandraReplication): string {
	if (typeof replication !== "object" || replication === null) {
		throw new TypeError("[@vvm/ttlstorage-cas] replication must be an object");
	}
	const entries = Object.entries(replication);
	if (typeof replication.class !== "string" || replication.class === "") {
		throw new RangeError(
			'[@vvm/ttlstorage-cas] replication needs a "class", e.g. "SimpleStrategy" or "NetworkTopologyStrategy"',
		);
	}
	const parts = entries.map(([key, value]) => {
		if (key === "")
			throw new RangeError("[@vvm/ttlstorage-cas] replication keys must not be empty");
		if (typeof value === "number") {
			if (!Number.isInteger(value) || value < 0) {
				throw new RangeError(
					`[@vvm/ttlstorage-cas] replication ${key} must be a non-negative integer, got ${value}`,
				);
			}
			return `${quote(key)}: ${value}`;
		}
		if (typeof value !== "string") {
			throw new TypeError(`[@vvm/ttlstorage-cas] replication ${key} must be a string or a number`);
		}
		return `${quote(key)}: ${quote(value)}`;
	});
	return `{${parts.join(", ")}}`;
}

/**
 * The statements {@link ensureCassandraSchema} runs, for review or for migration tools: the
 * keyspace, the table, and the `fence_stamp` column for a table created by an earlier version.
 */
export function cassandraSchemaStatements(options: CassandraSchemaOptions): readonly string[] {
	const table = options.table ?? DEFAULT_TABLE;
	validateCassandraIdentifier("keyspace", options.keyspace);
	validateCassandraIdentifier("table", table);
	const replication = replicationLiteral(
		options.replication ?? { class: "SimpleStrategy", replication_factor: 1 },
	);
	return [
		`CREATE KEYSPACE IF NOT EXISTS ${options.keyspace} WITH replication = ${replication}`,
		`CREATE TABLE IF NOT EXISTS ${options.keyspace}.${table} (p_key blob, c_col blob, value blob, ${FENCE_STAMP_COLUMN} bigint, PRIMARY KEY ((p_key), c_col))`,
		// Tables created before fenced writes became lightweight transactions (issue 32).
		`ALTER TABLE ${options.keyspace}.${table} ADD IF NOT EXISTS ${FENCE_STAMP_COLUMN} bigint`,
	];
}

/**
 * Creates the keyspace and the table if they do not exist, and adds the `fence_stamp` column to a
 * table created by an earlier version; safe to call again (an existing keyspace keeps its
 * replication, an existing table its options). Names are validated with a
 * `RangeError` before any I/O; server errors reject with a `TTLStorageError`. `cassandra-driver`
 * waits for schema agreement after each statement.
 *
 * @example
 * ```ts
 * await ensureCassandraSchema(client, { keyspace: "sysvvm" });
 * const storage = createCassandraTTLStorage({ client, keyspace: "sysvvm" });
 * ```
 */
export async function ensureCassandraSchema(
	client: Client,
	options: CassandraSchemaOptions,
): Promise<void> {
	const statements = cassandraSchemaStatements(options);
	if (typeof client?.execute !== "function") {
		throw new TypeError("[@vvm/ttlstorage-cas] client must be a cassandra-driver Client");
	}
	for (const cql of statements) {
		try {
			await client.execute(cql);
		} catch (error) {
			throw mapCassandraError(error, { operation: "ensureCassandraSchema", kind: "write" });
		}
	}
}
