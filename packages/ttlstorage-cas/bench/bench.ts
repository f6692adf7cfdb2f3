// Throughput and latency against a real Cassandra, at concurrency 1 and 16: insertIfNotExists,
// compareAndSwap and put (lightweight transactions), a fenced put (a lightweight transaction on
// the stored stamp), get, and plain UPDATE / INSERT statements as the baseline.
//   pnpm --filter @vvm/ttlstorage-cas bench          (Cassandra from tooling/servers must be running)
// Env: CASSANDRA_CONTACT_POINTS (default 127.0.0.1:9042), CASSANDRA_LOCAL_DC (default datacenter1),
// BENCH_OPERATIONS (per operation and concurrency; default 1000), BENCH_CONCURRENCY (default "1,16").
import type { BenchResult } from "@vvm/ttlstorage/testing";
import { benchTTLStorage, formatBenchTable } from "@vvm/ttlstorage/testing";
import { Client, types } from "cassandra-driver";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";

const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(",");
const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? "datacenter1";
const operations = Number(process.env.BENCH_OPERATIONS ?? 1000);
const levels = (process.env.BENCH_CONCURRENCY ?? "1,16").split(",").map(Number);
const keyspace = `vvm_bench_${process.pid.toString(36)}${Date.now().toString(36)}`;

const client = new Client({ contactPoints, localDataCenter });
await client.connect();
try {
	await ensureCassandraSchema(client, { keyspace });
	const storage = createCassandraTTLStorage({ client, keyspace });
	const insertCql = `INSERT INTO ${keyspace}.ttl_values (p_key, c_col, value) VALUES (?, ?, ?) USING TTL ?`;
	const updateCql = `UPDATE ${keyspace}.ttl_values USING TTL ? SET value = ? WHERE p_key = ? AND c_col = ?`;
	const scope = Buffer.from(`bench-scope/${process.pid}`);
	await storage.raiseFence?.(scope, 1n);
	const fence = { scope, epoch: 1n };
	const value = Buffer.from("vvm-host-127.0.0.1:8080");
	// `put` is the harness's own row: an unfenced put, which is a lightweight transaction since the
	// put-after-LWT fix; the raw UPDATE is the plain write it was before; the raw INSERT is the
	// seed's statement; the fenced put is a lightweight transaction on the stored stamp (issue 32;
	// bench/fenced-put.ts compares it with the stamped plain write it was).
	const run = `raw/${process.pid}/${Date.now().toString(36)}`;
	const results: BenchResult[] = await benchTTLStorage(storage, {
		operations,
		concurrency: levels,
		ttlSeconds: 60,
		log: (line) => console.log(line),
		extra: {
			"put as before (plain UPDATE, raw CQL)": (i) =>
				client.execute(
					updateCql,
					[60, value, Buffer.from(`${run}/u/${i % 64}`), Buffer.from(`r${i}`)],
					{ prepare: true, consistency: types.consistencies.quorum },
				),
			"put, fenced (LWT on the stored stamp)": (i) =>
				storage.put(Buffer.from(`${run}/f/${i % 64}`), Buffer.from(`r${i}`), value, 60, { fence }),
			"plain INSERT (raw CQL, baseline)": (i) =>
				client.execute(
					insertCql,
					[Buffer.from(`${run}/${i % 64}`), Buffer.from(`r${i}`), value, 60],
					{ prepare: true, consistency: types.consistencies.localQuorum },
				),
		},
	});
	const release = (await client.execute("SELECT release_version FROM system.local")).rows[0];
	console.log(
		`\nCassandra ${String(release?.get("release_version"))}, single node, RF 1, QUORUM / SERIAL (the driver's defaults), cassandra-driver 4.10.0, Node ${process.version}\n`,
	);
	console.log(formatBenchTable(results));
} finally {
	await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
	await client.shutdown();
}
