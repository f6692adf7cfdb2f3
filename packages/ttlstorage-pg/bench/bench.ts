// compare-and-swap throughput of the pg driver and of the level driver, in one run: ops/s, p50/p99
// latency, and CPU per operation (this process; and for PostgreSQL the server's processes too, when
// it runs on this machine). CAS renews a record with its own value, as elections do.
//   pnpm --filter @vvm/ttlstorage-pg bench   (PostgreSQL from tooling/servers/postgres must be running)
// Env: PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE (default the repo's server: 127.0.0.1:54329,
// vvm/vvm), BENCH_OPS (per driver and concurrency; default 5000), BENCH_CONCURRENCY (default "1,16").
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { availableParallelism, cpus, tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import pg from "pg";
import { createPgTTLStorage, ensurePgSchema } from "../src/index.ts";

const operations = Number(process.env.BENCH_OPS ?? 5000);
const levels = (process.env.BENCH_CONCURRENCY ?? "1,16").split(",").map(Number);
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s

interface Row {
	readonly driver: string;
	readonly concurrency: number;
	readonly opsPerSec: number;
	readonly p50Ms: number;
	readonly p99Ms: number;
	/** CPU of this process per operation, µs. */
	readonly clientCpuUs: number;
	/** CPU of the database server's processes per operation, µs (pg on this machine only). */
	readonly serverCpuUs: number | undefined;
}

/** CPU seconds used so far by the postmaster `postmaster` and its children (/proc, Linux). */
function serverCpuSeconds(postmaster: number | undefined): number | undefined {
	if (postmaster === undefined) return undefined;
	let ticks = 0;
	for (const entry of readdirSync("/proc")) {
		if (!/^\d+$/.test(entry)) continue;
		try {
			const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
			const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
			const pid = Number(entry);
			const ppid = Number(fields[1]);
			if (pid === postmaster || ppid === postmaster)
				ticks += Number(fields[11]) + Number(fields[12]);
		} catch {
			// the process ended meanwhile
		}
	}
	return ticks / TICKS;
}

/** The postmaster's PID when the server is the repo's own (tooling/servers/postgres). */
function localPostmaster(): number | undefined {
	try {
		const pidFile = join(import.meta.dirname, "../../../.servers/postgres/pid");
		const pid = Number(readFileSync(pidFile, "utf8").trim());
		return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
	} catch {
		return undefined;
	}
}

function pgVersion(): string {
	try {
		const main = createRequire(import.meta.url).resolve("pg");
		const manifest = join(main, "../../package.json");
		return String(JSON.parse(readFileSync(manifest, "utf8")).version);
	} catch {
		return "8";
	}
}

function percentile(sorted: readonly number[], p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

async function casBench(
	driver: string,
	storage: TTLStorage,
	concurrency: number,
	postmaster: number | undefined,
): Promise<Row> {
	const run = `bench/${process.pid}/${Date.now().toString(36)}/${concurrency}`;
	const value = utf8("vvm-host-127.0.0.1:8080");
	// One record per worker: contention-free renewals, as one leader per key does.
	const keys = Array.from({ length: concurrency }, (_, i) => ({
		p: utf8(`${run}/${i}`),
		c: utf8("leader"),
	}));
	for (const k of keys) await storage.insertIfNotExists(k.p, k.c, value, 60);
	const warmup = Math.ceil(operations / 10);
	const work = async (total: number, latencies?: number[]) => {
		let next = 0;
		await Promise.all(
			keys.map(async (k) => {
				for (;;) {
					const i = next++;
					if (i >= total) return;
					const t0 = performance.now();
					if (!(await storage.compareAndSwap(k.p, k.c, value, value, 60)))
						throw new Error(`${driver}: a renewal failed`);
					if (latencies !== undefined) latencies[i] = performance.now() - t0;
				}
			}),
		);
	};
	await work(warmup);
	const latencies = new Array<number>(operations);
	const server0 = serverCpuSeconds(postmaster);
	const cpu0 = process.cpuUsage();
	const t0 = performance.now();
	await work(operations, latencies);
	const elapsed = performance.now() - t0;
	const cpu = process.cpuUsage(cpu0);
	const server1 = serverCpuSeconds(postmaster);
	const sorted = latencies.sort((a, b) => a - b);
	return {
		driver,
		concurrency,
		opsPerSec: Math.round((operations / elapsed) * 1000),
		p50Ms: percentile(sorted, 50),
		p99Ms: percentile(sorted, 99),
		clientCpuUs: (cpu.user + cpu.system) / operations,
		serverCpuUs:
			server0 === undefined || server1 === undefined
				? undefined
				: ((server1 - server0) * 1e6) / operations,
	};
}

const pool = new pg.Pool({
	host: process.env.PGHOST ?? "127.0.0.1",
	port: Number(process.env.PGPORT ?? 54329),
	user: process.env.PGUSER ?? "vvm",
	database: process.env.PGDATABASE ?? "vvm",
	max: Math.max(...levels) + 1,
});
pool.on("error", () => {});
const schema = `vvm_bench_${process.pid.toString(36)}${Date.now().toString(36)}`;
const dir = await mkdtemp(join(tmpdir(), "vvm-ttl-pg-bench-"));
const level = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true });
const rows: Row[] = [];
try {
	await ensurePgSchema(pool, { schema });
	const storage = createPgTTLStorage({ pool, schema });
	const postmaster = process.env.PGHOST === undefined ? localPostmaster() : undefined;
	for (const concurrency of levels) {
		for (const [name, s, server] of [
			["pg", storage, postmaster],
			["level", level, undefined],
		] as const) {
			const row = await casBench(name, s, concurrency, server);
			console.error(
				`${name} compareAndSwap x${operations} (concurrency ${concurrency}): ${row.opsPerSec} ops/s`,
			);
			rows.push(row);
		}
	}
	await storage.close();
	const version = (await pool.query("SHOW server_version")).rows[0]?.server_version;
	const settings = (
		await pool.query(
			"SELECT string_agg(name || '=' || setting, ', ' ORDER BY name) AS s FROM pg_settings WHERE name IN ('fsync', 'synchronous_commit', 'shared_buffers')",
		)
	).rows[0]?.s;
	console.log(
		`\ncompareAndSwap (renewal with the same value, TTL 60 s), ${operations} per row; PostgreSQL ${String(version)} on 127.0.0.1 (${String(settings)}), pg ${pgVersion()}, a pool of ${Math.max(...levels) + 1}; classic-level in a temp dir; ${availableParallelism()} cores (${cpus()[0]?.model ?? "?"}), Node ${process.version}\n`,
	);
	console.log(
		"| driver | concurrency | ops/s | p50 ms | p99 ms | client CPU µs/op | server CPU µs/op |",
	);
	console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: |");
	for (const r of rows)
		console.log(
			`| ${r.driver} | ${r.concurrency} | ${r.opsPerSec.toLocaleString("en-US")} | ${r.p50Ms.toFixed(3)} | ${r.p99Ms.toFixed(3)} | ${r.clientCpuUs.toFixed(0)} | ${r.serverCpuUs === undefined ? "–" : r.serverCpuUs.toFixed(0)} |`,
		);
} finally {
	await level.close();
	await rm(dir, { recursive: true, force: true });
	await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => {});
	await pool.end();
}
