// @vvm/cp alone, in its own process: the same creates as the host bench (one record, concurrency C,
// W workspaces each touched once first, 10 partitions), called in process instead of through HTTP,
// on the built packages and the same driver. Started by host-bench.ts, which reads this process's
// CPU from /proc; it prints one JSON line per phase ({ phase, ok, seconds, latencies summary }).
//
//   node --import tsx bench/cp-alone.ts <level|mem|cas|dyn|pg> <trustLevel> <seconds> <workspaces> <concurrency>
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SequencesTrustLevel } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";

const [storageKind, trust, secondsArg, workspacesArg, concurrencyArg] = process.argv.slice(2);
const SECONDS = Number(secondsArg ?? 6);
const WORKSPACES = Number(workspacesArg ?? 10_000);
const CONCURRENCY = Number(concurrencyArg ?? 16);
const PARTITIONS = 10;
const tag = `cpbench${process.pid}x${Date.now().toString(36)}`;

async function open(): Promise<{ storage: TTLStorage; close(): Promise<void> }> {
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
			const storage = createLevelTTLStorage({ db, ownsDb: true });
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
			const url = `postgres://vvm@127.0.0.1:${process.env.PG_PORT ?? 54329}/vvm`;
			const pool = new pg.Pool({ connectionString: url, max: 20 });
			pool.on("error", () => {});
			await ensurePgSchema(pool, { schema: tag });
			const storage = createPgTTLStorage({ pool, schema: tag });
			return {
				storage,
				close: async () => {
					await storage.close();
					await pool.query(`DROP SCHEMA IF EXISTS ${tag} CASCADE`).catch(() => {});
					await pool.end();
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
	const { storage, close } = await open();
	const cp = createCommandProcessor({
		storage,
		appId: 1,
		partitions: PARTITIONS,
		trustLevel: Number(trust ?? 0) as SequencesTrustLevel,
	});
	const parts = Array.from({ length: PARTITIONS }, (_, p) => cp.deploy(p));
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
	): void => {
		latencies.sort((a, b) => a - b);
		const cpu = process.cpuUsage(cpu0);
		const main = mainThreadCpuUs() - main0;
		console.log(
			JSON.stringify({
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
	// Warm-up: every workspace once (its first command, a cold one).
	{
		const latencies: number[] = [];
		let ok = 0;
		let next = 1;
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
		report("warmup", latencies, ok, (performance.now() - t0) / 1000, cpu0, main0);
	}
	{
		const latencies: number[] = [];
		let ok = 0;
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
		report("warm", latencies, ok, (performance.now() - t0) / 1000, cpu0, main0);
	}
	await cp.close();
	await close();
}

await main();
