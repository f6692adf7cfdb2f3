// Property-based test, once per cache implementation: random interleavings of
// start/next/flush/actualize, storage failures and delays, storage reads whose replies are older
// than writes completed meanwhile (stale and held replies), LRU sizes down to 1, and restarts on
// the same storage and PLog.
// Invariant (checked on EVERY number handed out): the first `next` of a (workspace, sequence) in a
// transaction is exactly one past the highest number of that sequence in the PLog (or its initial
// value), and later ones in the transaction count up from there. Since flushed transactions are the
// PLog, this means flushed numbers strictly increase and are never handed out again, and that
// after actualization (or a restart) the next number is one past the PLog's highest.
import { MockClock } from "@vvm/clock";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { CacheKind, PLogOffset, SeqBatcher, SeqID, SeqValue, WSID } from "../src/index.ts";
import { createSequencer } from "../src/index.ts";
import { CACHE_KINDS } from "../src/record-cache.ts";
import { MockSeqStorage } from "./helpers/mock-storage.ts";

const SEQ_TYPES = { 1: { 1: 1, 2: 100 }, 2: { 1: 1, 3: 5 } } as const;
const KIND_OF_WS = (ws: number): 1 | 2 => (ws % 3 === 0 ? 2 : 1);
const SEQS_OF_KIND = { 1: [1, 2], 2: [1, 3] } as const;

/**
 * How `readNumbers` replies: `fresh` sleeps first and reads last (a reply is never older than the
 * latest write); `stale` takes its values first and replies after a delay of up to 4x the storage
 * delay; `held` takes its values first and replies only when the scenario releases it (a `reply`
 * action releases the oldest held read, waiting on a `next` releases the newest). In the last two
 * a reply can be older than writes that completed meanwhile, as a real storage's can.
 */
type Replies = "fresh" | "stale" | "held";

/** A mock storage that fails and delays at random (seeded), on the MockClock. */
class FlakyStorage extends MockSeqStorage {
	failRate = 0;
	maxDelayMs = 0;
	replies: Replies = "fresh";
	/** Resolvers of held reads, oldest first. */
	readonly held: Array<() => void> = [];
	#rng: () => number;
	#clock: MockClock;
	constructor(rng: () => number, clock: MockClock) {
		super();
		this.#rng = rng;
		this.#clock = clock;
	}
	async #maybe(delayFactor = 1): Promise<void> {
		if (this.maxDelayMs > 0)
			await this.#clock.sleep(Math.floor(this.#rng() * this.maxDelayMs * delayFactor));
		if (this.#rng() < this.failRate) throw new Error("injected storage failure");
	}
	override async readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly number[]> {
		if (this.replies === "fresh") {
			await this.#maybe();
			return super.readNumbers(wsid, seqIds);
		}
		const values = seqIds.map((s) => this.getNumber(wsid, s));
		if (this.replies === "held") {
			await new Promise<void>((resolve) => this.held.push(resolve));
			await this.#maybe(0);
		} else await this.#maybe(4);
		return values;
	}
	override async readNextPLogOffset(): Promise<PLogOffset> {
		await this.#maybe();
		return super.readNextPLogOffset();
	}
	override async writeValuesAndNextPLogOffset(
		batch: readonly SeqValue[],
		offset: PLogOffset,
	): Promise<void> {
		await this.#maybe();
		// Values first, then the offset: a failure may fall in between.
		for (const v of batch) this.setNumber(v.wsid, v.seqId, v.value);
		await this.#maybe();
		this.nextOffset = offset;
	}
	override async actualizeSequencesFromPLog(
		offset: PLogOffset,
		batcher: SeqBatcher,
		signal: AbortSignal,
	): Promise<void> {
		for (let o = offset; this.plog.has(o); o++) {
			signal.throwIfAborted();
			await this.#maybe();
			await batcher(this.plog.get(o) as SeqValue[], o);
		}
	}
}

type Action =
	| {
			kind: "tx";
			ws: number;
			nexts: readonly number[];
			end: "flush" | "actualize";
			pauseMs: number;
	  }
	| { kind: "restart"; lru: number; maxUnflushed: number }
	| { kind: "storage"; failRate: number; maxDelayMs: number }
	| { kind: "advance"; ms: number }
	| { kind: "reply" }
	/** A command for `ws` was queued: the caller reads its numbers ahead. */
	| { kind: "prefetch"; ws: number };

type StorageAction = Extract<Action, { kind: "storage" }>;

const storageArb: fc.Arbitrary<StorageAction> = fc.record({
	kind: fc.constant("storage" as const),
	failRate: fc.constantFrom(0, 0, 0.2, 0.5),
	maxDelayMs: fc.constantFrom(0, 0, 10, 300),
});

const txArb = (flushWeight: number, actualizeWeight: number): fc.Arbitrary<Action> =>
	fc.record({
		kind: fc.constant("tx" as const),
		ws: fc.integer({ min: 1, max: 6 }),
		// Often none: the prefetch of `start` then outlives the transaction.
		nexts: fc.oneof(
			fc.constant<number[]>([]),
			fc.array(fc.integer({ min: 0, max: 1 }), { minLength: 1, maxLength: 4 }),
		),
		end: fc.oneof(
			{ weight: flushWeight, arbitrary: fc.constant("flush" as const) },
			{ weight: actualizeWeight, arbitrary: fc.constant("actualize" as const) },
		),
		// Time the command processor spends before its next command.
		pauseMs: fc.constantFrom(0, 0, 100, 500),
	});

const advanceArb: fc.Arbitrary<Action> = fc.record({
	kind: fc.constant("advance" as const),
	ms: fc.integer({ min: 0, max: 1000 }),
});

const replyArb: fc.Arbitrary<Action> = fc.constant({ kind: "reply" as const });

const prefetchArb: fc.Arbitrary<Action> = fc.record({
	kind: fc.constant("prefetch" as const),
	ws: fc.integer({ min: 1, max: 6 }),
});

/** Everything: failures, delays, restarts, actualizations. */
const actionArb: fc.Arbitrary<Action> = fc.oneof(
	{ weight: 8, arbitrary: txArb(2, 1) },
	{
		weight: 1,
		arbitrary: fc.record({
			kind: fc.constant("restart" as const),
			lru: fc.integer({ min: 1, max: 8 }),
			maxUnflushed: fc.integer({ min: 1, max: 6 }),
		}),
	},
	{ weight: 2, arbitrary: storageArb },
	{ weight: 2, arbitrary: advanceArb },
	{ weight: 2, arbitrary: replyArb },
	{ weight: 2, arbitrary: prefetchArb },
);

/**
 * Read races: few workspaces, a tiny cache, replies older than the latest write, and rarely an
 * actualize or a restart (either discards every read in flight, hiding the race).
 */
const raceActionArb: fc.Arbitrary<Action> = fc.oneof(
	{ weight: 8, arbitrary: txArb(20, 1) },
	{ weight: 3, arbitrary: replyArb },
	{ weight: 1, arbitrary: advanceArb },
	{ weight: 3, arbitrary: prefetchArb },
);

interface Scenario {
	readonly seed: number;
	readonly actions: Action[];
	readonly initialLru: number;
	/** The storage's failures and delays from the start (the actions may change them). */
	readonly initialStorage: StorageAction;
	/** How `readNumbers` replies, for the whole run. */
	readonly replies: Replies;
	/** Workspaces in use, 2..6 (fewer make evictions and reuse of a workspace more likely). */
	readonly workspaces: number;
}

const scenarioArb = (minActions: number, maxActions: number): fc.Arbitrary<Scenario> =>
	fc.oneof(
		fc.record({
			seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
			actions: fc.array(actionArb, { minLength: minActions, maxLength: maxActions, size: "max" }),
			initialLru: fc.integer({ min: 1, max: 8 }),
			initialStorage: storageArb,
			replies: fc.constantFrom<Replies>("fresh", "stale", "held"),
			workspaces: fc.constantFrom(2, 3, 4, 6),
		}),
		fc.record({
			seed: fc.integer({ min: 1, max: 2 ** 31 - 1 }),
			actions: fc.array(raceActionArb, {
				minLength: minActions,
				maxLength: maxActions,
				size: "max",
			}),
			initialLru: fc.constantFrom(1, 1, 2),
			initialStorage: fc.constant<StorageAction>({ kind: "storage", failRate: 0, maxDelayMs: 0 }),
			replies: fc.constantFrom<Replies>("held", "held", "stale"),
			workspaces: fc.constantFrom(2, 3),
		}),
	);

async function runScenario(cache: CacheKind, scenario: Scenario): Promise<void> {
	const { seed, actions, initialLru, initialStorage, replies, workspaces } = scenario;
	const wsOf = (ws: number): number => 1 + ((ws - 1) % workspaces);
	let s = seed >>> 0 || 1;
	const rng = (): number => {
		s ^= s << 13;
		s ^= s >>> 17;
		s ^= s << 5;
		return (s >>> 0) / 2 ** 32;
	};
	const clock = new MockClock(0);
	const storage = new FlakyStorage(rng, clock);
	storage.failRate = initialStorage.failRate;
	storage.maxDelayMs = initialStorage.maxDelayMs;
	storage.replies = replies;
	/** Highest number per "ws/seq" in the PLog: the model. */
	const plogMax = new Map<string, number>();
	let plogLast = 0;
	const make = (lru: number, maxUnflushed: number) =>
		createSequencer(
			{ seqTypes: SEQ_TYPES, cache, lruCacheSize: lru, maxNumUnflushedValues: maxUnflushed },
			storage,
			{
				clock,
				random: rng,
				retry: { baseDelayMs: 5, maxDelayMs: 100 },
				onStorageError: () => {},
			},
		);
	let handle = make(initialLru, 3);

	async function drive<T>(p: Promise<T>): Promise<T> {
		let done = false;
		const watched = p.finally(() => {
			done = true;
		});
		for (let i = 0; i < 2000 && !done; i++) {
			if (i === 200) {
				storage.failRate = 0; // failures are transient: let it heal
				storage.maxDelayMs = 0;
			}
			await clock.advanceAsync(50);
			if (!done) storage.held.pop()?.(); // what we wait for is most likely the newest read
		}
		if (!done) throw new Error("operation did not complete");
		return watched;
	}

	async function start(ws: number): Promise<number> {
		for (let i = 0; i < 2000; i++) {
			const offset = handle.sequencer.start(KIND_OF_WS(ws), ws);
			if (offset !== undefined) return offset;
			if (i === 200) {
				storage.failRate = 0;
				storage.maxDelayMs = 0;
			}
			await clock.advanceAsync(50);
		}
		throw new Error("start never became ok");
	}

	try {
		for (const a of actions) {
			if (a.kind === "storage") {
				storage.failRate = a.failRate;
				storage.maxDelayMs = a.maxDelayMs;
			} else if (a.kind === "advance") {
				await clock.advanceAsync(a.ms);
			} else if (a.kind === "reply") {
				storage.held.shift()?.();
				await clock.advanceAsync(0);
			} else if (a.kind === "prefetch") {
				const ws = wsOf(a.ws);
				handle.sequencer.prefetch?.(KIND_OF_WS(ws), ws);
			} else if (a.kind === "restart") {
				await drive(handle.cleanup()); // an in-flight storage call may be sleeping on the clock
				handle = make(a.lru, a.maxUnflushed);
			} else {
				const ws = wsOf(a.ws);
				const offset = await start(ws);
				expect(offset).toBe(plogLast + 1);
				const kind = KIND_OF_WS(ws);
				const issued = new Map<number, number>();
				for (const idx of a.nexts) {
					const seqId = SEQS_OF_KIND[kind][idx] as number;
					const r = handle.sequencer.next(seqId);
					const n = typeof r === "number" ? r : await drive(r);
					const key = `${ws}/${seqId}`;
					const initial = (SEQ_TYPES[kind] as Record<number, number>)[seqId] as number;
					const expected = (issued.get(seqId) ?? plogMax.get(key) ?? initial - 1) + 1;
					expect(n, `next(${key}) at offset ${offset}`).toBe(expected);
					issued.set(seqId, n);
				}
				if (a.end === "flush") {
					// The command processor wrote the event to the PLog, then flushes.
					storage.addPLogEvent(
						offset,
						[...issued].map(([seqId, value]) => ({ wsid: ws, seqId, value })),
					);
					for (const [seqId, value] of issued) plogMax.set(`${ws}/${seqId}`, value);
					plogLast = offset;
					handle.sequencer.flush();
				} else handle.sequencer.actualize();
				if (a.pauseMs > 0) await clock.advanceAsync(a.pauseMs);
			}
		}
		// Finally: a restart on a healthy storage recovers exactly the PLog's state.
		storage.failRate = 0;
		storage.maxDelayMs = 0;
		await drive(handle.cleanup());
		handle = make(1, 1);
		for (let ws = 1; ws <= workspaces; ws++) {
			expect(await start(ws)).toBe(plogLast + 1);
			const kind = KIND_OF_WS(ws);
			for (const seqId of SEQS_OF_KIND[kind]) {
				const r = handle.sequencer.next(seqId);
				const n = typeof r === "number" ? r : await drive(r);
				const initial = (SEQ_TYPES[kind] as Record<number, number>)[seqId] as number;
				expect(n).toBe((plogMax.get(`${ws}/${seqId}`) ?? initial - 1) + 1);
			}
			handle.sequencer.actualize();
		}
	} finally {
		storage.failRate = 0;
		await drive(handle.cleanup());
	}
}

describe.each(CACHE_KINDS)("property (cache: %s)", (cache) => {
	it("numbers of flushed transactions are never handed out again, under random interleavings, failures, delays, read races, LRU sizes and restarts", async () => {
		await fc.assert(
			fc.asyncProperty(scenarioArb(1, 60), (scenario) => runScenario(cache, scenario)),
			{ numRuns: Number(process.env.VVM_PROPERTY_RUNS ?? 300) },
		);
	});
});

const soakSeconds = Number(process.env.VVM_SOAK_SECONDS ?? 60);
describe.skipIf(process.env.VVM_SOAK !== "1")("soak (VVM_SOAK=1, VVM_SOAK_SECONDS)", () => {
	it(
		"holds for long random runs, alternating the caches",
		async () => {
			const until = Date.now() + soakSeconds * 1000;
			let runs = 0;
			while (Date.now() < until) {
				const cache = CACHE_KINDS[(runs / 20) % CACHE_KINDS.length] as CacheKind;
				await fc.assert(
					fc.asyncProperty(scenarioArb(50, 300), (scenario) => runScenario(cache, scenario)),
					{ numRuns: 20 },
				);
				runs += 20;
			}
			expect(runs).toBeGreaterThan(0);
		},
		soakSeconds * 1000 + 120_000,
	);
});
