// Benchmark of @vvm/isequencer. Run: pnpm --filter @vvm/isequencer bench
// (node --expose-gc --import tsx --conditions=@vvm/source bench/bench.ts [section [uniform]]).
// Every section runs once per cache ("lru-cache", then "clock"), each in a process of its own so
// one cache's call sites do not make the other's polymorphic; BENCH_CACHE=<kind> runs one only.
// The storage is in memory and resolves at once, so storage I/O is not measured; the sequencer's own
// flushing work (building batches, writing them to the in-memory map) is.
import { spawnSync } from "node:child_process";
import { performance } from "node:perf_hooks";
import { setImmediate as yieldToLoop } from "node:timers/promises";
import type {
	CacheKind,
	PLogOffset,
	SeqBatcher,
	SeqID,
	SeqStorage,
	SeqValue,
	WSID,
} from "../src/index.ts";
import { createSequencer } from "../src/index.ts";
import { CACHE_KINDS } from "../src/record-cache.ts";

const WLOG: SeqID = 1;
const REC: SeqID = 2;
const KIND = 1;
const seqTypes = { [KIND]: { [WLOG]: 1, [REC]: 200_001 } };
const cacheEnv = process.env.BENCH_CACHE as CacheKind | undefined;
const cache: CacheKind = cacheEnv ?? "lru-cache";

interface PLogEvent {
	readonly offset: PLogOffset;
	readonly values: readonly SeqValue[];
}

/** In-memory storage: every call resolves at once. */
class MemStorage implements SeqStorage {
	readonly numbers: number[] = [];
	nextOffset = 1;
	plog: PLogEvent[] = [];
	writes = 0;
	readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly number[]> {
		return Promise.resolve(seqIds.map((s) => this.numbers[wsid * 4 + s] ?? 0));
	}
	readNextPLogOffset(): Promise<PLogOffset> {
		return Promise.resolve(this.nextOffset);
	}
	writeValuesAndNextPLogOffset(batch: readonly SeqValue[], next: PLogOffset): Promise<void> {
		for (const v of batch) this.numbers[v.wsid * 4 + v.seqId] = v.value;
		this.nextOffset = next;
		this.writes++;
		return Promise.resolve();
	}
	async actualizeSequencesFromPLog(
		offset: PLogOffset,
		batcher: SeqBatcher,
		signal: AbortSignal,
	): Promise<void> {
		const plog = this.plog;
		// plog[i].offset === i + 1
		for (let i = offset - 1; i < plog.length; i++) {
			if ((i & 1023) === 0) signal.throwIfAborted();
			const e = plog[i] as PLogEvent;
			const r = batcher(e.values, e.offset);
			if (r !== undefined) await r;
		}
	}
}

async function untilActualized(seq: { stats(): { actualizing: boolean } }): Promise<void> {
	while (seq.stats().actualizing) await yieldToLoop();
}

function median(xs: number[]): number {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)] as number;
}

const WORKSPACES = 100_000;
const CYCLES = 2_000_000;
const RUNS = Number(process.env.BENCH_RUNS ?? 5);

function uniformSequence(n: number): Int32Array {
	const a = new Int32Array(n);
	for (let i = 0; i < n; i++) a[i] = 1 + Math.floor(Math.random() * WORKSPACES);
	return a;
}

function zipfSequence(n: number, s = 1): Int32Array {
	const cdf = new Float64Array(WORKSPACES);
	let sum = 0;
	for (let k = 1; k <= WORKSPACES; k++) {
		sum += 1 / k ** s;
		cdf[k - 1] = sum;
	}
	// Ranks are shuffled over wsids so hot workspaces are not adjacent numbers.
	const perm = new Int32Array(WORKSPACES);
	for (let i = 0; i < WORKSPACES; i++) perm[i] = i + 1;
	for (let i = WORKSPACES - 1; i > 0; i--) {
		const j = Math.floor(Math.random() * (i + 1));
		const t = perm[i] as number;
		perm[i] = perm[j] as number;
		perm[j] = t;
	}
	const a = new Int32Array(n);
	for (let i = 0; i < n; i++) {
		const u = Math.random() * sum;
		let lo = 0;
		let hi = WORKSPACES - 1;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if ((cdf[mid] as number) < u) lo = mid + 1;
			else hi = mid;
		}
		a[i] = perm[lo] as number;
	}
	return a;
}

async function cycles(label: string, wsids: Int32Array): Promise<number> {
	const storage = new MemStorage();
	const { sequencer: seq, cleanup } = createSequencer({ seqTypes, cache }, storage);
	await untilActualized(seq);
	// Warm-up: every workspace read once from storage, so the measured cycles hit the cache.
	for (let ws = 1; ws <= WORKSPACES; ws++) {
		while (seq.start(KIND, ws) === undefined) await yieldToLoop();
		await seq.next(WLOG);
		seq.flush();
	}
	const results: number[] = [];
	let rejected = 0;
	let check = 0;
	for (let run = 0; run < RUNS; run++) {
		const t0 = performance.now();
		for (let i = 0; i < wsids.length; ) {
			if (seq.start(KIND, wsids[i] as number) === undefined) {
				rejected++;
				await yieldToLoop(); // back-pressure: let the flusher write
				continue;
			}
			check += seq.next(WLOG) as number;
			check += seq.next(REC) as number;
			check += seq.next(REC) as number;
			seq.flush();
			i++;
		}
		const dt = performance.now() - t0;
		results.push(wsids.length / (dt / 1000));
	}
	const writes = storage.writes;
	await cleanup();
	const m = median(results);
	console.log(
		`${label}: ${(m / 1e6).toFixed(2)} M cycles/s (median of ${RUNS}; runs ${results.map((r) => (r / 1e6).toFixed(2)).join(", ")}), ` +
			`${rejected} back-pressure waits, ${writes} storage writes, checksum ${check % 1000}`,
	);
	return m;
}

async function nextInOneTx(): Promise<number> {
	const storage = new MemStorage();
	const { sequencer: seq, cleanup } = createSequencer({ seqTypes, cache }, storage);
	await untilActualized(seq);
	seq.start(KIND, 1);
	await seq.next(WLOG);
	const N = 50_000_000;
	const results: number[] = [];
	let check = 0;
	for (let run = 0; run < RUNS; run++) {
		const t0 = performance.now();
		for (let i = 0; i < N; i++) check += seq.next(REC) as number;
		results.push(N / ((performance.now() - t0) / 1000));
	}
	seq.flush();
	await cleanup();
	const m = median(results);
	console.log(
		`next() inside one transaction: ${(m / 1e6).toFixed(1)} M/s (checksum ${check % 1000})`,
	);
	return m;
}

async function actualization(label: string, pick: () => number): Promise<number> {
	const EVENTS = 1_000_000;
	const results: number[] = [];
	for (let run = 0; run < RUNS; run++) {
		const storage = new MemStorage();
		const wlog = new Float64Array(WORKSPACES + 1);
		const rec = new Float64Array(WORKSPACES + 1).fill(200_000);
		for (let i = 0; i < EVENTS; i++) {
			const ws = pick();
			const w = (wlog[ws] as number) + 1;
			const r = (rec[ws] as number) + 1;
			wlog[ws] = w;
			rec[ws] = r;
			storage.plog.push({
				offset: i + 1,
				values: [
					{ wsid: ws, seqId: REC, value: r },
					{ wsid: ws, seqId: WLOG, value: w },
				],
			});
		}
		const t0 = performance.now();
		const { sequencer: seq, cleanup } = createSequencer(
			{ seqTypes, cache, maxNumUnflushedValues: Number(process.env.BENCH_MAX_UNFLUSHED ?? 500) },
			storage,
		);
		await untilActualized(seq);
		const dt = performance.now() - t0;
		results.push(EVENTS / (dt / 1000));
		if (seq.stats().nextPLogOffset !== EVENTS + 1) throw new Error("actualization incomplete");
		await cleanup();
	}
	const m = median(results);
	console.log(
		`actualization of ${EVENTS} events (2 values each), ${label} over ${WORKSPACES} workspaces: ${(m / 1e6).toFixed(2)} M events/s (runs ${results.map((r) => (r / 1e6).toFixed(2)).join(", ")})`,
	);
	return m;
}

async function heapPerKey(): Promise<void> {
	const gc = (globalThis as { gc?: () => void }).gc;
	if (gc === undefined) {
		console.log("heap per cached key: run with node --expose-gc");
		return;
	}
	const storage = new MemStorage();
	gc();
	gc();
	const before = process.memoryUsage().heapUsed;
	const { sequencer: seq, cleanup } = createSequencer(
		{ seqTypes, cache, lruCacheSize: WORKSPACES },
		storage,
	);
	await untilActualized(seq);
	for (let ws = 1; ws <= WORKSPACES; ws++) {
		while (seq.start(KIND, ws) === undefined) await yieldToLoop();
		await seq.next(WLOG);
		await seq.next(REC);
		seq.flush();
	}
	while (seq.stats().unflushedValues > 0) await yieldToLoop();
	// Drop the storage's own copy of the numbers so only the sequencer's heap is counted.
	storage.numbers.length = 0;
	gc();
	gc();
	const after = process.memoryUsage().heapUsed;
	const perWs = (after - before) / WORKSPACES;
	console.log(
		`heap: ${perWs.toFixed(0)} B per cached workspace, ${(perWs / 2).toFixed(0)} B per cached (workspace, sequence) number (${seq.stats().cachedWorkspaces} workspaces x 2 sequences, LRU preallocation included)`,
	);
	await cleanup();
}

const only = process.argv[2];
if (cacheEnv === undefined) {
	for (const kind of CACHE_KINDS) {
		console.log(`\n=== cache: ${kind} ===`);
		const r = spawnSync(process.execPath, [...process.execArgv, ...process.argv.slice(1)], {
			stdio: "inherit",
			env: { ...process.env, BENCH_CACHE: kind },
		});
		if (r.status !== 0) process.exit(r.status ?? 1);
	}
} else {
	if (!CACHE_KINDS.includes(cache)) throw new Error(`BENCH_CACHE must be one of ${CACHE_KINDS}`);
	if (only === undefined || only === "next") await nextInOneTx();
	if (only === undefined || only === "cycles") {
		await cycles("start + 3 x next + flush, uniform over 100k workspaces", uniformSequence(CYCLES));
		if (process.argv[3] !== "uniform")
			await cycles(
				"start + 3 x next + flush, Zipf(s=1) over 100k workspaces",
				zipfSequence(CYCLES),
			);
	}
	if (only === undefined || only === "actualize") {
		await actualization("uniform", () => 1 + Math.floor(Math.random() * WORKSPACES));
		const zipf = zipfSequence(1_000_000);
		let z = 0;
		await actualization("Zipf(s=1)", () => zipf[z++ % zipf.length] as number);
	}
	if (only === undefined || only === "heap") await heapPerKey();
}
