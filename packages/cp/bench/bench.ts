// Benchmark of the command processor: commands/s and p50/p99 latency of a one-record create
// (app1pkg.Customer, a CDoc) over 10 000 workspaces, at SequencesTrustLevel 0 and 2, with 1 and 16
// commands in flight, on level (classic-level on disk), Cassandra and DynamoDB Local.
//
// Run: pnpm --filter @vvm/cp bench
//   BENCH_DRIVERS=level,cas,dyn  which storages (default level; mem measures the processor alone)
//   BENCH_OPS=20000              commands per row (default 20000 on level, 3000 on cas/dyn)
//   BENCH_PARTITIONS=32          partitions (wsid mod partitions)
//   BENCH_WORKSPACES=10000       workspaces, chosen uniformly at random per command
//   BENCH_WARMUP=10000           warm-up creates (default: one per workspace)
//   BENCH_LEVELS=0,2  BENCH_CONCURRENCY=1,16  BENCH_COALESCE=0 (turn group commit off)
//   BENCH_IN_FLIGHT=2            group-commit batches at the storage at once
//   BENCH_ATOMIC=0               atomicBatches off everywhere (default: as each storage's
//                                supports.atomicBatches says: mem and level)
//   BENCH_LEVEL_WRITE_BUFFER_MB=4  LevelDB's memtable size (classic-level's default is 4 MiB)
//   BENCH_UNFENCED=1             the test-only unfenced build (`unsafeUnfenced`), to price the fence
import { randomInt } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { Client } from "cassandra-driver";
import { ClassicLevel } from "classic-level";
import type { AppPartition, SequencesTrustLevel } from "../src/index.ts";
import { CpError, createCommandProcessor } from "../src/index.ts";

const list = (v: string | undefined, dflt: string): string[] =>
	(v ?? dflt)
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s !== "");
const drivers = list(process.env.BENCH_DRIVERS, "level");
const partitions = Number(process.env.BENCH_PARTITIONS ?? 32);
const workspaces = Number(process.env.BENCH_WORKSPACES ?? 10_000);
const warmup = Number(process.env.BENCH_WARMUP ?? workspaces);
const levels = list(process.env.BENCH_LEVELS, "0,2").map(Number) as SequencesTrustLevel[];
const concurrencies = list(process.env.BENCH_CONCURRENCY, "1,16").map(Number);
const coalesce = process.env.BENCH_COALESCE !== "0";
const inFlight =
	process.env.BENCH_IN_FLIGHT === undefined ? undefined : Number(process.env.BENCH_IN_FLIGHT);
// Atomic batches where the storage declares them (supports.atomicBatches), as in production.
const atomicOff = process.env.BENCH_ATOMIC === "0";
/** The drivers whose processors ran with atomicBatches. */
const atomicOn = new Set<string>();

interface Row {
	driver: string;
	level: number;
	concurrency: number;
	commands: number;
	perSecond: number;
	p50: number;
	p99: number;
	busy: number;
	/** CPU time of this process (all its threads) per command, µs. */
	cpuUs: number;
}

interface Backend {
	storage(): Promise<TTLStorage>;
	release(storage: TTLStorage): Promise<void>;
	done(): Promise<void>;
}

async function levelBackend(): Promise<Backend> {
	const dirs = new Map<TTLStorage, string>();
	return {
		async storage() {
			const dir = await mkdtemp(join(tmpdir(), "vvm-cp-bench-"));
			const writeBufferSize = Number(process.env.BENCH_LEVEL_WRITE_BUFFER_MB ?? 4) * 1024 * 1024;
			const s = createLevelTTLStorage({
				db: new ClassicLevel(dir, { writeBufferSize }),
				ownsDb: true,
			});
			dirs.set(s, dir);
			return s;
		},
		async release(s) {
			await s.close();
			await rm(dirs.get(s) as string, { recursive: true, force: true });
		},
		async done() {},
	};
}

async function casBackend(): Promise<Backend> {
	const client = new Client({
		contactPoints: list(process.env.CASSANDRA_CONTACT_POINTS, "127.0.0.1:9042"),
		localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1",
	});
	await client.connect();
	const keyspace = `vvm_cp_bench_${process.pid.toString(36)}${Date.now().toString(36)}`;
	await ensureCassandraSchema(client, { keyspace });
	return {
		storage: async () => createCassandraTTLStorage({ client, keyspace }),
		release: (s) => s.close(),
		async done() {
			await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			await client.shutdown();
		},
	};
}

async function dynBackend(): Promise<Backend> {
	const client = new DynamoDBClient({
		endpoint: process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000",
		region: "us-east-1",
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
	});
	const tableName = `vvm-cp-bench-${process.pid.toString(36)}${Date.now().toString(36)}`;
	await ensureDynamoTTLTable(client, tableName);
	return {
		storage: async () => createDynamoTTLStorage({ client, tableName }),
		release: (s) => s.close(),
		async done() {
			await client.send(new DeleteTableCommand({ TableName: tableName }));
			client.destroy();
		},
	};
}

/** In memory: no I/O, so it measures the processor's own CPU cost. */
async function memBackend(): Promise<Backend> {
	return {
		// No TTL records here: the periodic expiry sweep (a full scan) would only measure itself.
		storage: async () => createMemTTLStorage({ sweepEveryWrites: 2 ** 30 }),
		release: (s) => s.close(),
		async done() {},
	};
}

const backends: Record<string, () => Promise<Backend>> = {
	mem: memBackend,
	level: levelBackend,
	cas: casBackend,
	dyn: dynBackend,
};

function percentile(sorted: Float64Array, p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] as number;
}

/**
 * Runs `total` creates with `concurrency` in flight, in random workspaces (`sequential`: each
 * workspace in turn); a busy answer is retried (and counted).
 */
async function run(
	parts: readonly AppPartition[],
	total: number,
	concurrency: number,
	latencies: Float64Array | undefined,
	sequential = false,
): Promise<{ ms: number; busy: number }> {
	let issued = 0;
	let busy = 0;
	const started = performance.now();
	const worker = async (): Promise<void> => {
		while (issued < total) {
			const i = issued++;
			const wsid = sequential ? i + 1 : randomInt(1, workspaces + 1);
			const p = parts[wsid % partitions] as AppPartition;
			const t0 = performance.now();
			for (;;) {
				try {
					await p.createRecord({
						wsid,
						table: "app1pkg.Customer",
						fields: { name: `customer ${i}` },
					});
					break;
				} catch (e) {
					if (!(CpError.is(e) && e.code === "CP_BUSY")) throw e;
					busy++;
					await new Promise((resolve) => setTimeout(resolve, 1));
				}
			}
			if (latencies !== undefined) latencies[i] = performance.now() - t0;
		}
	};
	await Promise.all(Array.from({ length: concurrency }, worker));
	return { ms: performance.now() - started, busy };
}

async function benchDriver(driver: string): Promise<Row[]> {
	const make = backends[driver];
	if (make === undefined) throw new Error(`unknown driver ${driver} (level, cas, dyn)`);
	const backend = await make();
	const ops = Number(
		process.env.BENCH_OPS ?? (driver === "level" || driver === "mem" ? 20_000 : 3_000),
	);
	const rows: Row[] = [];
	try {
		for (const level of levels) {
			const storage = await backend.storage();
			const cp = createCommandProcessor({
				storage,
				appId: randomInt(1, 0xffff_fff0),
				partitions,
				trustLevel: level,
				coalesceWrites: coalesce,
				...(inFlight === undefined ? {} : { writeBatchesInFlight: inFlight }),
				...(atomicOff ? { atomicBatches: false } : {}),
				...(process.env.BENCH_UNFENCED === "1" ? { unsafeUnfenced: true } : {}),
			});
			if (!atomicOff && storage.supports?.atomicBatches === true) atomicOn.add(driver);
			try {
				const parts = Array.from({ length: partitions }, (_, p) => cp.deploy(p));
				await Promise.all(parts.map((p) => p.ready()));
				// Warm-up: JIT, connections, and one record in every workspace, so the sequencers hold
				// every workspace's numbers (as a running VVM would).
				await run(parts, warmup, 16, undefined, true);
				for (const concurrency of concurrencies) {
					const latencies = new Float64Array(ops);
					const cpu0 = process.cpuUsage();
					const { ms, busy } = await run(parts, ops, concurrency, latencies);
					const cpu = process.cpuUsage(cpu0);
					latencies.sort();
					const row: Row = {
						driver,
						level,
						concurrency,
						commands: ops,
						perSecond: Math.round((ops / ms) * 1000),
						p50: percentile(latencies, 50),
						p99: percentile(latencies, 99),
						busy,
						cpuUs: Math.round((cpu.user + cpu.system) / ops),
					};
					console.error(JSON.stringify(row));
					rows.push(row);
				}
			} finally {
				await cp.close();
				await backend.release(storage);
			}
		}
	} finally {
		await backend.done();
	}
	return rows;
}

const rows: Row[] = [];
for (const d of drivers) rows.push(...(await benchDriver(d)));
const fmt = (n: number): string => n.toLocaleString("en-US");
console.log(
	`\n@vvm/cp, one-record create, ${fmt(workspaces)} workspaces, ${partitions} partitions, group commit ${coalesce ? "on" : "off"}, atomicBatches on ${[...atomicOn].join(",") || "none"}; ${availableParallelism()} cores (${cpus()[0]?.model ?? "?"}), Node ${process.version}, load average ${loadavg()
		.map((l) => l.toFixed(1))
		.join(" ")}\n`,
);
console.log(
	"| storage | level | concurrency | commands | cmd/s | p50 ms | p99 ms | busy retries | CPU µs/cmd |",
);
console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
for (const r of rows)
	console.log(
		`| ${r.driver} | ${r.level} | ${r.concurrency} | ${fmt(r.commands)} | ${fmt(r.perSecond)} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${fmt(r.busy)} | ${fmt(r.cpuUs)} |`,
	);
