// @vvm/cp alone, in its own process: the same creates as the host bench (one record, concurrency C,
// W workspaces each touched once first, 10 partitions), called in process instead of through HTTP,
// on the built packages and the same driver. Started by host-bench.ts, which reads this process's
// CPU from /proc; it prints one JSON line per phase ({ phase, ok, seconds, latencies summary }).
//
//   node bench/cp-alone.ts <level|mem|cas|dyn|pg|redis> <trustLevel> <seconds> <workspaces> <concurrency>
//
// BENCH_CP_PIPELINE=N: cp's pipelineDepth (default 1); BENCH_LEVEL_NOSYNC=1: level without fsync;
// BENCH_CP_COALESCE=0|1: cp's own group commit; BENCH_PG_WRITES_IN_FLIGHT: the pg driver's (default:
// the host's for the level and depth); BENCH_PG_READS_IN_FLIGHT: its readsInFlight (default: the
// host's); BENCH_CP_RESTART=1: a last phase, "restart": a new processor
// over the same storage, the first command of every workspace again (as the host's cold rows).
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SequencesTrustLevel } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";
import { pgStorage } from "../src/storage/pg.ts";
import { dropRedisPrefix, pgConnection, REDIS_URL } from "./servers.ts";

const [storageKind, trust, secondsArg, workspacesArg, concurrencyArg] = process.argv.slice(2);
const SECONDS = Number(secondsArg ?? 6);
const WORKSPACES = Number(workspacesArg ?? 10_000);
const CONCURRENCY = Number(concurrencyArg ?? 16);
const PARTITIONS = 10;
const tag = `cpbench${process.pid}x${Date.now().toString(36)}`;

/** Statements sent to PostgreSQL so far, by the driver's statement kind (pg only). */
const pgCounts = new Map<string, number>();

interface ServerStats {
	/**
	 * WAL fsyncs, records and bytes of the server, and commits in this database, so far
	 * (server-wide counters).
	 */
	readonly walSync: number;
	readonly walRecords: number;
	readonly walBytes: number;
	readonly commits: number;
}

const NO_STATS: ServerStats = { walSync: 0, walRecords: 0, walBytes: 0, commits: 0 };

async function open(): Promise<{
	storage: TTLStorage;
	close(): Promise<void>;
	stats?: () => Promise<ServerStats>;
}> {
	switch (storageKind) {
		case "mem": {
			const { createMemTTLStorage } = await import("@vvm/ttlstorage-mem");
			// Nothing here expires (no TTLs): the periodic sweep (every record, every 1 024 writes)
			// would measure the mem driver's housekeeping over a growing map, not the processor.
			const storage = createMemTTLStorage({ sweepEveryWrites: 2 ** 31 });
			return { storage, close: () => storage.close() };
		}
		case "level": {
			const { ClassicLevel } = await import("classic-level");
			const { createLevelTTLStorage } = await import("@vvm/ttlstorage-level");
			const dir = await mkdtemp(join(tmpdir(), "vvm-cp-bench-"));
			const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
				keyEncoding: "view",
				valueEncoding: "view",
			});
			await db.open();
			// BENCH_LEVEL_NOSYNC=1: batches not fsynced (the host's --level-durability unsafe-no-sync).
			const storage = createLevelTTLStorage({
				db,
				ownsDb: true,
				...(process.env.BENCH_LEVEL_NOSYNC === "1" ? { unsafeNoSync: true } : {}),
			});
			return {
				storage,
				close: async () => {
					await storage.close();
					await rm(dir, { recursive: true, force: true });
				},
			};
		}
		case "cas": {
			const cassandra = await import("cassandra-driver");
			const { createCassandraTTLStorage, ensureCassandraSchema } = await import(
				"@vvm/ttlstorage-cas"
			);
			const Client =
				cassandra.Client ?? (cassandra as unknown as { default: typeof cassandra }).default.Client;
			const client = new Client({
				contactPoints: ["127.0.0.1:9042"],
				localDataCenter: "datacenter1",
			});
			await client.connect();
			await ensureCassandraSchema(client, { keyspace: tag });
			const storage = createCassandraTTLStorage({ client, keyspace: tag });
			return {
				storage,
				close: async () => {
					await storage.close();
					await client.execute(`DROP KEYSPACE IF EXISTS ${tag}`).catch(() => {});
					await client.shutdown();
				},
			};
		}
		case "dyn": {
			const { DynamoDBClient, DeleteTableCommand } = await import("@aws-sdk/client-dynamodb");
			const { createDynamoTTLStorage, ensureDynamoTTLTable } = await import("@vvm/ttlstorage-dyn");
			const client = new DynamoDBClient({
				endpoint: "http://127.0.0.1:8000",
				region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" },
			});
			await ensureDynamoTTLTable(client, tag);
			const storage = createDynamoTTLStorage({ client, tableName: tag });
			return {
				storage,
				close: async () => {
					await storage.close();
					await client.send(new DeleteTableCommand({ TableName: tag })).catch(() => {});
					client.destroy();
				},
			};
		}
		case "pg": {
			const { default: pg } = await import("pg");
			const { createPgTTLStorage, ensurePgSchema } = await import("@vvm/ttlstorage-pg");
			const pool = new pg.Pool({ ...pgConnection(), max: 20 });
			pool.on("error", () => {});
			await ensurePgSchema(pool, { schema: tag });
			// Every statement the driver sends is one round trip; counted per statement kind.
			pool.on("acquire", (client: { query: (...a: unknown[]) => unknown }) => {
				if ((client as { counted?: true }).counted) return;
				(client as { counted?: true }).counted = true;
				const query = client.query.bind(client);
				client.query = (...args: unknown[]) => {
					const first = args[0] as { name?: string; text?: string } | string;
					const kind =
						typeof first === "string"
							? "text"
							: (first.name?.replace(/^vvm_ttl_/, "").replace(/_[0-9a-f]{12}$/, "") ?? "text");
					pgCounts.set(kind, (pgCounts.get(kind) ?? 0) + 1);
					return query(...args);
				};
			});
			// BENCH_PG_WRITES_IN_FLIGHT: the driver's group commit setting (default: the host's for
			// this level and depth, as its pg entry tunes it; else the driver's).
			const tuned = pgStorage.tune?.(
				{},
				{ trustLevel: Number(trust), pipelineDepth: Number(process.env.BENCH_CP_PIPELINE ?? 1) },
			)?.writesInFlight as number | undefined;
			const inFlight = process.env.BENCH_PG_WRITES_IN_FLIGHT ?? tuned;
			// BENCH_PG_READS_IN_FLIGHT: the driver's read statements at once (default: the host's).
			const reads =
				process.env.BENCH_PG_READS_IN_FLIGHT ??
				pgStorage.options.find((o) => o.key === "readsInFlight")?.def;
			const storage = createPgTTLStorage({
				pool,
				schema: tag,
				...(inFlight === undefined ? {} : { writesInFlight: Number(inFlight) }),
				...(reads === undefined ? {} : { readsInFlight: Number(reads) }),
			});
			return {
				storage,
				stats: async () => {
					const r = await pool.query(
						"SELECT w.wal_sync::int8 AS wal_sync, w.wal_records::int8 AS wal_records, w.wal_bytes::int8 AS wal_bytes, (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::int8 AS commits FROM pg_stat_wal AS w",
					);
					const row = r.rows[0];
					return {
						walSync: Number(row.wal_sync),
						walRecords: Number(row.wal_records),
						walBytes: Number(row.wal_bytes),
						commits: Number(row.commits),
					};
				},
				close: async () => {
					await storage.close();
					await pool.query(`DROP SCHEMA IF EXISTS ${tag} CASCADE`).catch(() => {});
					await pool.end();
				},
			};
		}
		case "redis": {
			const { Redis } = await import("ioredis");
			const { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } = await import("@vvm/ttlstorage-redis");
			const client = new Redis(REDIS_URL, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
			client.on("error", () => {});
			await client.connect();
			const keyPrefix = `${tag}:`;
			const storage = createRedisTTLStorage({ client, keyPrefix });
			return {
				storage,
				close: async () => {
					await storage.close();
					await dropRedisPrefix(client, keyPrefix);
					client.disconnect();
				},
			};
		}
		default:
			throw new Error(`cp-alone: unknown storage ${String(storageKind)}`);
	}
}

const quantile = (sorted: readonly number[], p: number): number =>
	sorted[Math.floor(p * (sorted.length - 1))] ?? 0;

async function main(): Promise<void> {
	const { storage, close, stats } = await open();
	const coalesce = process.env.BENCH_CP_COALESCE;
	const processor = () =>
		createCommandProcessor({
			storage,
			// BENCH_CP_COALESCE=0|1: @vvm/cp's own group commit off or on (default: cp's choice).
			...(coalesce === undefined ? {} : { coalesceWrites: coalesce !== "0" }),
			appId: 1,
			partitions: PARTITIONS,
			trustLevel: Number(trust ?? 0) as SequencesTrustLevel,
			pipelineDepth: Number(process.env.BENCH_CP_PIPELINE ?? 1),
		});
	let cp = processor();
	let parts = Array.from({ length: PARTITIONS }, (_, p) => cp.deploy(p));
	await Promise.all(parts.map((p) => p.ready()));
	const create = async (wsid: number): Promise<boolean> => {
		const p = parts[wsid % PARTITIONS];
		try {
			await p?.createRecord({ wsid, table: "app1pkg.Customer", fields: { name: "Ada Lovelace" } });
			return true;
		} catch {
			return false;
		}
	};
	/** This process's main thread's CPU so far, µs (the JavaScript; drivers' threads excluded). */
	const mainThreadCpuUs = (): number => {
		const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, "utf8");
		const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		return ((Number(f[11]) + Number(f[12])) / 100) * 1e6; // USER_HZ ticks
	};
	const report = (
		phase: string,
		latencies: number[],
		ok: number,
		seconds: number,
		cpu0: NodeJS.CpuUsage,
		main0: number,
		counts0: ReadonlyMap<string, number>,
		server0: ServerStats,
		server1: ServerStats,
	): void => {
		latencies.sort((a, b) => a - b);
		const cpu = process.cpuUsage(cpu0);
		const main = mainThreadCpuUs() - main0;
		const n = Math.max(1, latencies.length);
		const statements: Record<string, number> = {};
		let sent = 0;
		for (const [kind, count] of pgCounts) {
			const d = count - (counts0.get(kind) ?? 0);
			sent += d;
			if (d > 0) statements[kind] = Number((d / n).toFixed(3));
		}
		console.log(
			JSON.stringify({
				...(stats === undefined
					? {}
					: {
							// Per command: statements (each one round trip and, outside a transaction,
							// one commit) by kind; the server's WAL fsyncs and this database's commits
							// (server-wide counters: other sessions' work counts too).
							statementsPerCommand: Number((sent / n).toFixed(3)),
							statements,
							walSyncsPerCommand: Number(((server1.walSync - server0.walSync) / n).toFixed(3)),
							walRecordsPerCommand: Number(
								((server1.walRecords - server0.walRecords) / n).toFixed(2),
							),
							walBytesPerCommand: Math.round((server1.walBytes - server0.walBytes) / n),
							commitsPerCommand: Number(((server1.commits - server0.commits) / n).toFixed(3)),
						}),
				phase,
				ok,
				total: latencies.length,
				seconds,
				p50: quantile(latencies, 0.5),
				p99: quantile(latencies, 0.99),
				// This process, every thread (the storage driver's too), per command.
				cpuUs: (cpu.user + cpu.system) / Math.max(1, latencies.length),
				mainCpuUs: main / Math.max(1, latencies.length),
			}),
		);
	};
	/** The first command of every workspace, once each (a cold one), measured as `phase`. */
	const onceEach = async (phase: string): Promise<void> => {
		const latencies: number[] = [];
		let ok = 0;
		let next = 1;
		const counts0 = new Map(pgCounts);
		const server0 = (await stats?.()) ?? NO_STATS;
		const cpu0 = process.cpuUsage();
		const main0 = mainThreadCpuUs();
		const t0 = performance.now();
		await Promise.all(
			Array.from({ length: CONCURRENCY }, async () => {
				while (next <= WORKSPACES) {
					const wsid = next++;
					const s = performance.now();
					if (await create(wsid)) ok++;
					latencies.push(performance.now() - s);
				}
			}),
		);
		const seconds = (performance.now() - t0) / 1000;
		const server1 = (await stats?.()) ?? server0;
		report(phase, latencies, ok, seconds, cpu0, main0, counts0, server0, server1);
	};
	await onceEach("warmup");
	{
		const latencies: number[] = [];
		let ok = 0;
		const counts0 = new Map(pgCounts);
		const server0 = (await stats?.()) ?? NO_STATS;
		const cpu0 = process.cpuUsage();
		const main0 = mainThreadCpuUs();
		const t0 = performance.now();
		const end = t0 + SECONDS * 1000;
		await Promise.all(
			Array.from({ length: CONCURRENCY }, async () => {
				while (performance.now() < end) {
					const wsid = 1 + Math.floor(Math.random() * WORKSPACES);
					const s = performance.now();
					if (await create(wsid)) ok++;
					latencies.push(performance.now() - s);
				}
			}),
		);
		const seconds = (performance.now() - t0) / 1000;
		const server1 = (await stats?.()) ?? server0;
		report("warm", latencies, ok, seconds, cpu0, main0, counts0, server0, server1);
	}
	await cp.close();
	if (process.env.BENCH_CP_RESTART === "1") {
		// A new processor over the same storage (as a restarted host): the first command of each
		// workspace reads its numbers back, then its log's tail.
		cp = processor();
		parts = Array.from({ length: PARTITIONS }, (_, p) => cp.deploy(p));
		await Promise.all(parts.map((p) => p.ready()));
		await onceEach("restart");
		await cp.close();
	}
	await close();
}

await main();
