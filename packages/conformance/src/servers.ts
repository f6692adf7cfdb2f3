// The real servers of the matrix (tooling/servers): their gates, and one Cassandra keyspace,
// DynamoDB table, PostgreSQL schema or Redis key prefix per test file, unique per run and dropped
// afterwards.
import { randomBytes } from "node:crypto";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { DYNAMO_CLIENT_OPTIONS, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { ensurePgSchema } from "@vvm/ttlstorage-pg";
import { REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import { cassandraEnv, dynamoEnv, postgresEnv, redisEnv } from "@vvm/vitest-config/servers";
import { Client } from "cassandra-driver";
import { Redis } from "ioredis";
import pg from "pg";
import type { ServerSetup } from "./matrix.ts";

// Skip with the reason and the start command when the server is down; fail instead in CI or
// when CASSANDRA_TESTS_ENABLED / DYNAMODB_TESTS_ENABLED / PG_TESTS_ENABLED / REDIS_TESTS_ENABLED is set.
export {
	cassandraGate,
	dynamoGate,
	postgresGate,
	redisGate,
} from "@vvm/vitest-config/servers";

/**
 * A name no other test file of any run uses (lower-case letters, digits and `_`, which both
 * Cassandra keyspaces and DynamoDB tables accept): the process, the time, and random bytes, since
 * the files of one worker share its process.
 */
function uniqueName(prefix: string): string {
	return `${prefix}_${process.pid.toString(36)}${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
}

/** The file's Cassandra client (connected) and keyspace (with the driver's table). */
export interface CassandraServer {
	readonly client: Client;
	readonly keyspace: string;
}

/** A keyspace (SimpleStrategy RF 1) on the single node, dropped with its client afterwards. */
export const cassandraKeyspace: ServerSetup<CassandraServer> = {
	async open() {
		const client = new Client(cassandraEnv());
		const keyspace = uniqueName("vvm_matrix");
		try {
			await client.connect();
			await ensureCassandraSchema(client, { keyspace });
		} catch (error) {
			await client.shutdown();
			throw error;
		}
		return { client, keyspace };
	},
	async close({ client, keyspace }) {
		try {
			await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
		} finally {
			await client.shutdown();
		}
	},
};

/** The file's DynamoDB Local client and table. */
export interface DynamoServer {
	readonly client: DynamoDBClient;
	readonly tableName: string;
}

/** A table on DynamoDB Local, deleted with its client afterwards. */
export const dynamoTable: ServerSetup<DynamoServer> = {
	async open() {
		const client = new DynamoDBClient({ ...dynamoEnv(), ...DYNAMO_CLIENT_OPTIONS });
		const tableName = uniqueName("vvm_matrix");
		try {
			// A generous request timeout: DynamoDB Local shares a saturated CI machine with the chaos
			// runs (a CreateTable took over the 5 s default there once).
			await ensureDynamoTTLTable(client, tableName, { requestTimeoutMs: 60_000 });
		} catch (error) {
			client.destroy();
			throw error;
		}
		return { client, tableName };
	},
	async close({ client, tableName }) {
		try {
			await client.send(new DeleteTableCommand({ TableName: tableName }));
		} finally {
			client.destroy();
		}
	},
};

/** The file's PostgreSQL pool and schema (with the driver's default table and `vvm_ttl_real`). */
export interface PostgresServer {
	readonly pool: pg.Pool;
	readonly schema: string;
}

/**
 * A schema on the repository's PostgreSQL (node-postgres' `PG*` variables, else
 * `postgresEnv()`), dropped with the pool afterwards. Two tables: the mock-clock configurations
 * and the database-clock ones never meet each other's records (or sweeps).
 */
export const postgresSchema: ServerSetup<PostgresServer> = {
	async open() {
		const pool = new pg.Pool({ ...postgresEnv(), max: 20 });
		pool.on("error", () => {}); // a broken idle connection is replaced
		const schema = uniqueName("vvm_matrix");
		try {
			await ensurePgSchema(pool, { schema });
			await ensurePgSchema(pool, { schema, table: "vvm_ttl_real" });
		} catch (error) {
			await pool.end();
			throw error;
		}
		return { pool, schema };
	},
	async close({ pool, schema }) {
		try {
			await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
		} finally {
			await pool.end();
		}
	},
};

/** The file's Redis client (connected, with the driver's client options) and key prefix. */
export interface RedisServer {
	readonly client: Redis;
	readonly keyPrefix: string;
}

/**
 * A key prefix on the repository's Redis (`REDIS_URL`, else `redisEnv()`), its keys deleted with
 * the client afterwards. The mock-clock configurations use `<prefix>`, the server-clock one
 * `<prefix>real:`: they never meet each other's records (or sweeps).
 */
export const redisPrefix: ServerSetup<RedisServer> = {
	async open() {
		const client = new Redis(redisEnv().url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
		client.on("error", () => {}); // a broken connection is reconnected
		try {
			await client.connect();
		} catch (error) {
			client.disconnect();
			throw error;
		}
		return { client, keyPrefix: `${uniqueName("vvm_matrix")}:` };
	},
	async close({ client, keyPrefix }) {
		try {
			// The driver's keys hold binary bytes: scanned and deleted as buffers (as strings, a key
			// with bytes that are not UTF-8 would be deleted under another name, and stay).
			let cursor = "0";
			do {
				const [next, keys] = await client.scanBuffer(
					cursor,
					"MATCH",
					`${keyPrefix}*`,
					"COUNT",
					1000,
				);
				cursor = String(next);
				if (keys.length > 0) await client.del(...keys);
			} while (cursor !== "0");
		} finally {
			client.disconnect();
		}
	},
};
