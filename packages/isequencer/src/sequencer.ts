import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import { SequencerError } from "./errors.ts";
import type { LruNode } from "./intrusive-lru.ts";
import type { CompiledParams, KindInfo, SequencerParams } from "./params.ts";
import { compileParams } from "./params.ts";
import type { RecordCache } from "./record-cache.ts";
import { createRecordCache } from "./record-cache.ts";
import type { RetryContext, RetryOptions } from "./retry.ts";
import { retryUntilAborted } from "./retry.ts";
import { storageErrorLog } from "./storage-error-log.ts";
import type {
	PLogOffset,
	SeqBatcher,
	SeqID,
	SeqNumber,
	SeqStorage,
	Sequencer,
	SeqValue,
	WSID,
	WSKind,
} from "./types.ts";

/** The logger (rate-limited) plus the metrics hook, each unable to break a retry. */
function storageErrorHandler(
	options: SequencerOptions,
	clock: Clock,
): (error: unknown, operation: string, attempt: number) => void {
	const log = storageErrorLog(libraryLogger(options.logger, { pkg: "@vvm/isequencer" }), clock);
	const hook = options.onStorageError;
	return (error, operation, attempt) => {
		log(error, operation, attempt);
		try {
			hook?.(error, operation, attempt);
		} catch {
			// a metrics hook must not stop the retries
		}
	};
}

/**
 * Options of {@link createSequencer}.
 *
 * @example
 * ```ts
 * const options: SequencerOptions = { clock: new MockClock(), onStorageError: (e) => log(e) };
 * ```
 */
export interface SequencerOptions {
	/** Clock for the batcher delay and the retry backoff; default the system clock. */
	readonly clock?: Clock;
	/** Backoff of storage retries (full jitter); default 500 / 500 ms. */
	readonly retry?: RetryOptions;
	/** Random source in `[0, 1)` for the jitter; default `Math.random`. */
	readonly random?: () => number;
	/**
	 * Where failed storage calls are logged (at `warn`, each retried; an error identical to the
	 * previous one of the same operation at most once per second): any pino-compatible logger.
	 * Default: nothing is logged.
	 */
	readonly logger?: Logger;
	/**
	 * Called on every failed storage call before it is retried, for metrics (count them). A throw
	 * is ignored.
	 */
	readonly onStorageError?: (error: unknown, operation: string, attempt: number) => void;
	/**
	 * Which storage errors no retry can cure. On one, the sequencer stops itself (as by cleanup)
	 * and every later call, `ready` and a `next` still reading throw `SEQUENCER_STOPPED` with the
	 * error as `cause`. Default {@link isFencedStorageError}: a write refused by a newer fence,
	 * whose holder now numbers the partition (retrying it forever kept `actualize` from ever
	 * finishing; found by review). A throw counts as `false`.
	 */
	readonly isTerminalError?: (error: unknown) => boolean;
}

const TTL_STORAGE_ERROR = Symbol.for("vvm.error.TTLStorageError");

/**
 * `true` for a `@vvm/ttlstorage` error `TTLSTORAGE_FENCED` (from any copy of that package): a
 * write refused because a newer epoch took its fence scope. The default of
 * {@link SequencerOptions.isTerminalError}.
 *
 * @example
 * ```ts
 * createSequencer(params, storage, { isTerminalError: (e) => isFencedStorageError(e) || isMine(e) });
 * ```
 */
export function isFencedStorageError(error: unknown): boolean {
	return (
		typeof error === "object" &&
		error !== null &&
		(error as Record<symbol, unknown>)[TTL_STORAGE_ERROR] === true &&
		(error as { code?: unknown }).code === "TTLSTORAGE_FENCED"
	);
}

function guardedPredicate(predicate: (error: unknown) => boolean): (error: unknown) => boolean {
	return (error) => {
		try {
			return predicate(error) === true;
		} catch {
			return false; // a broken predicate must not stop the retries
		}
	};
}

/**
 * A point-in-time view of the sequencer, for metrics and tests.
 *
 * @example
 * ```ts
 * if (sequencer.stats().unflushedValues > 400) log("flusher is behind");
 * ```
 */
export interface SequencerStats {
	readonly actualizing: boolean;
	readonly transactionInProgress: boolean;
	/** The offset the next `start` returns. */
	readonly nextPLogOffset: PLogOffset;
	/** Values committed by `flush` (or found by actualization) and not yet written to storage. */
	readonly unflushedValues: number;
	/** Workspaces in the LRU cache. */
	readonly cachedWorkspaces: number;
	/** Completed storage writes since creation. */
	readonly flushes: number;
}

/**
 * What {@link createSequencer} returns: the sequencer and its cleanup.
 *
 * @example
 * ```ts
 * await using handle = createSequencer(params, storage);
 * handle.sequencer.start(1, 1001);
 * ```
 */
export interface SequencerHandle extends AsyncDisposable {
	readonly sequencer: Sequencer & {
		stats(): SequencerStats;
		/**
		 * Resolves once no actualization runs (at once when none does): from then on `start` is not
		 * refused for actualization (it may still be for back-pressure). Instead of polling `start`.
		 * Rejects with `SEQUENCER_CLEANED_UP` after cleanup, `SEQUENCER_STOPPED` once the storage
		 * refused a call for good, or `signal.reason` when it aborts.
		 *
		 * @example
		 * ```ts
		 * await handle.sequencer.ready(AbortSignal.timeout(30_000));
		 * ```
		 */
		ready(signal?: AbortSignal): Promise<void>;
	};
	/**
	 * Stops the actualizer, the flusher and every storage retry and resolves once all have ended.
	 * Values not yet flushed are not written (actualization recovers them from the PLog). Idempotent.
	 */
	cleanup(): Promise<void>;
}

const noop = (): void => {};
/** Reads ahead (`prefetch`) in flight at most: past it, a workspace is read when it starts. */
const MAX_PREFETCHES = 64;

function popcount(m: number): number {
	let n = 0;
	for (let x = m; x !== 0; x &= x - 1) n++;
	return n;
}

/** In the flusher's dirty list. */
const LISTED = 1;
/** Not in the LRU. */
const EVICTED = 2;
/** Taken by the write in flight and not committed to since. */
const SNAPSHOT = 4;

/** @internal All numbers of one workspace, indexed by slot. */
export class WsRecord {
	readonly wsid: WSID;
	/** Last issued and committed number per slot; NaN = not known yet. */
	readonly nums: number[];
	/** Slots whose numbers are known. */
	known = 0;
	/** Slots committed and not yet durable in storage. */
	dirty = 0;
	/** {@link LISTED} | {@link EVICTED} | {@link SNAPSHOT} (one small integer keeps the record small). */
	flags = 0;

	constructor(wsid: WSID, numSlots: number) {
		this.wsid = wsid;
		// Exact capacity, double elements (push() would over-allocate).
		this.nums = new Array<number>(numSlots).fill(Number.NaN);
	}
}

/**
 * @internal A record with the queue links of the `"clock"` cache (which threads its queue through
 * the records); the `"lru-cache"` cache keeps its own, so its records go without them (12 bytes).
 */
class ClockWsRecord extends WsRecord implements LruNode<ClockWsRecord> {
	lruPrev: ClockWsRecord | undefined = undefined;
	lruNext: ClockWsRecord | undefined = undefined;
	lruUsed = false;
}

/** @internal Exported for white-box tests only; not part of the public API. */
export class SequencerImpl implements Sequencer {
	readonly #p: CompiledParams;
	readonly #storage: SeqStorage;
	readonly #clock: Clock;
	readonly #retry: RetryContext;

	// Numbers: LRU of workspaces, plus dirty records evicted from it.
	readonly #lru: RecordCache<WSID, WsRecord>;
	/** The record class the cache needs; every record is made by it (see the constructor). */
	readonly #Record: new (
		wsid: WSID,
		numSlots: number,
	) => WsRecord;
	readonly #offCache = new Map<WSID, WsRecord>();
	#dirtyList: WsRecord[] = [];
	#unflushed = 0;

	#nextOffset: PLogOffset = 0;
	#toBeFlushedOffset: PLogOffset = 0;
	#writtenOffset: PLogOffset = 0;

	// The transaction.
	#txActive = false;
	#txId = 0;
	#txKind: KindInfo | undefined;
	#txWsid: WSID = 0;
	#txRec: WsRecord | undefined;
	#txTouched = 0;
	readonly #txNums: number[];
	#txLoad: Promise<WsRecord | undefined> | undefined;
	#txPending = 0;

	/**
	 * Workspaces with storage reads in flight: how many, and how often a record of the workspace
	 * left memory since (see {@link SequencerImpl.#load}).
	 */
	readonly #reading = new Map<WSID, { readers: number; drops: number }>();
	/** Storage reads of numbers in flight (their retry loops), awaited by cleanup. */
	readonly #loads = new Set<Promise<WsRecord | undefined>>();
	/**
	 * Reads started by `prefetch`, by workspace, until they settle: a `start` of the workspace
	 * (same kind, same generation) waits for that read instead of starting another.
	 */
	readonly #prefetches = new Map<
		WSID,
		{ readonly kind: KindInfo; readonly gen: number; readonly load: Promise<WsRecord | undefined> }
	>();

	/** Incremented by actualize and cleanup: storage reads started before are stale. */
	#gen = 0;

	#actualizing = false;
	/** Waiters of {@link SequencerImpl.ready}: called when an actualization ends or on cleanup. */
	readonly #readyWaiters = new Set<() => void>();
	#actualizerRun: Promise<void> | undefined;

	#flusherRun: Promise<void> | undefined;
	#flusherStop = false;
	#flushSignalled = false;
	#flushWake: (() => void) | undefined;
	/** Wakers of the actualizer's back-pressure waits; each removes itself when it settles. */
	readonly #flushWaiters = new Set<() => void>();
	#flushes = 0;

	#closed = false;
	/** Why the sequencer stopped on its own (`SEQUENCER_STOPPED`); `undefined` for cleanup. */
	#stopped: SequencerError | undefined;
	readonly #cleanupCtl = new AbortController();
	#cleanupRun: Promise<void> | undefined;

	constructor(params: SequencerParams, storage: SeqStorage, options: SequencerOptions = {}) {
		this.#p = compileParams(params);
		if (typeof storage !== "object" || storage === null)
			throw new TypeError("[@vvm/isequencer] storage is required");
		this.#storage = storage;
		this.#clock = options.clock ?? systemClock;
		const base = options.retry?.baseDelayMs ?? 500;
		const max = options.retry?.maxDelayMs ?? 500;
		// A zero base below a positive cap never grows: retries without pause, and after 1024
		// failures its delay was NaN, which killed the flusher (found by review).
		if (!(base >= 0) || !(max >= base) || !Number.isFinite(max) || (base === 0 && max > 0))
			throw new RangeError(
				`[@vvm/isequencer] retry delays must satisfy 0 <= baseDelayMs <= maxDelayMs, and baseDelayMs > 0 unless both are 0, got ${base}/${max}`,
			);
		this.#retry = {
			clock: this.#clock,
			random: options.random ?? Math.random,
			baseDelayMs: base,
			maxDelayMs: max,
			onError: storageErrorHandler(options, this.#clock),
			isTerminal: guardedPredicate(options.isTerminalError ?? isFencedStorageError),
			stop: (error) => this.#halt(error),
		};
		const txNums: number[] = [];
		for (let i = 0; i < this.#p.numSlots; i++) txNums.push(Number.NaN);
		this.#txNums = txNums;
		// With "clock" every record must be a ClockWsRecord: #Record makes them all.
		this.#Record = this.#p.cache === "clock" ? ClockWsRecord : WsRecord;
		this.#lru = createRecordCache<ClockWsRecord>(
			this.#p.cache,
			this.#p.lruCacheSize,
			(rec) => rec.wsid,
			(rec) => this.#onEvict(rec),
		);
		// The constructor starts actualization: `start` is not ok until it ends.
		this.#beginActualization();
	}

	// ---------------------------------------------------------------- public API

	start(wsKind: WSKind, wsid: WSID): PLogOffset | undefined {
		if (this.#closed) throw this.#closedError("start");
		if (this.#actualizing) return undefined;
		if (this.#txActive)
			throw new SequencerError("SEQUENCER_MISUSE", "start: sequencing transaction already started");
		const kind = this.#kindOf("start", wsKind, wsid);
		if (this.#unflushed > this.#p.maxNumUnflushedValues) {
			this.#signalFlusher();
			return undefined;
		}
		let rec = this.#lru.get(wsid);
		if (rec === undefined) rec = this.#takeFromOffCache(wsid);
		this.#txActive = true;
		this.#txId++;
		this.#txKind = kind;
		this.#txWsid = wsid;
		this.#txTouched = 0;
		this.#txRec = rec;
		this.#txLoad = undefined;
		if (rec === undefined || (rec.known & kind.mask) !== kind.mask) {
			// Prefetch every number of the workspace while the caller does its own work (or wait
			// for the read that `prefetch` started, when it reads the same numbers).
			const ahead = this.#prefetches.get(wsid);
			let load: Promise<WsRecord | undefined>;
			if (ahead !== undefined && ahead.gen === this.#gen && ahead.kind === kind) load = ahead.load;
			else {
				load = this.#load(wsid, kind);
				load.catch(noop);
			}
			this.#txLoad = load;
		}
		return this.#nextOffset;
	}

	prefetch(wsKind: WSKind, wsid: WSID): void {
		if (this.#closed || this.#actualizing) return;
		const kind = this.#kindOf("prefetch", wsKind, wsid);
		if (this.#prefetches.has(wsid) || this.#prefetches.size >= MAX_PREFETCHES) return;
		// Its own transaction reads it already.
		if (this.#txActive && this.#txWsid === wsid) return;
		const rec = this.#lru.peek(wsid) ?? this.#offCache.get(wsid);
		if (rec !== undefined && (rec.known & kind.mask) === kind.mask) return;
		const gen = this.#gen;
		const load = this.#load(wsid, kind);
		// Its errors reach the transaction that waits for it (start), else nobody: a read ahead.
		load.catch(noop);
		const entry = { kind, gen, load };
		this.#prefetches.set(wsid, entry);
		const done = (): void => {
			if (this.#prefetches.get(wsid) === entry) this.#prefetches.delete(wsid);
		};
		load.then(done, done);
	}

	/** The kind of `wsKind`, after the checks every entry point makes of its arguments. */
	#kindOf(op: string, wsKind: WSKind, wsid: WSID): KindInfo {
		const kind = this.#p.kinds.get(wsKind);
		if (kind === undefined)
			throw new SequencerError("SEQUENCER_UNKNOWN_WS_KIND", `${op}: unknown wsKind ${wsKind}`);
		if (!Number.isSafeInteger(wsid) || wsid < 0)
			throw new RangeError(
				`[@vvm/isequencer] ${op}: wsid must be a safe integer >= 0, got ${wsid}`,
			);
		return kind;
	}

	next(seqId: SeqID): SeqNumber | Promise<SeqNumber> {
		const rec = this.#txRec;
		if (rec !== undefined) {
			const slot = this.#p.slotOf[seqId];
			if (slot !== undefined && slot >= 0 && ((this.#txKind as KindInfo).mask >> slot) & 1) {
				const bit = 1 << slot;
				let v: number;
				if ((this.#txTouched & bit) !== 0) v = (this.#txNums[slot] as number) + 1;
				else {
					v = (rec.nums[slot] as number) + 1;
					if (!(v > 0)) return this.#nextSlow(seqId);
					this.#txTouched |= bit;
				}
				this.#txNums[slot] = v;
				return v;
			}
		}
		return this.#nextSlow(seqId);
	}

	flush(): void {
		if (!this.#txActive) throw this.#noTx("flush");
		if (this.#txPending > 0)
			throw new SequencerError(
				"SEQUENCER_MISUSE",
				"flush: a next() is still reading storage; await it first",
			);
		const rec = this.#txRec;
		const touched = this.#txTouched;
		if (rec !== undefined && touched !== 0) {
			for (let m = touched; m !== 0; m &= m - 1) {
				const slot = 31 - Math.clz32(m & -m);
				rec.nums[slot] = this.#txNums[slot] as number;
			}
			const added = touched & ~rec.dirty;
			if (added !== 0) {
				this.#unflushed += popcount(added);
				rec.dirty |= added;
			}
			rec.flags &= ~SNAPSHOT;
			if ((rec.flags & LISTED) === 0) {
				rec.flags |= LISTED;
				this.#dirtyList.push(rec);
			}
			if ((rec.flags & EVICTED) !== 0) this.#offCache.set(rec.wsid, rec);
		}
		this.#nextOffset++;
		this.#toBeFlushedOffset = this.#nextOffset;
		this.#endTx();
		this.#signalFlusher();
	}

	actualize(): void {
		if (!this.#txActive) throw this.#noTx("actualize");
		this.#endTx();
		this.#gen++;
		this.#lru.clear();
		this.#beginActualization();
	}

	stats(): SequencerStats {
		return {
			actualizing: this.#actualizing,
			transactionInProgress: this.#txActive,
			nextPLogOffset: this.#nextOffset,
			unflushedValues: this.#unflushed,
			cachedWorkspaces: this.#lru.size,
			flushes: this.#flushes,
		};
	}

	cleanup(): Promise<void> {
		if (this.#cleanupRun !== undefined) return this.#cleanupRun;
		this.#halt(undefined);
		const actualizer = this.#actualizerRun;
		const flusher = this.#flusherRun;
		this.#cleanupRun = (async () => {
			await actualizer;
			await flusher;
			// Their retries stop at once; a call already inside the storage is waited for.
			await Promise.allSettled([...this.#loads]);
			this.#actualizing = false;
			this.#notifyFlushWaiters();
		})();
		return this.#cleanupRun;
	}

	/**
	 * Ends every activity: by cleanup (`cause` undefined) or on its own, when the storage refused a
	 * call for good. The first one wins; cleanup after a stop only waits for the ends.
	 */
	#halt(cause: unknown): void {
		if (this.#closed) return;
		this.#closed = true;
		if (cause !== undefined)
			this.#stopped = new SequencerError("SEQUENCER_STOPPED", STOPPED, { cause });
		this.#notifyReady(); // waiters reject at once, not after the storage calls end
		this.#endTx();
		this.#gen++;
		this.#cleanupCtl.abort(
			this.#stopped ?? new SequencerError("SEQUENCER_CLEANED_UP", "the sequencer was cleaned up"),
		);
		this.#flusherStop = true;
		this.#signalFlusher();
	}

	/** What a call after the end throws. */
	#closedError(op: string): SequencerError {
		const stopped = this.#stopped;
		if (stopped === undefined) return cleanedUp(op);
		return new SequencerError("SEQUENCER_STOPPED", `${op}: ${STOPPED}`, { cause: stopped.cause });
	}

	// ---------------------------------------------------------------- white-box access for tests

	/** @internal */
	get _internals(): {
		lru: RecordCache<WSID, WsRecord>;
		offCache: Map<WSID, WsRecord>;
		dirtyList: readonly WsRecord[];
		toBeFlushedOffset: PLogOffset;
		txNums: number[];
		slotOf: Int8Array;
		flushWaiters: number;
	} {
		return {
			lru: this.#lru,
			offCache: this.#offCache,
			dirtyList: this.#dirtyList,
			toBeFlushedOffset: this.#toBeFlushedOffset,
			txNums: this.#txNums,
			slotOf: this.#p.slotOf,
			flushWaiters: this.#flushWaiters.size,
		};
	}

	/** @internal Runs the actualization batcher directly (white-box tests). */
	_batcher(batch: readonly SeqValue[], offset: PLogOffset): void | Promise<void> {
		return this.#makeBatcher(this.#cleanupCtl.signal)(batch, offset);
	}

	// ---------------------------------------------------------------- transaction helpers

	#endTx(): void {
		this.#txActive = false;
		this.#txId++;
		this.#txRec = undefined;
		this.#txKind = undefined;
		this.#txTouched = 0;
		this.#txLoad = undefined;
		this.#txPending = 0;
	}

	#noTx(op: string): SequencerError {
		return this.#closed
			? this.#closedError(op)
			: new SequencerError("SEQUENCER_MISUSE", `${op}: sequencing transaction is not in progress`);
	}

	#nextSlow(seqId: SeqID): SeqNumber | Promise<SeqNumber> {
		if (!this.#txActive) throw this.#noTx("next");
		const kind = this.#txKind as KindInfo;
		const slot = Number.isInteger(seqId) ? this.#p.slotOf[seqId] : undefined;
		if (slot === undefined || slot < 0 || ((kind.mask >> slot) & 1) === 0)
			throw new SequencerError(
				"SEQUENCER_UNKNOWN_SEQ_ID",
				`unknown SeqID: ${seqId} (wsKind ${kind.kind})`,
			);
		// The workspace's numbers are not in memory: wait for the storage read.
		let load = this.#txLoad;
		if (load === undefined) {
			load = this.#load(this.#txWsid, kind);
			load.catch(noop);
			this.#txLoad = load;
		}
		const txId = this.#txId;
		this.#txPending++;
		// #endTx zeroes the count: a read of an ended transaction must not hold up the next one.
		return load.then(
			() => {
				if (this.#txId !== txId) throw this.#ended();
				this.#txPending--;
				// A read that gave nothing for this transaction (one of an older generation): read
				// again rather than wait on it once more.
				if (this.#txRec === undefined && this.#txLoad === load) this.#txLoad = undefined;
				return this.next(seqId);
			},
			(error: unknown) => {
				if (this.#txId === txId) this.#txPending--;
				throw error;
			},
		);
	}

	#ended(): SequencerError {
		return this.#closed
			? this.#closedError("next")
			: new SequencerError(
					"SEQUENCER_MISUSE",
					"next: the transaction ended (actualize) while next() was reading storage",
				);
	}

	/**
	 * Reads all numbers of the workspace's kind and merges them into its record.
	 *
	 * A storage reply may be older than a write that completes while the read is in flight. That is
	 * harmless while the workspace's record stays in memory (its numbers are at least the stored
	 * ones, and the merge takes maxima), but if the record leaves memory meanwhile (flushed, then
	 * evicted) the reply is all there is, and it may lack numbers already handed out. So the read
	 * notes how often records of the workspace left memory, and reads again when that changed and no
	 * record with all the kind's numbers is in memory.
	 */
	#load(wsid: WSID, kind: KindInfo): Promise<WsRecord | undefined> {
		const load = this.#loadRecord(wsid, kind);
		// Tracked so cleanup can wait for it: no storage call outlives cleanup.
		this.#loads.add(load);
		const untrack = (): void => {
			this.#loads.delete(load);
		};
		load.then(untrack, untrack);
		return load;
	}

	async #loadRecord(wsid: WSID, kind: KindInfo): Promise<WsRecord | undefined> {
		const gen = this.#gen;
		for (;;) {
			let watch = this.#reading.get(wsid);
			if (watch === undefined) {
				watch = { readers: 0, drops: 0 };
				this.#reading.set(wsid, watch);
			}
			watch.readers++;
			const drops = watch.drops;
			let stored: readonly number[] | undefined;
			try {
				stored = await retryUntilAborted(
					this.#retry,
					"readNumbers",
					this.#cleanupCtl.signal,
					async () => {
						if (gen !== this.#gen) return undefined; // stale: stop retrying
						const r = await this.#storage.readNumbers(wsid, kind.seqIds);
						if (!Array.isArray(r) || r.length !== kind.seqIds.length)
							throw new TypeError(
								`[@vvm/isequencer] readNumbers returned ${String(r)} for ${kind.seqIds.length} seqIds`,
							);
						for (const n of r)
							if (!Number.isSafeInteger(n) || n < 0)
								throw new TypeError(
									`[@vvm/isequencer] readNumbers returned an invalid number ${n}`,
								);
						return r as readonly number[];
					},
				);
			} finally {
				if (--watch.readers === 0) this.#reading.delete(wsid);
			}
			// actualize or cleanup purged the cache meanwhile
			if (stored === undefined || gen !== this.#gen) return undefined;
			let rec = this.#lru.get(wsid) ?? this.#takeFromOffCache(wsid);
			if (watch.drops !== drops && (rec === undefined || (rec.known & kind.mask) !== kind.mask))
				continue; // the reply may predate numbers that were in memory: read again
			if (rec === undefined) {
				rec = new this.#Record(wsid, this.#p.numSlots);
				this.#lru.set(wsid, rec);
			}
			for (let i = 0; i < kind.slots.length; i++) {
				const slot = kind.slots[i] as number;
				const s = stored[i] as number;
				const last = s === 0 ? (kind.initial[slot] as number) - 1 : s;
				if (!((rec.nums[slot] as number) >= last)) rec.nums[slot] = last;
			}
			rec.known |= kind.mask;
			if (this.#txActive && this.#txWsid === wsid) this.#txRec = rec;
			return rec;
		}
	}

	/** A record of `wsid` left memory: storage reads of it in flight may be older than its numbers. */
	#dropped(wsid: WSID): void {
		if (this.#reading.size === 0) return;
		const watch = this.#reading.get(wsid);
		if (watch !== undefined) watch.drops++;
	}

	#takeFromOffCache(wsid: WSID): WsRecord | undefined {
		const rec = this.#offCache.get(wsid);
		if (rec === undefined) return undefined;
		this.#offCache.delete(wsid);
		rec.flags &= ~EVICTED;
		this.#lru.set(wsid, rec);
		return rec;
	}

	#onEvict(rec: WsRecord): void {
		rec.flags |= EVICTED;
		// Not yet durable: keep it findable so `next` never reads a stale number from storage.
		if (rec.dirty !== 0 || (rec.flags & LISTED) !== 0) this.#offCache.set(rec.wsid, rec);
		else this.#dropped(rec.wsid);
	}

	// ---------------------------------------------------------------- actualizer

	#beginActualization(): void {
		this.#actualizing = true;
		const run = this.#actualizeLoop(this.#cleanupCtl.signal);
		this.#actualizerRun = run;
	}

	async #actualizeLoop(signal: AbortSignal): Promise<void> {
		try {
			await this.#stopFlusher();
			if (signal.aborted) return;
			this.#dirtyList = [];
			this.#offCache.clear();
			this.#unflushed = 0;
			this.#toBeFlushedOffset = 0;
			this.#writtenOffset = 0;
			this.#startFlusher();
			const offset = await retryUntilAborted(
				this.#retry,
				"readNextPLogOffset",
				signal,
				async () => {
					const o = await this.#storage.readNextPLogOffset();
					if (!Number.isSafeInteger(o) || o < 0)
						throw new TypeError(`[@vvm/isequencer] readNextPLogOffset returned ${o}`);
					return o;
				},
			);
			// Fresh storage: the PLog starts at 1, never 0.
			this.#nextOffset = offset === 0 ? 1 : offset;
			const batcher = this.#makeBatcher(signal);
			// On a retry the scan resumes after the last event the batcher took.
			await retryUntilAborted(this.#retry, "actualizeSequencesFromPLog", signal, () =>
				this.#storage.actualizeSequencesFromPLog(this.#nextOffset, batcher, signal),
			);
			signal.throwIfAborted();
			this.#actualizing = false;
			this.#notifyReady();
		} catch (error) {
			if (!signal.aborted) throw error;
		}
	}

	#notifyReady(): void {
		for (const waiter of [...this.#readyWaiters]) waiter();
	}

	ready(signal?: AbortSignal): Promise<void> {
		const check = (): { done: boolean; error?: unknown } => {
			if (this.#closed) return { done: true, error: this.#closedError("ready") };
			if (signal?.aborted) return { done: true, error: signal.reason };
			return { done: !this.#actualizing };
		};
		const now = check();
		if (now.done) return now.error === undefined ? Promise.resolve() : Promise.reject(now.error);
		return new Promise((resolve, reject) => {
			const waiter = (): void => {
				const state = check();
				if (!state.done) return;
				this.#readyWaiters.delete(waiter);
				signal?.removeEventListener("abort", waiter);
				if (state.error === undefined) resolve();
				else reject(state.error);
			};
			this.#readyWaiters.add(waiter);
			signal?.addEventListener("abort", waiter, { once: true });
		});
	}

	#makeBatcher(signal: AbortSignal): SeqBatcher {
		return (batch, offset) => {
			signal.throwIfAborted();
			if (this.#unflushed >= this.#p.maxNumUnflushedValues)
				return this.#batchAfterDrain(batch, offset, signal);
			this.#applyBatch(batch, offset);
			return undefined;
		};
	}

	async #batchAfterDrain(
		batch: readonly SeqValue[],
		offset: PLogOffset,
		signal: AbortSignal,
	): Promise<void> {
		while (this.#unflushed >= this.#p.maxNumUnflushedValues) {
			this.#signalFlusher();
			await this.#flushedOrDelay(signal);
		}
		this.#applyBatch(batch, offset);
	}

	/** Resolves after the next completed flush or after `batcherDelayMs`, whichever is first. */
	#flushedOrDelay(signal: AbortSignal): Promise<void> {
		signal.throwIfAborted();
		return new Promise<void>((resolve, reject) => {
			let done = false;
			const finish = (): void => {
				if (done) return;
				done = true;
				timer.cancel();
				this.#flushWaiters.delete(finish);
				signal.removeEventListener("abort", onAbort);
				resolve();
			};
			const onAbort = (): void => {
				if (done) return;
				done = true;
				timer.cancel();
				this.#flushWaiters.delete(finish);
				reject(signal.reason);
			};
			const timer = this.#clock.setTimer(this.#p.batcherDelayMs, finish);
			this.#flushWaiters.add(finish);
			signal.addEventListener("abort", onAbort, { once: true });
		});
	}

	#applyBatch(batch: readonly SeqValue[], offset: PLogOffset): void {
		if (!Number.isSafeInteger(offset) || offset < 0)
			throw new TypeError(`[@vvm/isequencer] batcher: invalid PLog offset ${offset}`);
		const slotOf = this.#p.slotOf;
		let rec: WsRecord | undefined;
		for (let i = 0; i < batch.length; i++) {
			const v = batch[i] as SeqValue;
			const slot = slotOf[v.seqId];
			if (slot === undefined || slot < 0) continue; // not a managed sequence
			// The values of an event usually share its workspace: one lookup per event.
			if (rec === undefined || rec.wsid !== v.wsid) {
				// Records go into the (purged) LRU, so after actualization the cache is warm with the
				// workspaces of the PLog tail; unknown slots are read from storage on first use.
				rec = this.#lru.get(v.wsid) ?? this.#takeFromOffCache(v.wsid);
				if (rec === undefined) {
					rec = new this.#Record(v.wsid, this.#p.numSlots);
					this.#lru.set(v.wsid, rec);
				}
			}
			if ((rec.nums[slot] as number) >= v.value) continue;
			const bit = 1 << slot;
			rec.nums[slot] = v.value;
			rec.known |= bit;
			if ((rec.dirty & bit) === 0) {
				rec.dirty |= bit;
				this.#unflushed++;
			}
			rec.flags &= ~SNAPSHOT;
			if ((rec.flags & LISTED) === 0) {
				rec.flags |= LISTED;
				this.#dirtyList.push(rec);
			}
		}
		this.#nextOffset = offset + 1;
		this.#toBeFlushedOffset = offset + 1;
	}

	// ---------------------------------------------------------------- flusher

	#startFlusher(): void {
		this.#flusherStop = false;
		this.#flushSignalled = false;
		this.#flusherRun = this.#flushLoop(this.#cleanupCtl.signal);
	}

	async #stopFlusher(): Promise<void> {
		const run = this.#flusherRun;
		if (run === undefined) return;
		this.#flusherStop = true;
		this.#signalFlusher();
		await run;
		this.#flusherRun = undefined;
		this.#flushSignalled = false;
	}

	#signalFlusher(): void {
		const wake = this.#flushWake;
		if (wake !== undefined) {
			this.#flushWake = undefined;
			wake();
		} else this.#flushSignalled = true;
	}

	async #flushLoop(signal: AbortSignal): Promise<void> {
		for (;;) {
			if (!this.#flushSignalled)
				await new Promise<void>((resolve) => {
					this.#flushWake = resolve;
				});
			this.#flushSignalled = false;
			if (this.#flusherStop || signal.aborted) return;
			if (!(await this.#flushOnce(signal))) return;
		}
	}

	/** One write of everything unflushed; `false` when cleanup cut it short. */
	async #flushOnce(signal: AbortSignal): Promise<boolean> {
		const offset = this.#toBeFlushedOffset;
		if (offset === 0) return true; // nothing was flushed since actualization
		const list = this.#dirtyList;
		if (list.length === 0 && offset === this.#writtenOffset) return true;
		this.#dirtyList = [];
		const seqIdOfSlot = this.#p.seqIdOfSlot;
		const batch: SeqValue[] = [];
		for (const rec of list) {
			rec.flags = (rec.flags & ~LISTED) | SNAPSHOT;
			for (let m = rec.dirty; m !== 0; m &= m - 1) {
				const slot = 31 - Math.clz32(m & -m);
				batch.push({
					wsid: rec.wsid,
					seqId: seqIdOfSlot[slot] as number,
					value: rec.nums[slot] as number,
				});
			}
		}
		try {
			await retryUntilAborted(this.#retry, "writeValuesAndNextPLogOffset", signal, () =>
				this.#storage.writeValuesAndNextPLogOffset(batch, offset),
			);
		} catch (error) {
			if (signal.aborted) return false;
			throw error;
		}
		this.#writtenOffset = offset;
		this.#flushes++;
		for (const rec of list) {
			if ((rec.flags & SNAPSHOT) === 0) continue; // committed to meanwhile: stays dirty, listed again
			rec.flags &= ~SNAPSHOT;
			this.#unflushed -= popcount(rec.dirty);
			rec.dirty = 0;
			if ((rec.flags & EVICTED) !== 0 && this.#offCache.get(rec.wsid) === rec) {
				this.#offCache.delete(rec.wsid);
				this.#dropped(rec.wsid);
			}
		}
		this.#notifyFlushWaiters();
		return true;
	}

	#notifyFlushWaiters(): void {
		if (this.#flushWaiters.size === 0) return;
		// Each waker deletes itself; iterate over a copy.
		for (const w of [...this.#flushWaiters]) w();
	}
}

const STOPPED = "the storage refused a call for good (a newer fence?); the sequencer stopped";

function cleanedUp(op: string): SequencerError {
	return new SequencerError("SEQUENCER_CLEANED_UP", `${op}: the sequencer was cleaned up`);
}

/**
 * Creates a sequencer over `storage` and starts its actualization (so `start` is not ok until the
 * PLog tail has been read). Bad params throw a `RangeError`/`TypeError`.
 *
 * @see voedger pkg/isequencer New
 * @example
 * ```ts
 * const { sequencer, cleanup } = createSequencer(
 *   { seqTypes: { 1: { 1: 1, 2: 200_001 } } },
 *   createSeqStorage({ storage, appId: 1, partitionId: 0, plog }),
 *   { clock: systemClock },
 * );
 * // … later
 * await cleanup();
 * ```
 */
export function createSequencer(
	params: SequencerParams,
	storage: SeqStorage,
	options: SequencerOptions = {},
): SequencerHandle {
	const impl = new SequencerImpl(params, storage, options);
	const cleanup = (): Promise<void> => impl.cleanup();
	return {
		sequencer: impl,
		cleanup,
		[Symbol.asyncDispose]: cleanup,
	};
}
