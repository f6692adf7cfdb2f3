// The storage of a chaos run and each host's path to it. DynamoDB: a DynamoDB Local of the run's
// own (paused by SIGSTOP). Cassandra: the given contact points (never paused: the path is held by
// every host's proxy instead), a keyspace of the run's own, dropped at the end. PostgreSQL: the
// given server (held by every host's proxy, as Cassandra), a schema of the run's own, dropped at
// the end. Redis: the given server (held the same way), keys under a prefix of the run's own,
// deleted at the end.
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import {
	createDynamoTTLStorage,
	DYNAMO_CLIENT_OPTIONS,
	ensureDynamoTTLTable,
} from "@vvm/ttlstorage-dyn";
import { createPgTTLStorage, ensurePgSchema } from "@vvm/ttlstorage-pg";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import cassandra from "cassandra-driver";
import { Redis } from "ioredis";
import pg from "pg";
import type { DynamoLocal } from "./dynamo-local.ts";
import { startDynamoLocal } from "./dynamo-local.ts";
import type { FaultProxy } from "./fault-proxy.ts";
import { startFaultProxy } from "./fault-proxy.ts";
import type { ChaosOptions } from "./options.ts";

/** The storage as the run uses it. */
export interface StorageBackend {
	/** For the summary: what runs where. */
	readonly description: string;
	/** How a storage pause is made. */
	readonly pauseMethod: string;
	/** A proxy can tell its write requests from its reads (`hold-writes`): DynamoDB's HTTP, not CQL. */
	readonly writesVisible: boolean;
	/** The storage flags of host `index` (through its proxies). */
	hostArgs(index: number): string[];
	/** The proxies of host `index` (one per storage node). */
	proxiesOf(index: number): readonly FaultProxy[];
	/**
	 * A storage client straight to the server (no proxy, no faults), for the commands checker;
	 * `close()` releases what it opened.
	 */
	checkerStorage(): Promise<{ storage: TTLStorage; close(): Promise<void> }>;
	/** Stops / restarts answering for every host. */
	pause(): void;
	resume(): void;
	close(): Promise<void>;
	/** The chaos tool is exiting abnormally: SIGKILL what it started, synchronously. */
	killNow(): void;
}

const DYN_TABLE = "vvm_chaos";

async function proxiesPerHost(
	hosts: number,
	targets: readonly { host: string; port: number }[],
): Promise<FaultProxy[][]> {
	const all: FaultProxy[][] = [];
	for (let i = 0; i < hosts; i++) {
		all.push(await Promise.all(targets.map((t) => startFaultProxy(t.host, t.port))));
	}
	return all;
}

/** A storage pause made by every host's proxies holding all bytes (the server is shared). */
function holdAll(
	proxies: readonly (readonly FaultProxy[])[],
): Pick<StorageBackend, "pause" | "resume"> {
	let holding = false;
	return {
		pause() {
			holding = true;
			for (const p of proxies.flat()) p.setHold(true);
		},
		resume() {
			if (!holding) return;
			holding = false;
			for (const p of proxies.flat()) p.setHold(false);
		},
	};
}

async function closeAll(proxies: readonly (readonly FaultProxy[])[]): Promise<void> {
	await Promise.all(proxies.flat().map((p) => p.close()));
}

async function openDynamo(
	options: ChaosOptions,
	repoRoot: string,
	outDir: string,
): Promise<StorageBackend> {
	const server: DynamoLocal = await startDynamoLocal(repoRoot, join(outDir, "dynamodb.log"));
	try {
		// Created once here, so the hosts starting together never race to create it.
		const client = new DynamoDBClient({
			endpoint: server.endpoint,
			region: "us-east-1",
			credentials: { accessKeyId: "local", secretAccessKey: "local" },
		});
		try {
			await ensureDynamoTTLTable(client, DYN_TABLE, { requestTimeoutMs: 30_000 });
		} finally {
			client.destroy();
		}
		const proxies = await proxiesPerHost(options.hosts, [{ host: "127.0.0.1", port: server.port }]);
		return {
			description: `DynamoDB Local of this run (pid ${server.pid}, port ${server.port}), table ${DYN_TABLE}`,
			pauseMethod: `SIGSTOP of the run's DynamoDB Local (pid ${server.pid})`,
			writesVisible: true,
			hostArgs: (i) => [
				"--storage",
				"dyn",
				"--dyn-endpoint",
				`http://127.0.0.1:${(proxies[i] as FaultProxy[])[0]?.port}`,
				"--dyn-table",
				DYN_TABLE,
			],
			proxiesOf: (i) => proxies[i] ?? [],
			async checkerStorage() {
				const client = new DynamoDBClient({
					endpoint: server.endpoint,
					region: "us-east-1",
					credentials: { accessKeyId: "local", secretAccessKey: "local" },
					...DYNAMO_CLIENT_OPTIONS,
				});
				return {
					storage: createDynamoTTLStorage({
						client,
						tableName: DYN_TABLE,
						requestTimeoutMs: 30_000,
					}),
					close: async () => client.destroy(),
				};
			},
			pause: () => server.pause(),
			resume: () => server.resume(),
			async close() {
				await closeAll(proxies);
				await server.stop();
			},
			killNow: () => server.killNow(),
		};
	} catch (error) {
		await server.stop();
		throw error;
	}
}

async function openCassandra(options: ChaosOptions): Promise<StorageBackend> {
	const keyspace = options.casKeyspace ?? `vvm_chaos_${process.pid}_${Date.now() % 1e9}`;
	const nodes = options.casContactPoints.map((p) => {
		const [host = "", port = "9042"] = p.split(":");
		return { host, port: Number(port), endpoint: `${host}:${port}` };
	});
	const admin = new cassandra.Client({
		contactPoints: nodes.map((n) => n.endpoint),
		localDataCenter: options.casLocalDc,
	});
	await admin.connect();
	try {
		await ensureCassandraSchema(admin, {
			keyspace,
			replication: { class: "SimpleStrategy", replication_factor: options.casReplicationFactor },
		});
	} catch (error) {
		await admin.shutdown();
		throw error;
	}
	const proxies = await proxiesPerHost(options.hosts, nodes);
	return {
		description: `Cassandra ${nodes.map((n) => n.endpoint).join(",")}, keyspace ${keyspace} (SimpleStrategy RF ${options.casReplicationFactor})`,
		pauseMethod: "every host's proxies hold all bytes (the shared server itself is never paused)",
		writesVisible: false,
		hostArgs(i) {
			const mine = proxies[i] ?? [];
			const args = [
				"--storage",
				"cas",
				"--cas-contact-points",
				mine.map((p) => `127.0.0.1:${p.port}`).join(","),
				"--cas-local-dc",
				options.casLocalDc,
				"--cas-keyspace",
				keyspace,
			];
			// The driver reaches the other nodes at the addresses the cluster reports: map each
			// to this host's proxy for it, or they would bypass the path faults.
			if (nodes.length > 1) {
				args.push(
					"--cas-address-map",
					nodes.map((n, k) => `${n.endpoint}=127.0.0.1:${mine[k]?.port}`).join(","),
				);
			}
			return args;
		},
		proxiesOf: (i) => proxies[i] ?? [],
		async checkerStorage() {
			return {
				// ALL, with every node up again: a write that reached one replica only (its
				// coordinator timed out) is seen by the final recovery and the checker alike.
				storage: createCassandraTTLStorage({
					client: admin,
					keyspace,
					readConsistency: cassandra.types.consistencies.all,
				}),
				close: async () => {},
			};
		},
		...holdAll(proxies),
		async close() {
			await closeAll(proxies);
			try {
				if (!options.keepKeyspace) await admin.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			} finally {
				await admin.shutdown();
			}
		},
		killNow: () => {},
	};
}

async function openPostgres(options: ChaosOptions): Promise<StorageBackend> {
	const url = new URL(options.pgUrl);
	const schema = `vvm_chaos_${process.pid}_${Date.now() % 1e9}`;
	const admin = new pg.Pool({ connectionString: options.pgUrl, max: 4 });
	admin.on("error", () => {}); // a broken idle connection is replaced
	try {
		await ensurePgSchema(admin, { schema });
	} catch (error) {
		await admin.end();
		throw error;
	}
	const target = { host: url.hostname, port: Number(url.port || 5432) };
	const proxies = await proxiesPerHost(options.hosts, [target]);
	return {
		description: `PostgreSQL ${target.host}:${target.port}${url.pathname}, schema ${schema}`,
		pauseMethod: "every host's proxy holds all bytes (the shared server itself is never paused)",
		writesVisible: false,
		hostArgs(i) {
			const proxied = new URL(options.pgUrl);
			proxied.hostname = "127.0.0.1";
			proxied.port = String(proxies[i]?.[0]?.port);
			return ["--storage", "pg", "--pg-url", proxied.toString(), "--pg-schema", schema];
		},
		proxiesOf: (i) => proxies[i] ?? [],
		async checkerStorage() {
			const storage = createPgTTLStorage({ pool: admin, schema });
			return { storage, close: () => storage.close() };
		},
		...holdAll(proxies),
		async close() {
			await closeAll(proxies);
			try {
				if (!options.keepKeyspace) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
			} finally {
				await admin.end();
			}
		},
		killNow: () => {},
	};
}

async function openRedis(options: ChaosOptions): Promise<StorageBackend> {
	const url = new URL(options.redisUrl);
	const keyPrefix = `vvm_chaos_${process.pid}_${Date.now() % 1e9}:`;
	// The checker's client, straight to the server, with the options the driver requires.
	const admin = new Redis(options.redisUrl, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
	admin.on("error", () => {}); // a broken connection fails its commands; ioredis reconnects
	await admin.connect();
	const target = { host: url.hostname, port: Number(url.port || 6379) };
	const proxies = await proxiesPerHost(options.hosts, [target]);
	return {
		description: `Redis ${target.host}:${target.port}${url.pathname}, key prefix ${keyPrefix}`,
		pauseMethod: "every host's proxy holds all bytes (the shared server itself is never paused)",
		writesVisible: false,
		hostArgs(i) {
			const proxied = new URL(options.redisUrl);
			proxied.hostname = "127.0.0.1";
			proxied.port = String(proxies[i]?.[0]?.port);
			return [
				"--storage",
				"redis",
				"--redis-url",
				proxied.toString(),
				"--redis-key-prefix",
				keyPrefix,
			];
		},
		proxiesOf: (i) => proxies[i] ?? [],
		async checkerStorage() {
			// No sweep: the hosts' drivers sweep; the checker only reads.
			const storage = createRedisTTLStorage({ client: admin, keyPrefix, sweepIntervalMs: 0 });
			return { storage, close: () => storage.close() };
		},
		...holdAll(proxies),
		async close() {
			await closeAll(proxies);
			try {
				if (!options.keepKeyspace) {
					let cursor = "0";
					do {
						// Keys hold binary bytes: scanned and deleted as Buffers.
						const [next, keys] = await admin.scanBuffer(
							cursor,
							"MATCH",
							`${keyPrefix}*`,
							"COUNT",
							1000,
						);
						if (keys.length > 0) await admin.del(...keys);
						cursor = next.toString();
					} while (cursor !== "0");
				}
			} finally {
				admin.disconnect();
			}
		},
		killNow: () => {},
	};
}

/**
 * Opens the run's storage and one proxy per host and storage node.
 *
 * @example
 * ```ts
 * const storage = await openStorageBackend(options, repoRoot, outDir);
 * hostArgs.push(...storage.hostArgs(0));
 * ```
 */
export function openStorageBackend(
	options: ChaosOptions,
	repoRoot: string,
	outDir: string,
): Promise<StorageBackend> {
	switch (options.storage) {
		case "dyn":
			return openDynamo(options, repoRoot, outDir);
		case "cas":
			return openCassandra(options);
		case "pg":
			return openPostgres(options);
		case "redis":
			return openRedis(options);
	}
}
