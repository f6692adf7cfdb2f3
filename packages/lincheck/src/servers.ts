// The real servers behind the fault proxy: per test file one Cassandra keyspace, DynamoDB table,
// PostgreSQL schema or Redis key prefix (unique per run, dropped afterwards), created over a direct connection;
// the driver under test talks to the server through the proxy, with short request timeouts.
import { randomBytes } from "node:crypto";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import {
	createDynamoTTLStorage,
	DYNAMO_CLIENT_OPTIONS,
	ensureDynamoTTLTable,
} from "@vvm/ttlstorage-dyn";
import { createPgTTLStorage, ensurePgSchema } from "@vvm/ttlstorage-pg";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import {
	cassandraEnv,
	dynamoEnv,
	hostPort,
	postgresEnv,
	redisEnv,
} from "@vvm/vitest-config/servers";
import { Client, policies } from "cassandra-driver";
import { Redis } from "ioredis";
import pg from "pg";
import type { FaultProxy } from "./fault-proxy.ts";
import { startFaultProxy } from "./fault-proxy.ts";

export {
	cassandraGate,
	dynamoGate,
	postgresGate,
	redisGate,
} from "@vvm/vitest-config/servers";

// The request timeout of every driver under test; holds last longer (late delivery).
const REQUEST_TIMEOUT_MS = 1_000;
const HOLD_MS = REQUEST_TIMEOUT_MS + 400;

/** A driver on a real server, behind a fault proxy. */
export interface ProxiedStorage {
	readonly storage: TTLStorage;
	readonly proxy: FaultProxy;
	/** Closes the storage, the proxy, and drops what the run created. */
	close(): Promise<void>;
}

/** A name no other run uses (letters, digits, `_`). */
function uniqueName(prefix: string): string {
	return `${prefix}_${process.pid.toString(36)}${Date.now().toString(36)}_${randomBytes(3).toString("hex")}`;
}

/** PostgreSQL (`postgresEnv()`) behind a proxy: a pool with `query_timeout`, a fresh schema. */
export async function proxiedPostgres(seed: number): Promise<ProxiedStorage> {
	const env = postgresEnv();
	const admin = new pg.Pool({ ...env, max: 2 });
	admin.on("error", () => {});
	const schema = uniqueName("vvm_lincheck");
	await ensurePgSchema(admin, { schema });
	const proxy = await startFaultProxy(env.host, env.port, { seed, holdMs: HOLD_MS });
	const pool = new pg.Pool({
		...env,
		host: "127.0.0.1",
		port: proxy.port,
		max: 8,
		query_timeout: REQUEST_TIMEOUT_MS,
		connectionTimeoutMillis: REQUEST_TIMEOUT_MS,
	});
	pool.on("error", () => {});
	// One read statement at a time: any two reads that overlap go grouped (at the default 2, only
	// when three of the four clients read at once), so the search covers grouped reads.
	const storage = createPgTTLStorage({ pool, schema, readsInFlight: 1 });
	return {
		storage,
		proxy,
		async close() {
			await storage.close();
			await pool.end().catch(() => {});
			await proxy.close();
			try {
				await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
			} finally {
				await admin.end();
			}
		},
	};
}

/** Cassandra (`cassandraEnv()`) behind a proxy: a client with a short read timeout, a keyspace. */
export async function proxiedCassandra(seed: number): Promise<ProxiedStorage> {
	const env = cassandraEnv();
	const { host, port } = hostPort(env.contactPoints[0] ?? "127.0.0.1:9042", 9042);
	const admin = new Client(env);
	const keyspace = uniqueName("vvm_lincheck");
	await admin.connect();
	await ensureCassandraSchema(admin, { keyspace });
	const proxy = await startFaultProxy(host, port, { seed, holdMs: HOLD_MS });
	const client = new Client({
		contactPoints: [`127.0.0.1:${proxy.port}`],
		localDataCenter: env.localDataCenter,
		socketOptions: { readTimeout: REQUEST_TIMEOUT_MS, connectTimeout: REQUEST_TIMEOUT_MS },
		policies: { reconnection: new policies.reconnection.ConstantReconnectionPolicy(100) },
	});
	await client.connect();
	const storage = createCassandraTTLStorage({ client, keyspace });
	return {
		storage,
		proxy,
		async close() {
			await storage.close();
			await client.shutdown().catch(() => {});
			await proxy.close();
			try {
				await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			} finally {
				await admin.shutdown();
			}
		},
	};
}

/** DynamoDB Local (`dynamoEnv()`) behind a proxy: a fresh table, the driver's request timeout. */
export async function proxiedDynamo(seed: number): Promise<ProxiedStorage> {
	const env = dynamoEnv();
	const { host, port } = hostPort(env.endpoint, 8000);
	const admin = new DynamoDBClient(env);
	const tableName = uniqueName("vvm_lincheck");
	await ensureDynamoTTLTable(admin, tableName, { requestTimeoutMs: 60_000 });
	const proxy = await startFaultProxy(host, port, { seed, holdMs: HOLD_MS });
	const client = new DynamoDBClient({
		...env,
		...DYNAMO_CLIENT_OPTIONS,
		endpoint: `http://127.0.0.1:${proxy.port}`,
	});
	const storage = createDynamoTTLStorage({
		client,
		tableName,
		requestTimeoutMs: REQUEST_TIMEOUT_MS,
	});
	return {
		storage,
		proxy,
		async close() {
			await storage.close();
			client.destroy();
			await proxy.close();
			try {
				await admin.send(new DeleteTableCommand({ TableName: tableName }));
			} finally {
				admin.destroy();
			}
		},
	};
}

/**
 * Redis (`redisEnv()`) behind a proxy: an ioredis client with the driver's options, a
 * `commandTimeout`, quick reconnects, and a key prefix of its own.
 *
 * `resendingClient`: **the broken variant** (a mutant): the client keeps ioredis' defaults
 * (offline queue, resending unanswered commands after a reconnect, 20 retries), which the driver
 * refuses; it is handed over behind a wrapper that shows the required options, so the check can
 * show what those resends do to a history.
 */
export async function proxiedRedis(
	seed: number,
	options: { readonly resendingClient?: boolean; readonly faultShare?: number } = {},
): Promise<ProxiedStorage> {
	const { host, port } = hostPort(redisEnv().url, 6379);
	const keyPrefix = `${uniqueName("vvm_lincheck")}:`;
	const admin = new Redis(redisEnv().url, { lazyConnect: true });
	admin.on("error", () => {});
	await admin.connect();
	const proxy = await startFaultProxy(host, port, {
		seed,
		holdMs: HOLD_MS,
		...(options.faultShare === undefined ? {} : { faultShare: options.faultShare }),
	});
	const client = new Redis(proxy.port, "127.0.0.1", {
		...(options.resendingClient ? {} : REDIS_CLIENT_OPTIONS),
		lazyConnect: true,
		commandTimeout: REQUEST_TIMEOUT_MS,
		connectTimeout: REQUEST_TIMEOUT_MS,
		retryStrategy: () => 100,
	});
	client.on("error", () => {});
	await client.connect();
	const driverClient = options.resendingClient
		? {
				get status() {
					return client.status;
				},
				options: { ...REDIS_CLIENT_OPTIONS },
				callBuffer: client.callBuffer.bind(client),
			}
		: client;
	const storage = createRedisTTLStorage({ client: driverClient, keyPrefix });
	return {
		storage,
		proxy,
		async close() {
			await storage.close();
			client.disconnect();
			await proxy.close();
			try {
				let cursor = "0";
				do {
					const [next, keys] = await admin.scan(cursor, "MATCH", `${keyPrefix}*`, "COUNT", 1000);
					cursor = next;
					if (keys.length > 0) await admin.del(...keys);
				} while (cursor !== "0");
			} finally {
				admin.disconnect();
			}
		},
	};
}
