import { utf8 } from "../bytes.ts";
import type { TTLStorage } from "../ttl-storage.ts";

/** Latency and throughput of one operation. */
export interface BenchResult {
	readonly operation: string;
	readonly concurrency: number;
	readonly operations: number;
	readonly opsPerSec: number;
	readonly p50Ms: number;
	readonly p99Ms: number;
}

/** Options of {@link benchTTLStorage}. */
export interface BenchOptions {
	/** Operations per measured operation type; default 2000. */
	readonly operations?: number;
	/** Operations in flight at once; several values measure each in turn. Default `[1, 16]`. */
	readonly concurrency?: number | readonly number[];
	/** Un-measured operations first, to warm up JIT and connections; default 10% of `operations`. */
	readonly warmup?: number;
	/** TTL used for writes; default 60 s. */
	readonly ttlSeconds?: number;
	/** More operations to measure, e.g. a plain write as a baseline: `i` is the operation index. */
	readonly extra?: Readonly<Record<string, (i: number) => Promise<unknown>>>;
	/** Progress lines (one per operation type); default none. */
	readonly log?: (line: string) => void;
}

function percentile(sorted: readonly number[], p: number): number {
	if (sorted.length === 0) return 0;
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

async function measure(
	name: string,
	total: number,
	concurrency: number,
	op: (i: number) => Promise<unknown>,
): Promise<BenchResult> {
	const latencies = new Array<number>(total);
	let next = 0;
	const start = performance.now();
	const worker = async (): Promise<void> => {
		for (;;) {
			const i = next++;
			if (i >= total) return;
			const t0 = performance.now();
			await op(i);
			latencies[i] = performance.now() - t0;
		}
	};
	await Promise.all(Array.from({ length: concurrency }, worker));
	const elapsed = performance.now() - start;
	const sorted = latencies.sort((a, b) => a - b);
	return {
		operation: name,
		concurrency,
		operations: total,
		opsPerSec: Math.round((total / elapsed) * 1000),
		p50Ms: percentile(sorted, 50),
		p99Ms: percentile(sorted, 99),
	};
}

/**
 * Measures `insertIfNotExists` (fresh keys), `compareAndSwap` (renewing a value with itself, as
 * elections do), `get`, and a plain `put` as the baseline, plus any `extra` operations, at each
 * concurrency: operations per second and p50/p99 latency. Keys are unique per call, so a shared
 * server is fine.
 *
 * @example
 * ```ts
 * const results = await benchTTLStorage(storage, { operations: 2000, concurrency: 16 });
 * console.log(formatBenchTable(results));
 * ```
 */
export async function benchTTLStorage(
	storage: TTLStorage,
	options: BenchOptions = {},
): Promise<BenchResult[]> {
	const levels = options.concurrency ?? [1, 16];
	const results: BenchResult[] = [];
	for (const concurrency of typeof levels === "number" ? [levels] : levels) {
		results.push(...(await benchAt(storage, concurrency, options)));
	}
	return results;
}

async function benchAt(
	storage: TTLStorage,
	concurrency: number,
	options: BenchOptions,
): Promise<BenchResult[]> {
	const total = options.operations ?? 2000;
	const warmup = options.warmup ?? Math.ceil(total / 10);
	const ttl = options.ttlSeconds ?? 60;
	const run = `bench/${process.pid}/${Date.now().toString(36)}/${concurrency}`;
	const pKey = (i: number) => utf8(`${run}/${i % 64}`);
	const cCols = (i: number) => utf8(`k${i}`);
	const value = utf8("vvm-host-127.0.0.1:8080");
	const ops: Array<[string, (i: number) => Promise<unknown>]> = [
		["insertIfNotExists", (i) => storage.insertIfNotExists(pKey(i), cCols(i), value, ttl)],
		["compareAndSwap", (i) => storage.compareAndSwap(pKey(i), cCols(i), value, value, ttl)],
		["get", (i) => storage.get(pKey(i), cCols(i))],
		["put", (i) => storage.put(pKey(i), utf8(`put${i}`), value, ttl)],
		...Object.entries(options.extra ?? {}),
	];
	// Warm-up inserts use their own keys; the measured CAS and get then hit the measured inserts.
	const warmKey = utf8(`${run}/warm`);
	for (let i = 0; i < warmup; i++) {
		await storage.insertIfNotExists(warmKey, cCols(i), value, ttl);
		await storage.get(warmKey, cCols(i));
	}
	const results: BenchResult[] = [];
	for (const [name, op] of ops) {
		const r = await measure(name, total, concurrency, op);
		options.log?.(
			`${name} x${total} (concurrency ${concurrency}): ${r.opsPerSec} ops/s, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms`,
		);
		results.push(r);
	}
	return results;
}

/** A Markdown table of results, for READMEs. */
export function formatBenchTable(results: readonly BenchResult[]): string {
	const rows = results.map(
		(r) =>
			`| ${r.operation} | ${r.concurrency} | ${r.operations} | ${r.opsPerSec.toLocaleString("en-US")} | ${r.p50Ms.toFixed(3)} | ${r.p99Ms.toFixed(3)} |`,
	);
	return [
		"| operation | concurrency | operations | ops/s | p50 ms | p99 ms |",
		"| --- | ---: | ---: | ---: | ---: | ---: |",
		...rows,
	].join("\n");
}
