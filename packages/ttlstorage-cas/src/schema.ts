import { createHash } from "node:crypto";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { DRIVER_NAME, mapCassandraError } from "./errors.ts";
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
	/**
	 * How long {@link ensureCassandraSchema} waits, after a statement that changed the schema, for
	 * every node to report the same schema version before it gives up with
	 * `TTLSTORAGE_UNAVAILABLE`; default 120 000 ms. `cassandra-driver` waits
	 * `maxSchemaAgreementWaitSeconds` (10 s) and then returns as if all was well.
	 */
	readonly schemaAgreementTimeoutMs?: number;
	/**
	 * Accept nodes whose `commitlog_sync` is `periodic` (Cassandra's default), which acknowledge a
	 * write before its commit log is on disk: when the replicas of a quorum crash together (a power
	 * cut), an acknowledged write (a lease, a raised fence) can be lost. Default `false`: such a
	 * node is refused with `TTLSTORAGE_FAILED`. For tests and benchmarks on a server that cannot
	 * crash that way.
	 */
	readonly allowPeriodicCommitlog?: boolean;
}

const DEFAULT_SCHEMA_AGREEMENT_TIMEOUT_MS = 120_000;
/** Between two checks of the nodes' schema versions while they disagree. */
const SCHEMA_AGREEMENT_POLL_MS = 250;

/**
 * Namespace of the table IDs below. Fixed forever: another value would give another ID to every
 * table, and a racer of an older version would then create a second table again.
 */
const TABLE_ID_NAMESPACE = "424e46e0-5c00-4206-8841-7d915876bb85";

/**
 * The table ID every caller gives `keyspace.table`: a name-based UUID (version 5) of the two
 * names. Cassandra (before 5.1's transactional metadata) lets each coordinator create a table of
 * its own when `CREATE TABLE IF NOT EXISTS` runs on several at once, each with an ID of its own;
 * the nodes then keep one and drop the others, with whatever was written to them. With one ID
 * for all, the racers' tables are the same table. Cassandra names its own distributed system
 * tables the same way, for the same reason.
 */
function tableIdOf(keyspace: string, table: string): string {
	const hash = createHash("sha1")
		.update(Buffer.from(TABLE_ID_NAMESPACE.replaceAll("-", ""), "hex"))
		.update(`${keyspace}.${table}`, "utf8")
		.digest();
	const b = hash.subarray(0, 16);
	b[6] = ((b[6] ?? 0) & 0x0f) | 0x50; // version 5
	b[8] = ((b[8] ?? 0) & 0x3f) | 0x80; // RFC 4122 variant
	const hex = b.toString("hex");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
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
 * The table is created `WITH ID` a UUID derived from the keyspace and table names, so that
 * processes creating it at once through different nodes create one table, not one each.
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
		`CREATE TABLE IF NOT EXISTS ${options.keyspace}.${table} (p_key blob, c_col blob, value blob, ${FENCE_STAMP_COLUMN} bigint, PRIMARY KEY ((p_key), c_col)) WITH ID = '${tableIdOf(options.keyspace, table)}'`,
		// Tables created before fenced writes became lightweight transactions (issue 32).
		`ALTER TABLE ${options.keyspace}.${table} ADD IF NOT EXISTS ${FENCE_STAMP_COLUMN} bigint`,
	];
}

/**
 * Creates the keyspace and the table if they do not exist, and adds the `fence_stamp` column to a
 * table created by an earlier version; safe to call again (an existing keyspace keeps its
 * replication, an existing table its options), and safe to call from several processes at once
 * (one table ID for all, see {@link cassandraSchemaStatements}). After each statement it waits
 * until every node the client is connected to reports the same schema version, for up to
 * `schemaAgreementTimeoutMs`, so a caller never writes through a node that does not know the
 * table yet (a node that is down is not waited for: it takes the schema from the others when it
 * comes back). Options are validated with a `TypeError`/`RangeError` before any I/O; server
 * errors reject with a `TTLStorageError`, and nodes still disagreeing at the deadline with
 * `TTLSTORAGE_UNAVAILABLE` (the call can be repeated).
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
	const timeoutMs = options.schemaAgreementTimeoutMs ?? DEFAULT_SCHEMA_AGREEMENT_TIMEOUT_MS;
	if (!Number.isInteger(timeoutMs) || timeoutMs < 1) {
		throw new RangeError(
			`[@vvm/ttlstorage-cas] schemaAgreementTimeoutMs must be a positive integer (milliseconds), got ${String(timeoutMs)}`,
		);
	}
	if (
		options.allowPeriodicCommitlog !== undefined &&
		typeof options.allowPeriodicCommitlog !== "boolean"
	) {
		throw new TypeError("[@vvm/ttlstorage-cas] allowPeriodicCommitlog must be a boolean");
	}
	if (typeof client?.execute !== "function") {
		throw new TypeError("[@vvm/ttlstorage-cas] client must be a cassandra-driver Client");
	}
	if (options.allowPeriodicCommitlog !== true) await refusePeriodicCommitlog(client);
	for (const cql of statements) {
		try {
			await client.execute(cql);
		} catch (error) {
			throw mapCassandraError(error, { operation: "ensureCassandraSchema", kind: "write" });
		}
		await waitForSchemaAgreement(client, timeoutMs, cql);
	}
}

/**
 * Refuses nodes that acknowledge writes before their commit log is on disk (found by review:
 * nothing checked it, and Cassandra's default is `periodic`). Reads `commitlog_sync` from
 * `system_views.settings` (Cassandra 4.0+), a node-local virtual table, on every node the client
 * is connected to and that is up; with none known (a client that does not report its hosts), on
 * the coordinator the client picks. Nodes the client is not connected to (down, or in a data
 * centre its load-balancing policy ignores) are not checked. `batch` and `group` pass.
 */
async function refusePeriodicCommitlog(client: Client): Promise<void> {
	const cql = "SELECT value FROM system_views.settings WHERE name = 'commitlog_sync'";
	const hosts = [...(client.getState?.().getConnectedHosts() ?? [])].filter((h) => h.isUp());
	const targets: Array<{ address: string; options: object }> =
		hosts.length > 0
			? hosts.map((host) => ({ address: host.address, options: { host, isIdempotent: true } }))
			: [{ address: "the coordinator", options: { isIdempotent: true } }];
	const periodic: string[] = [];
	for (const target of targets) {
		let mode: string;
		try {
			const result = await client.execute(cql, [], target.options);
			mode = String(result.first?.()?.get("value") ?? result.rows?.[0]?.get("value") ?? "");
		} catch (error) {
			throw new TTLStorageError(
				"TTLSTORAGE_FAILED",
				`cannot read commitlog_sync from system_views.settings on ${target.address} (Cassandra 4.0 or later is needed): ${error instanceof Error ? error.message : String(error)}; check it is batch or group, then pass allowPeriodicCommitlog: true to skip the check`,
				{ driver: DRIVER_NAME, operation: "ensureCassandraSchema", cause: error },
			);
		}
		if (mode === "" || mode.toLowerCase() === "periodic")
			periodic.push(`${target.address} (${mode || "unset"})`);
	}
	if (periodic.length === 0) return;
	throw new TTLStorageError(
		"TTLSTORAGE_FAILED",
		`commitlog_sync is periodic on ${periodic.join(", ")}: such a node acknowledges a write before its commit log is on disk, so when the replicas of a quorum crash together (a power cut) an acknowledged write, a lease or a raised fence, can be lost. Set commitlog_sync: batch (or group with a small commitlog_sync_group_window) in cassandra.yaml on every node, or pass allowPeriodicCommitlog: true for a test or benchmark server`,
		{ driver: DRIVER_NAME, operation: "ensureCassandraSchema" },
	);
}

/**
 * Waits until the nodes the client is connected to report one schema version (monotonic
 * deadline). Not `cassandra-driver`'s own wait: it gives up after `maxSchemaAgreementWaitSeconds`
 * and returns as if all was well, and it counts nodes that are down, with the version they had.
 */
async function waitForSchemaAgreement(
	client: Client,
	timeoutMs: number,
	cql: string,
): Promise<void> {
	const deadline = performance.now() + timeoutMs;
	for (;;) {
		const versions = new Map<string, string>();
		let failure: unknown;
		for (const host of client.getState().getConnectedHosts()) {
			if (!host.isUp()) continue;
			try {
				const result = await client.execute("SELECT schema_version FROM system.local", [], {
					host,
					isIdempotent: true,
				});
				versions.set(host.address, String(result.first()?.get("schema_version")));
			} catch (error) {
				failure = error;
				versions.set(host.address, "(no answer)");
			}
		}
		if (failure === undefined && new Set(versions.values()).size <= 1) return;
		const left = deadline - performance.now();
		if (left <= 0) {
			const seen = [...versions].map(([host, version]) => `${host} ${version}`).join(", ");
			throw new TTLStorageError(
				"TTLSTORAGE_UNAVAILABLE",
				`the nodes still report different schema versions ${timeoutMs} ms after \`${cql.slice(0, 60)}…\` (${seen}; see \`nodetool describecluster\`); run it again once they agree`,
				{ driver: DRIVER_NAME, operation: "ensureCassandraSchema", cause: failure },
			);
		}
		await new Promise((resolve) => setTimeout(resolve, Math.min(SCHEMA_AGREEMENT_POLL_MS, left)));
	}
}
