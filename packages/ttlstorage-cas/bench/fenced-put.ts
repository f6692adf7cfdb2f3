// Fenced puts: throughput, latency and the client's CPU per operation, against a real Cassandra.
// Rows: the driver's fenced put on existing records and on new ones, and (raw CQL, for comparison
// in the same run) the plain stamped UPDATE with its 1 ms commit wait that fenced puts were
// before issue 32, and an unfenced put.
//   node --import tsx --conditions=@vvm/source bench/fenced-put.ts
// Env: CASSANDRA_CONTACT_POINTS, CASSANDRA_LOCAL_DC, BENCH_OPERATIONS (default 1000),
// BENCH_CONCURRENCY (default "1,16").
import { Client, types } from "cassandra-driver";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";

const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(",");
const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? "datacenter1";
const operations = Number(process.env.BENCH_OPERATIONS ?? 1000);
const levels = (process.env.BENCH_CONCURRENCY ?? "1,16").split(",").map(Number);
const keyspace = `vvm_benchf_${process.pid.toString(36)}${Date.now().toString(36)}`;

const client = new Client({ contactPoints, localDataCenter });
await client.connect();

interface Row {
	readonly name: string;
	readonly concurrency: number;
	readonly opsPerSec: number;
	readonly p50: number;
	readonly p99: number;
	readonly cpuMicrosPerOp: number;
}

async function measure(
	name: string,
	concurrency: number,
	op: (i: number) => Promise<unknown>,
): Promise<Row> {
	for (let i = 0; i < 50; i++) await op(-1 - i); // warm-up
	const latencies: number[] = [];
	let next = 0;
	const cpu = process.cpuUsage();
	const started = performance.now();
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			while (next < operations) {
				const i = next++;
				const t = performance.now();
				await op(i);
				latencies.push(performance.now() - t);
			}
		}),
	);
	const ms = performance.now() - started;
	const used = process.cpuUsage(cpu);
	latencies.sort((a, b) => a - b);
	const at = (q: number): number =>
		latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
	return {
		name,
		concurrency,
		opsPerSec: Math.round((operations / ms) * 1000),
		p50: Number(at(0.5).toFixed(3)),
		p99: Number(at(0.99).toFixed(3)),
		cpuMicrosPerOp: Math.round((used.user + used.system) / operations),
	};
}

try {
	await ensureCassandraSchema(client, { keyspace });
	const storage = createCassandraTTLStorage({ client, keyspace });
	const scope = Buffer.from(`bench-scope/${process.pid}`);
	await storage.raiseFence?.(scope, 1n);
	const fence = { scope, epoch: 1n };
	const value = Buffer.from("vvm-host-127.0.0.1:8080");
	const stampedCql = `UPDATE ${keyspace}.ttl_values USING TTL ? AND TIMESTAMP ? SET value = ? WHERE p_key = ? AND c_col = ?`;
	let last = 0n;
	const run = Date.now().toString(36);
	const rows: Row[] = [];
	for (const c of levels) {
		// Existing records: 64 keys, each written many times.
		rows.push(
			await measure("put, fenced, existing record (driver)", c, (i) =>
				storage.put(Buffer.from(`${run}/e/${c}`), Buffer.from(`r${(i + 64) % 64}`), value, 60, {
					fence,
				}),
			),
		);
		// New records: every put writes a key nobody wrote before.
		rows.push(
			await measure("put, fenced, new record (driver)", c, (i) =>
				storage.put(Buffer.from(`${run}/n/${c}`), Buffer.from(`r${i}`), value, 60, { fence }),
			),
		);
		rows.push(
			await measure(
				"put, fenced as before issue 32 (stamped UPDATE + 1 ms wait, raw CQL)",
				c,
				async (i) => {
					const now = BigInt(Date.now()) * 1000n;
					const floor = (now / 1000n) * 1000n + 500n;
					last = floor > last ? floor : last + 1n;
					const stamp = last;
					await Promise.all([
						client.execute(
							stampedCql,
							[
								61,
								types.Long.fromString(stamp.toString()),
								value,
								Buffer.from(`${run}/o/${c}`),
								Buffer.from(`r${(i + 64) % 64}`),
							],
							{ prepare: true, consistency: types.consistencies.quorum, isIdempotent: false },
						),
						(async () => {
							while (BigInt(Date.now()) * 1000n < (stamp / 1000n + 1n) * 1000n)
								await new Promise((r) => setTimeout(r, 1));
						})(),
					]);
				},
			),
		);
		rows.push(
			await measure("put, unfenced (driver)", c, (i) =>
				storage.put(
					Buffer.from(`${run}/u/${c}`),
					Buffer.from(`r${(i + 64) % 64}`),
					Buffer.from(`v${i}`),
					60,
				),
			),
		);
	}
	const release = (await client.execute("SELECT release_version FROM system.local")).rows[0];
	console.log(
		`Cassandra ${String(release?.get("release_version"))}, single node, RF 1; ${operations} operations per row; Node ${process.version}; load ${(
			await import("node:os")
		)
			.loadavg()
			.map((l) => l.toFixed(1))
			.join(" ")}`,
	);
	console.log("| operation | concurrency | ops/s | p50 ms | p99 ms | client CPU µs/op |");
	console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
	for (const r of rows)
		console.log(
			`| ${r.name} | ${r.concurrency} | ${r.opsPerSec} | ${r.p50} | ${r.p99} | ${r.cpuMicrosPerOp} |`,
		);
} finally {
	await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
	await client.shutdown();
}
