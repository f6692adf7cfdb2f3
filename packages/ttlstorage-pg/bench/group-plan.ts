// PostgreSQL cost of the write group statement under a create-like load (issue 36): level-0
// creates as `putBatchIf` (insert of a PLog entry, of a record, of a WLog entry, a put of an
// idempotency key, all fenced by the partition), `BENCH_CONCURRENCY` callers at once. Reports the
// statement's per-call time and buffer hits from pg_stat_statements and the CPU of the pool's
// backends (/proc, pg on this machine), per group and per create; then EXPLAIN (ANALYZE, BUFFERS)
// of a representative group under a generic and a custom plan (rolled back).
//   node --import tsx --conditions=@vvm/source bench/group-plan.ts
// Env: PG* (default the repo's server), BENCH_CREATES (default 6000), BENCH_CONCURRENCY (16),
// BENCH_FILL (records before the run, default 20000; 0 = a fresh table, like a new host's),
// BENCH_ANALYZE (1: ANALYZE after the fill), BENCH_EXPLAIN (0: skip the plans),
// BENCH_SHAPE (puts: the same records as one fenced `putBatch` each, as level 2 writes a create
// at pipelineDepth 1, which take the puts-only statement).
import { readFileSync } from "node:fs";
import pg from "pg";
// @ts-expect-error: node-postgres' own literal encoder, not in its types
import { prepareValue } from "pg/lib/utils.js";
import { createPgTTLStorage, ensurePgSchema } from "../src/index.ts";
import { pgStatements } from "../src/statements.ts";

const creates = Number(process.env.BENCH_CREATES ?? 6000);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 16);
const fill = Number(process.env.BENCH_FILL ?? 20000);
const analyze = process.env.BENCH_ANALYZE === "1";
const explain = process.env.BENCH_EXPLAIN !== "0";
const shape = process.env.BENCH_SHAPE === "puts" ? "puts" : "putBatchIf";
const PARTITIONS = 10;
const APP = "grpplan";

const settings = {
	host: process.env.PGHOST ?? "127.0.0.1",
	port: Number(process.env.PGPORT ?? 54329),
	user: process.env.PGUSER ?? "vvm",
	password: process.env.PGPASSWORD ?? "vvm",
	database: process.env.PGDATABASE ?? "vvm",
};

const u32 = (b: Buffer, at: number, v: number) => b.writeUInt32BE(v >>> 0, at);
const u64 = (v: number) => {
	const b = Buffer.alloc(8);
	b.writeBigUInt64BE(BigInt(v));
	return b;
};
/** A cp-like pKey: prefix, app, an id, a bucket. */
function pKey(prefix: number, id: number, bucket: number, size = 24): Buffer {
	const b = Buffer.alloc(size);
	u32(b, 0, prefix);
	u32(b, 4, 1);
	b.writeBigUInt64BE(BigInt(id), 8);
	if (size >= 24) b.writeBigUInt64BE(BigInt(bucket), 16);
	return b;
}
const value = (n: number, size: number) => Buffer.alloc(size, n % 251);
const scopeOf = (p: number) => Buffer.from(`partition:${p}`);

/** CPU ticks (1/100 s) of processes `pids`. */
function ticks(pids: readonly number[]): number {
	let sum = 0;
	for (const pid of pids) {
		try {
			const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
			const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			sum += Number(f[11]) + Number(f[12]);
		} catch {
			// gone
		}
	}
	return sum;
}

async function statRow(pool: pg.Pool, schema: string) {
	const r = await pool.query(
		`SELECT coalesce(sum(calls),0)::int8 AS calls, coalesce(sum(total_exec_time),0) AS ms,
			coalesce(sum(plans),0)::int8 AS plans, coalesce(sum(total_plan_time),0) AS plan_ms,
			coalesce(sum(shared_blks_hit),0)::int8 AS hits, coalesce(sum(shared_blks_read),0)::int8 AS reads,
			coalesce(sum(shared_blks_dirtied),0)::int8 AS dirtied, coalesce(sum(wal_records),0)::int8 AS wal
		FROM pg_stat_statements WHERE query LIKE 'WITH i AS MATERIALIZED%' AND query LIKE $1`,
		[`%"${schema}"%`],
	);
	const row = r.rows[0];
	const t = await pool.query(
		`SELECT coalesce(sum(seq_scan),0)::int8 AS seq, coalesce(sum(seq_tup_read),0)::int8 AS tup
		FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'vvm_ttl'`,
		[schema],
	);
	return {
		seqScans: Number(t.rows[0].seq),
		seqTuples: Number(t.rows[0].tup),
		calls: Number(row.calls),
		ms: Number(row.ms),
		plans: Number(row.plans),
		planMs: Number(row.plan_ms),
		hits: Number(row.hits),
		reads: Number(row.reads),
		dirtied: Number(row.dirtied),
		wal: Number(row.wal),
	};
}

async function main(): Promise<void> {
	const schema = process.env.BENCH_SCHEMA ?? `grpplan_${process.pid.toString(36)}`;
	const admin = new pg.Pool({ ...settings, max: 2 });
	// track_planning (superuser): how often the sessions plan the statement anew.
	const pool = new pg.Pool({
		...settings,
		max: concurrency,
		application_name: APP,
		options: "-c pg_stat_statements.track_planning=on",
	});
	await ensurePgSchema(admin, { schema });
	const storage = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
	const raise = storage.raiseFence?.bind(storage);
	if (raise === undefined) throw new Error("the pg driver has no raiseFence");
	const fences = Array.from({ length: PARTITIONS }, (_, p) => scopeOf(p));
	const epochs = await Promise.all(fences.map((s) => raise(s)));
	const fenceOf = (p: number) => ({ scope: fences[p] as Buffer, epoch: epochs[p] as bigint });
	let t0 = Date.now();
	for (let done = 0; done < fill; ) {
		const n = Math.min(500, fill - done);
		await storage.putBatch(
			Array.from({ length: n }, (_, j) => {
				const id = 1_000_000 + done + j;
				return {
					pKey: pKey(7, 100 + (id % 50), Math.floor(id / 4096)),
					cCols: u64(id),
					value: value(id, 120),
					fence: fenceOf(id % PARTITIONS),
				};
			}),
		);
		done += n;
	}
	if (fill > 0) console.log(`filled ${fill} records in ${Date.now() - t0} ms`);
	if (analyze) await admin.query(`ANALYZE "${schema}"."vvm_ttl", "${schema}"."vvm_ttl_fences"`);
	// Open every connection of the pool, and find their backends.
	await Promise.all(Array.from({ length: concurrency }, () => pool.query("SELECT pg_sleep(0.05)")));
	const pids = (
		await admin.query(
			"SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = $2",
			[APP, settings.database],
		)
	).rows.map((r) => Number(r.pid));
	const before = await statRow(admin, schema);
	const cpu0 = ticks(pids);
	const offsets = new Array<number>(PARTITIONS).fill(0);
	let next = 0;
	t0 = performance.now();
	const worker = async () => {
		for (;;) {
			const n = next++;
			if (n >= creates) return;
			const p = n % PARTITIONS;
			const o = offsets[p] ?? 0;
			offsets[p] = o + 1;
			const ws = 1000 + (n % 97);
			const fence = fenceOf(p);
			const event = value(n, 300);
			const inserted = [
				{ pKey: pKey(5, p, Math.floor(o / 4096), 18), cCols: u64(o), value: event, fence },
				{ pKey: pKey(7, ws, 0), cCols: u64(5_000_000 + n), value: value(n, 150), fence },
				{ pKey: pKey(6, ws, 0), cCols: u64(n), value: event, fence },
			];
			const key = {
				pKey: pKey(8, ws, 0, 20),
				cCols: Buffer.from(`idem-${n}`),
				value: value(n, 40),
				ttlSeconds: 600,
				fence,
			};
			if (shape === "puts") {
				await storage.putBatch([...inserted, key]);
				continue;
			}
			const ok = await storage.putBatchIf([
				...inserted.map((item) => ({ ...item, expected: null })),
				key,
			]);
			if (!ok) throw new Error(`create ${n} refused`);
		}
	};
	await Promise.all(Array.from({ length: concurrency }, worker));
	const seconds = (performance.now() - t0) / 1000;
	const cpu1 = ticks(pids);
	await new Promise((resolve) => setTimeout(resolve, 1500)); // backends flush table stats idle
	const after = await statRow(admin, schema);
	const calls = after.calls - before.calls;
	const ms = after.ms - before.ms;
	console.log(
		JSON.stringify({
			schema,
			shape,
			fill,
			analyze,
			concurrency,
			creates,
			createsPerSec: Math.round(creates / seconds),
			groups: calls,
			createsPerGroup: +(creates / calls).toFixed(2),
			msPerGroup: +(ms / calls).toFixed(3),
			usPerCreateExec: Math.round((ms * 1000) / creates),
			plans: after.plans - before.plans,
			planMsPerPlan: +(
				(after.planMs - before.planMs) /
				Math.max(1, after.plans - before.plans)
			).toFixed(3),
			hitsPerGroup: +((after.hits - before.hits) / calls).toFixed(1),
			readsPerGroup: +((after.reads - before.reads) / calls).toFixed(2),
			dirtiedPerGroup: +((after.dirtied - before.dirtied) / calls).toFixed(2),
			walPerGroup: +((after.wal - before.wal) / calls).toFixed(1),
			backendCpuUsPerCreate: Math.round(((cpu1 - cpu0) * 10_000) / creates),
			backends: pids.length,
			seqScansOfRecords: after.seqScans - before.seqScans,
			seqTuplesPerGroup: Math.round((after.seqTuples - before.seqTuples) / calls),
		}),
	);
	await storage.close();
	// The plans the run's own sessions cached (what the driver's prepared statement ran with).
	if (process.env.BENCH_PROBE === "1") await probeSessions(pool, schema, fenceOf);
	await pool.end();
	if (explain) await explainPlans(admin, schema, fenceOf);
	if (process.env.BENCH_KEEP !== "1") await admin.query(`DROP SCHEMA "${schema}" CASCADE`);
	await admin.end();
}

type FenceOf = (p: number) => { scope: Buffer; epoch: bigint };

/** The write statement the run's groups took: the general one, or the puts-only one. */
function statementOf(schema: string) {
	const sql = pgStatements(schema, "vvm_ttl", false);
	return shape === "puts" ? sql.puts : sql.group;
}

/** The group statement's arguments, as SQL literals, for a 3-request group like the run's. */
function sampleArgs(client: pg.PoolClient, schema: string, fenceOf: FenceOf, seed: number): string {
	const stmt = statementOf(schema);
	const a: Record<string, unknown[]> = {};
	for (const name of stmt.params) a[name] = [];
	const push = (k: Record<string, unknown>) => {
		for (const [name, v] of Object.entries(k)) a[name]?.push(v);
	};
	for (let r = 0; r < 3; r++) {
		const n = seed + r;
		const f = fenceOf(r);
		const items = [
			[1, pKey(5, r, 0, 18), u64(n)],
			[1, pKey(7, 1000 + r, 0), u64(n)],
			[1, pKey(6, 1000 + r, 0), u64(n)],
			[0, pKey(8, 1000 + r, 0, 20), Buffer.from(`idem-x${n}`)],
		] as const;
		for (const [k, p, c] of items)
			push({
				r,
				k,
				p,
				c,
				v: value(n, 100),
				ex: null,
				ttl: k === 0 ? 600 : 0,
				fe: f.epoch.toString(),
				fs: n,
			});
		push({ fr: r, fsc: f.scope, fep: f.epoch.toString() });
	}
	// EXECUTE takes no bind parameters: the arrays as literals.
	return stmt.params.map((name) => client.escapeLiteral(String(prepareValue(a[name])))).join(",");
}

/** EXPLAIN (ANALYZE, BUFFERS) on every session of `pool` of the statement it prepared, rolled back. */
async function probeSessions(pool: pg.Pool, schema: string, fenceOf: FenceOf): Promise<void> {
	const stmt = statementOf(schema);
	const clients = await Promise.all(Array.from({ length: concurrency }, () => pool.connect()));
	for (const [j, client] of clients.entries()) {
		const args = sampleArgs(client, schema, fenceOf, 800_000 + 10 * j);
		const prepared = await client.query("SELECT 1 FROM pg_prepared_statements WHERE name = $1", [
			stmt.name,
		]);
		if (prepared.rows.length === 0) continue; // a session the run did not use
		await client.query("BEGIN");
		const plan = await client.query(
			`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) EXECUTE ${stmt.name}(${args})`,
		);
		await client.query("ROLLBACK");
		const lines = plan.rows.map((row) => String(row["QUERY PLAN"]));
		const pick = lines.filter((l) =>
			/Seq Scan|Execution Time|Planning Time|^Merge|^Hash|^Nested/.test(l),
		);
		console.log(`--- session ${j}: ${pick.map((l) => l.trim()).join(" | ")}`);
		if (j === 0 || process.env.BENCH_PROBE_FULL === "1") console.log(lines.join("\n"));
	}
	for (const client of clients) client.release();
}

/** EXPLAIN (ANALYZE, BUFFERS) of a 3-request group like the run's, generic and custom, rolled back. */
async function explainPlans(admin: pg.Pool, schema: string, fenceOf: FenceOf): Promise<void> {
	const client = await admin.connect();
	const stmt = statementOf(schema);
	try {
		for (const mode of ["force_generic_plan", "force_custom_plan"]) {
			await client.query("BEGIN");
			await client.query(`SET LOCAL plan_cache_mode = ${mode}`);
			await client.query(`PREPARE gp AS ${stmt.text}`);
			const args = sampleArgs(client, schema, fenceOf, 900_000);
			// Twice: the first run pays one-off costs (catalog caches).
			await client.query("SAVEPOINT s");
			await client.query(`EXECUTE gp(${args})`);
			await client.query("ROLLBACK TO SAVEPOINT s");
			const plan = await client.query(
				`EXPLAIN (ANALYZE, BUFFERS, COSTS ${process.env.BENCH_COSTS === "1" ? "ON" : "OFF"}) EXECUTE gp(${args})`,
			);
			console.log(`--- ${mode}`);
			console.log(plan.rows.map((row) => row["QUERY PLAN"]).join("\n"));
			await client.query("ROLLBACK");
			await client.query("DEALLOCATE ALL");
		}
	} finally {
		client.release();
	}
}

await main();
