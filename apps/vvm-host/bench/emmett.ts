// Emmett's appendToStream on PostgreSQL, in its own process: the reference row of issue 36 (an
// event store's append with optimistic concurrency, on the same server as the host's pg rows).
// Started by host-bench.ts, which reads PostgreSQL's CPU around the measured phase; it prints one
// JSON line per phase ({ phase, ok, total, seconds, p50, p99, cpuUs, conflicts }).
//
//   node bench/emmett.ts <seconds> <streams> <concurrency>
//
// Emmett's tables and functions go into a schema of this run's own (its SQL names them without a
// schema, so the pool's search_path places them), dropped at the end. PGHOST, PGPORT, PGUSER,
// PGDATABASE (PG_PORT as a fallback for the port), else the repository's server; node-postgres
// reads PGPASSWORD itself. BENCH_EMMETT_HANDSHAKE=1 (set by host-bench.ts): after each phase's
// line, wait for a line on stdin before going on, so the parent reads the server's CPU between
// phases without the next phase's (or the clean-up's) work in it.
import { createInterface } from "node:readline";
import type { PostgresEventStore } from "@event-driven-io/emmett-postgresql";
import {
	getPostgreSQLEventStore,
	PostgreSQLEventStoreDefaultStreamVersion,
} from "@event-driven-io/emmett-postgresql";
import pg from "pg";
import { pgConnection } from "./servers.ts";

const [secondsArg, streamsArg, concurrencyArg] = process.argv.slice(2);
const SECONDS = Number(secondsArg ?? 6);
const STREAMS = Number(streamsArg ?? 10_000);
const CONCURRENCY = Number(concurrencyArg ?? 16);
const HANDSHAKE = process.env.BENCH_EMMETT_HANDSHAKE === "1";
const SCHEMA = `emmett${process.pid}x${Date.now().toString(36)}`;

for (const [name, value] of [
	["seconds", SECONDS],
	["streams", STREAMS],
	["concurrency", CONCURRENCY],
] as const)
	if (!Number.isFinite(value) || value <= 0)
		throw new Error(`emmett bench: <${name}> must be a positive number, got ${String(value)}`);
// The random pick skips streams in flight: it needs one free stream whatever the others do.
if (STREAMS < CONCURRENCY)
	throw new Error(
		`emmett bench: <streams> (${STREAMS}) must be at least <concurrency> (${CONCURRENCY})`,
	);

/** The same server as a URL, which Emmett asks for beside the pool it is given. */
function pgUrl(c: ReturnType<typeof pgConnection>): string {
	const host = c.host.startsWith("/")
		? encodeURIComponent(c.host)
		: c.host.includes(":")
			? `[${c.host}]`
			: c.host;
	return `postgres://${encodeURIComponent(c.user)}@${host}:${c.port}/${encodeURIComponent(c.database)}`;
}

/** Emmett's expected-version conflict (its errorCode is HTTP's 412, Precondition Failed). */
const isConflict = (error: unknown): boolean =>
	typeof error === "object" &&
	error !== null &&
	(error as { errorCode?: unknown }).errorCode === 412;

const quantile = (sorted: readonly number[], p: number): number =>
	sorted[Math.floor(p * (sorted.length - 1))] ?? 0;

/** The parent's lines on stdin, when it asked for the handshake. */
const parent = HANDSHAKE ? createInterface({ input: process.stdin }) : null;
const parentLines = parent?.[Symbol.asyncIterator]();
async function waitForParent(): Promise<void> {
	await parentLines?.next();
}

interface Phase {
	readonly latencies: number[];
	ok: number;
	conflicts: number;
}

/** Prints one phase's JSON line: this process's CPU (every thread) per append is the client's. */
function report(phase: string, p: Phase, seconds: number, cpu0: NodeJS.CpuUsage): void {
	p.latencies.sort((a, b) => a - b);
	const cpu = process.cpuUsage(cpu0);
	const n = Math.max(1, p.latencies.length);
	console.log(
		JSON.stringify({
			phase,
			ok: p.ok,
			total: p.latencies.length,
			conflicts: p.conflicts,
			seconds,
			p50: quantile(p.latencies, 0.5),
			p99: quantile(p.latencies, 0.99),
			cpuUs: (cpu.user + cpu.system) / n,
		}),
	);
}

/**
 * CONCURRENCY workers append one event each time to the stream `pick` gives, with the version
 * `versions` holds for it as the expected one, until `pick` gives undefined. A stream is never
 * appended to by two workers at once (`pick` skips busy ones), so a conflict is Emmett's, not
 * the bench's; each is counted.
 */
async function run(
	store: PostgresEventStore,
	versions: BigInt64Array,
	pick: (busy: ReadonlySet<number>) => number | undefined,
): Promise<Phase> {
	const phase: Phase = { latencies: [], ok: 0, conflicts: 0 };
	const busy = new Set<number>();
	const worker = async (): Promise<void> => {
		for (;;) {
			const stream = pick(busy);
			if (stream === undefined) return;
			busy.add(stream);
			const s = performance.now();
			try {
				const r = await store.appendToStream(
					`customer-${stream}`,
					[{ type: "CustomerCreated", data: { name: "Ada Lovelace" } }],
					{ expectedStreamVersion: versions[stream] ?? PostgreSQLEventStoreDefaultStreamVersion },
				);
				versions[stream] = r.nextExpectedStreamVersion;
				phase.ok++;
			} catch (error) {
				if (!isConflict(error)) throw error;
				phase.conflicts++;
			} finally {
				phase.latencies.push(performance.now() - s);
				busy.delete(stream);
			}
		}
	};
	await Promise.all(Array.from({ length: CONCURRENCY }, worker));
	return phase;
}

async function main(): Promise<void> {
	const connection = pgConnection();
	const admin = new pg.Pool({ ...connection, max: 1 });
	admin.on("error", () => {});
	await admin.query(`CREATE SCHEMA ${SCHEMA}`);
	// One connection per client, as pgbench -c: Emmett holds one for each append's transaction.
	const pool = new pg.Pool({
		...connection,
		max: CONCURRENCY,
		options: `-c search_path=${SCHEMA}`,
	});
	pool.on("error", () => {});
	const store = getPostgreSQLEventStore(pgUrl(connection), { connectionOptions: { pool } });
	try {
		// Emmett creates its tables on first use; done here so no phase measures it.
		await store.schema.migrate();
		// Index 0 unused: streams are 1..STREAMS. 0n: the stream does not exist yet.
		const versions = new BigInt64Array(STREAMS + 1);
		{
			let next = 1;
			const cpu0 = process.cpuUsage();
			const t0 = performance.now();
			const p = await run(store, versions, () => (next <= STREAMS ? next++ : undefined));
			report("warmup", p, (performance.now() - t0) / 1000, cpu0);
			await waitForParent();
		}
		{
			const cpu0 = process.cpuUsage();
			const t0 = performance.now();
			const end = t0 + SECONDS * 1000;
			const p = await run(store, versions, (busy) => {
				if (performance.now() >= end) return undefined;
				for (;;) {
					const stream = 1 + Math.floor(Math.random() * STREAMS);
					if (!busy.has(stream)) return stream;
				}
			});
			report("warm", p, (performance.now() - t0) / 1000, cpu0);
			await waitForParent();
		}
	} finally {
		await store.close();
		await pool.end();
		await admin.query(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`).catch((error: unknown) => {
			process.stderr.write(`emmett bench: could not drop schema ${SCHEMA}: ${String(error)}\n`);
		});
		await admin.end();
		parent?.close();
	}
}

await main();
