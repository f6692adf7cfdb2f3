import { setImmediate as nextTurn } from "node:timers";
import type { Clock, TimerHandle } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteFence,
	WriteOptions,
} from "@vvm/ttlstorage";
import {
	bytesEqual,
	closedError,
	decodeFenceEpoch,
	encodeFenceEpoch,
	expireAtMs,
	FENCE_CCOLS,
	fencedError,
	isExpired,
	NO_EXPIRY,
	remainingSeconds,
	TTLStorageError,
	validateBatch,
	validateConditionalBatch,
	validateDeleteArgs,
	validateFenceEpoch,
	validateFenceScope,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateWriteOptions,
} from "@vvm/ttlstorage";
import type { AbstractBatchOptions, AbstractLevel, AbstractSublevel } from "abstract-level";
import {
	cColsOf,
	dataKey,
	decodeIndexKey,
	decodeValue,
	encodeValue,
	indexBound,
	indexKey,
	lockKeyOf,
	prefixEnd,
} from "./encoding.ts";
import type { Decoded, Job, Op } from "./write-group.ts";
import { GroupView, ReadSet } from "./write-group.ts";

const DRIVER_NAME = "level";
const READ_PAGE = 256;
const CLEAN_PAGE = 256;
const DEFAULT_CLEANUP_INTERVAL_MS = 60_000;

/**
 * Any `abstract-level` database: `ClassicLevel` (LevelDB on disk), `MemoryLevel`, `Level`, or a
 * sublevel of one. Its default encodings do not matter: the driver opens its own sublevel with
 * `Uint8Array` keys and values. Typed by the two methods the driver calls on it, not as
 * `AbstractLevel`: the database's class comes from the application's copy of `abstract-level`
 * (classic-level's own dependency), whose nominal types need not match any copy this package sees.
 *
 * @example
 * ```ts
 * const db: AnyAbstractLevel = new ClassicLevel("./data");
 * ```
 */
export interface AnyAbstractLevel {
	sublevel(name: string, options: { keyEncoding: "view"; valueEncoding: "view" }): object;
	close(): Promise<void>;
}

// biome-ignore lint/suspicious/noExplicitAny: the driver's own view of the database it was given
type Root = AbstractSublevel<AbstractLevel<any, any, any>, unknown, Uint8Array, Uint8Array>;
type Sub = AbstractSublevel<Root, unknown, Uint8Array, Uint8Array>;

/** Options of {@link createLevelTTLStorage}. */
export interface LevelTTLStorageOptions {
	/**
	 * The database. One database must be used by one process only: conditional writes are
	 * serialised inside this process (LevelDB's LOCK file enforces this for `classic-level`).
	 */
	readonly db: AnyAbstractLevel;
	/** Keyspace: the name of the sublevel that holds this storage. Default `"ttl"`. */
	readonly prefix?: string;
	/** Clock for expiry and the cleaner's timer; default the system clock. Tests pass a `MockClock`. */
	readonly clock?: Clock;
	/** How often the background cleaner removes expired records, in ms. Default 60 000. */
	readonly cleanupIntervalMs?: number;
	/** Close `db` in {@link TTLStorage.close}. Default `false`: the caller owns the database. */
	readonly ownsDb?: boolean;
	/**
	 * Read on the calling thread (`getSync`) where the database can: a group's reads and point
	 * reads then cost no trip to a libuv worker (a LevelDB lookup of a few keys takes a few µs of
	 * CPU; the trip about 50 µs, most of it waking threads), at the price of blocking the event
	 * loop while a lookup reads a block from disk. Default `true` (used when the database supports
	 * `getSync`, as `classic-level` 3 and `memory-level` 3 do); `false` reads with `getMany` on
	 * libuv's pool.
	 */
	readonly syncReads?: boolean;
	/**
	 * UNSAFE: write batches without `sync: true`. Default `false`: every batch (a group of writes)
	 * is written with `sync: true`, so LevelDB `fdatasync`s its log before any write of the group
	 * resolves, and an acknowledged write survives a machine crash or a power cut, not only a
	 * process crash. `true` resolves a write once it is in the operating system's page cache: a
	 * machine crash or power cut can then drop writes that were acknowledged (leader records, fence
	 * raises, acknowledged commands). For throwaway data and benchmarks only.
	 */
	readonly unsafeNoSync?: boolean;
	/**
	 * Where a failed background cleaner run is logged (at `error`; the cleaner keeps running): any
	 * pino-compatible logger. Default: nothing is logged.
	 */
	readonly logger?: Logger;
}

/**
 * The level driver: a {@link TTLStorage} with fencing and conditional batches (`raiseFence` and
 * `putBatchIf` always there) plus control over its expiry cleaner.
 */
export interface LevelTTLStorage extends TTLStorage {
	/** {@link TTLStorage.raiseFence}: this driver always has it (`supports.fencing` `"epoch"`). */
	raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint>;
	/** {@link TTLStorage.putBatchIf}: this driver always has it (one write of a group). */
	putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean>;
	/**
	 * Runs one cleaner pass now: physically deletes records that are expired at this moment and
	 * drops stale index entries. Resolves to the number of records deleted.
	 */
	runCleaner(): Promise<number>;
}

const EMPTY = new Uint8Array(0);
const NO_READS: readonly Uint8Array[] = [];

/**
 * `cause` as a {@link TTLStorageError}. `written`: it failed a batch's write, which may have
 * reached the log: LevelDB's write that fails to sync (an I/O error) leaves its record in the
 * log, where the next open may find it, so only a database not open says nothing was written.
 */
function storageError(operation: string, cause: unknown, written = false): TTLStorageError {
	if (TTLStorageError.is(cause)) return cause;
	const code = (cause as { code?: unknown } | null)?.code;
	const unavailable =
		code === "LEVEL_DATABASE_NOT_OPEN" ||
		code === "LEVEL_ITERATOR_NOT_OPEN" ||
		code === "LEVEL_LOCKED" ||
		code === "LEVEL_STATUS_LOCKED";
	const message = cause instanceof Error ? cause.message : String(cause);
	return new TTLStorageError(
		unavailable
			? "TTLSTORAGE_UNAVAILABLE"
			: written
				? "TTLSTORAGE_OUTCOME_UNKNOWN"
				: "TTLSTORAGE_FAILED",
		message,
		{
			cause,
			driver: DRIVER_NAME,
			operation,
		},
	);
}

/** Keys and values of the driver's own writes are bytes, whatever the database's default encodings. */
const VIEW_ENCODINGS = Object.freeze({ keyEncoding: "view", valueEncoding: "view" } as const);

class LevelTTLStorageImpl implements LevelTTLStorage {
	readonly #db: AnyAbstractLevel;
	readonly #root: Root;
	readonly #data: Sub;
	readonly #index: Sub;
	/**
	 * Wall time on purpose: a record's expiry is stored in the database, which outlives this
	 * process (a monotonic reading restarts with it) and may be read by the next process.
	 */
	readonly #clock: Clock;
	readonly #intervalMs: number;
	readonly #ownsDb: boolean;
	/** `syncReads` and the database supports `getSync`. */
	readonly #syncReads: boolean;
	/**
	 * The options of every batch: `{ sync: true }` unless `unsafeNoSync`. `sync` is
	 * `classic-level`'s (LevelDB's `WriteOptions.sync`), passed through by `abstract-level` and
	 * ignored by in-memory databases; `abstract-level`'s own options type does not name it.
	 */
	readonly #batchOptions: AbstractBatchOptions<Uint8Array, Uint8Array>;
	readonly #log: Logger;
	/** Epoch of each fenced scope seen by this process (the stored fence record, cached). */
	readonly #epochs = new Map<string, bigint>();
	readonly #inFlight = new Set<Promise<unknown>>();
	/** Writes waiting for the next group (see #drain). */
	#queue: Job<Sub>[] = [];
	/** The group loop, while it runs. */
	#draining: Promise<void> | undefined;
	/** Point reads waiting for the next `getMany` (see #readAll). */
	#reads: Array<{
		readonly key: Uint8Array;
		readonly resolve: (stored: Uint8Array | undefined) => void;
		readonly reject: (error: unknown) => void;
	}> = [];
	/** The read loop, while it runs. */
	#reading: Promise<void> | undefined;
	/** One LevelDB batch is all or nothing; writes are decided and written a group at a time. */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: true,
		fencing: "epoch",
		groupCommit: true,
	});
	#timer: TimerHandle | undefined;
	#closed = false;
	#closing: Promise<void> | undefined;

	constructor(options: LevelTTLStorageOptions) {
		const db = options.db;
		if (db === null || typeof db !== "object" || typeof db.sublevel !== "function") {
			throw new TypeError("[@vvm/ttlstorage-level] db must be an abstract-level database");
		}
		const interval = options.cleanupIntervalMs ?? DEFAULT_CLEANUP_INTERVAL_MS;
		if (typeof interval !== "number" || !Number.isFinite(interval) || interval <= 0) {
			throw new RangeError(
				`[@vvm/ttlstorage-level] cleanupIntervalMs must be a positive number of ms, got ${String(interval)}`,
			);
		}
		const syncReads = options.syncReads ?? true;
		if (typeof syncReads !== "boolean") {
			throw new TypeError(
				`[@vvm/ttlstorage-level] syncReads must be a boolean, got ${String(syncReads)}`,
			);
		}
		const unsafeNoSync = options.unsafeNoSync ?? false;
		if (typeof unsafeNoSync !== "boolean") {
			throw new TypeError(
				`[@vvm/ttlstorage-level] unsafeNoSync must be a boolean, got ${String(unsafeNoSync)}`,
			);
		}
		const prefix = options.prefix ?? "ttl";
		if (typeof prefix !== "string" || prefix.length === 0) {
			throw new TypeError("[@vvm/ttlstorage-level] prefix must be a non-empty string");
		}
		const enc = { keyEncoding: "view", valueEncoding: "view" } as const;
		this.#db = db;
		// abstract-level validates the name (it throws LEVEL_INVALID_PREFIX on bad characters).
		this.#root = db.sublevel(prefix, enc) as Root;
		this.#data = this.#root.sublevel<Uint8Array, Uint8Array>("d", enc) as unknown as Sub;
		this.#index = this.#root.sublevel<Uint8Array, Uint8Array>("x", enc) as unknown as Sub;
		this.#clock = options.clock ?? systemClock;
		this.#intervalMs = interval;
		this.#ownsDb = options.ownsDb ?? false;
		this.#syncReads =
			syncReads && (this.#data as { supports?: { getSync?: boolean } }).supports?.getSync === true;
		this.#batchOptions = Object.freeze({ sync: !unsafeNoSync }) as AbstractBatchOptions<
			Uint8Array,
			Uint8Array
		>;
		this.#log = libraryLogger(options.logger, { pkg: "@vvm/ttlstorage-level" });
		this.#arm();
	}

	// --- plumbing -------------------------------------------------------------------------------

	#open(operation: string): void {
		if (this.#closed) throw closedError(DRIVER_NAME, operation);
	}

	/** Runs storage I/O: rejects once closed, maps errors, and lets close() wait for it. */
	async #io<T>(operation: string, fn: () => Promise<T>): Promise<T> {
		this.#open(operation);
		const run = (async (): Promise<T> => {
			try {
				return await fn();
			} catch (error) {
				throw storageError(operation, error);
			}
		})();
		this.#inFlight.add(run);
		try {
			return await run;
		} finally {
			this.#inFlight.delete(run);
		}
	}

	async #load(key: Uint8Array): Promise<Decoded | undefined> {
		const stored = await this.#data.get(key);
		return stored === undefined ? undefined : decodeValue(stored);
	}

	/**
	 * The operations that replace (or with `value === undefined`, delete) the record at `key` whose
	 * current stored state is `old`, keeping the index exact: the old index entry is removed and the
	 * new one added in the same batch.
	 */
	#rewrite(
		ops: Op<Sub>[],
		key: Uint8Array,
		old: Decoded | undefined,
		next: { expireAt: number; value: Bytes } | undefined,
	): void {
		const oldExpiry = old?.expireAt ?? NO_EXPIRY;
		const newExpiry = next?.expireAt ?? NO_EXPIRY;
		if (oldExpiry !== NO_EXPIRY && oldExpiry !== newExpiry) {
			ops.push({ type: "del", sublevel: this.#index, key: indexKey(oldExpiry, key) });
		}
		if (next === undefined) {
			ops.push({ type: "del", sublevel: this.#data, key });
			return;
		}
		if (newExpiry !== NO_EXPIRY) {
			ops.push({ type: "put", sublevel: this.#index, key: indexKey(newExpiry, key), value: EMPTY });
		}
		ops.push({ type: "put", sublevel: this.#data, key, value: encodeValue(newExpiry, next.value) });
	}

	// --- group commit ---------------------------------------------------------------------------

	/**
	 * Queues a write. Writes are decided and written one group at a time: every write that arrives
	 * while a group is at the database joins the next one, which reads the records its writes look
	 * at with one `getMany`, decides them in arrival order (each sees what the earlier ones wrote),
	 * and writes them all in one LevelDB batch. Groups never overlap, so a read-check-write needs no
	 * lock and a fence check no gate: nothing else writes between a group's read and its batch.
	 */
	#enqueue<T>(
		operation: string,
		reads: readonly Uint8Array[],
		scopes: ReadonlyMap<string, Bytes> | undefined,
		decide: (view: GroupView<Sub>) => T,
	): Promise<T> {
		this.#open(operation);
		return new Promise<T>((resolve, reject) => {
			this.#queue.push({
				operation,
				reads,
				scopes,
				decide,
				resolve: resolve as (value: unknown) => void,
				reject,
			});
			if (this.#draining === undefined) {
				const draining = this.#drain();
				this.#draining = draining;
				this.#inFlight.add(draining);
				void draining.then(() => this.#inFlight.delete(draining));
			}
		});
	}

	async #drain(): Promise<void> {
		// One group at a time, from its read to its batch's landing (the log fsynced): every write
		// that arrives while a batch is at the database joins the next group. So an fsync in flight
		// makes the next group bigger instead of a smaller group waiting behind it: a write waits for
		// at most the batch at the database, then its own.
		let landed = false;
		for (;;) {
			// Writes called in the same turn of the event loop go together: a group that starts from
			// idle forms once the turn's I/O callbacks ran (every request read in it), not at the first
			// write's microtask, so one batch takes them all (a fifth fewer batches per create through
			// the host). After a batch landed, the writes that queued meanwhile go at once.
			// `node:timers`' own setImmediate: a test's fake timers (which replace the global) do not
			// hold the driver's writes back.
			if (!landed || this.#queue.length === 0)
				await new Promise<void>((resolve) => nextTurn(resolve));
			if (this.#queue.length === 0) break;
			const jobs = this.#queue;
			this.#queue = [];
			await this.#runGroup(jobs);
			landed = true;
		}
		this.#draining = undefined;
	}

	/**
	 * One group: one read, the decisions in order over the view, then one batch; every job settles
	 * when it landed. Nothing else writes meanwhile, so the read and the batch see the same state.
	 */
	async #runGroup(jobs: readonly Job<Sub>[]): Promise<void> {
		const reads = new ReadSet();
		for (const job of jobs) {
			for (const key of job.reads) reads.add(key);
			if (job.scopes !== undefined)
				for (const [name, scope] of job.scopes)
					if (!this.#epochs.has(name)) reads.add(dataKey(scope, FENCE_CCOLS));
		}
		let stored: readonly (Uint8Array | undefined)[] = [];
		let readFailure: unknown;
		try {
			if (reads.keys.length > 0) stored = await this.#readMany(reads.keys);
		} catch (error) {
			readFailure = error ?? new Error("getMany failed");
		}
		const view = new GroupView<Sub>(reads.names, stored);
		const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
		if (readFailure === undefined)
			for (const job of jobs) {
				const before = view.ops.length;
				try {
					outcomes.push({ ok: true, value: job.decide(view) });
				} catch (error) {
					view.ops.length = before;
					outcomes.push({ ok: false, error: storageError(job.operation, error) });
				}
			}
		if (readFailure === undefined && view.ops.length > 0)
			try {
				await this.#writeBatch(view.ops);
			} catch (error) {
				// The batch may have reached the log: each job it carried has an unknown outcome; a
				// job refused before it (its own error) wrote nothing and keeps its answer.
				const failure = error ?? new Error("batch failed");
				this.#settle(
					jobs,
					jobs.map((job, i) => {
						const outcome = outcomes[i];
						return outcome !== undefined && !outcome.ok
							? outcome
							: { ok: false as const, error: storageError(job.operation, failure, true) };
					}),
					failure,
				);
				return;
			}
		this.#settle(jobs, outcomes, readFailure, view);
	}

	/**
	 * Writes a group's operations as one LevelDB batch (all or nothing): a chained batch on the
	 * database at the root, with the sublevels' prefixes added here. The same bytes as
	 * `root.batch(ops)`, at an eighth of its cost: `abstract-level`'s array form clones, re-encodes
	 * and re-prefixes every operation once per sublevel (measured with classic-level, 100 puts per
	 * batch: 6.5 µs of main-thread CPU per operation, against 0.8 µs this way).
	 */
	async #writeBatch(ops: readonly Op<Sub>[]): Promise<void> {
		const db = this.#data.db;
		// A chained batch needs an open database; the array form waits for one still opening (and
		// fails as it should on a closed one).
		if (db.status !== "open") return this.#root.batch(ops as Op<Sub>[], this.#batchOptions);
		const batch = db.batch();
		for (const op of ops) {
			const key = op.sublevel.prefixKey(op.key, "view");
			if (op.type === "put") batch.put(key, op.value, VIEW_ENCODINGS);
			else batch.del(key, VIEW_ENCODINGS);
		}
		await batch.write(this.#batchOptions);
	}

	/** Settles a group's jobs once its batch landed (`failure` undefined) or failed. */
	#settle(
		jobs: readonly Job<Sub>[],
		outcomes: ReadonlyArray<{ ok: true; value: unknown } | { ok: false; error: unknown }>,
		failure: unknown,
		view?: GroupView<Sub>,
	): void {
		if (failure === undefined && view !== undefined)
			for (const [name, epoch] of view.epochs) this.#epochs.set(name, epoch);
		jobs.forEach((job, i) => {
			const outcome = outcomes[i];
			if (outcome !== undefined && !outcome.ok) job.reject(outcome.error);
			// A read of the group failed: nothing was written; every answer it decided is void.
			else if (failure !== undefined || outcome === undefined)
				job.reject(storageError(job.operation, failure));
			else job.resolve(outcome.value);
		});
	}

	// --- fencing --------------------------------------------------------------------------------

	/** The epoch of a scope as the group sees it: raised in the group, cached, or stored. */
	#epochIn(view: GroupView<Sub>, name: string, scope: Bytes): bigint {
		const raised = view.raised(name);
		if (raised !== undefined) return raised;
		const cached = this.#epochs.get(name);
		if (cached !== undefined) return cached;
		const record = view.record(lockKeyOf(dataKey(scope, FENCE_CCOLS)));
		const epoch = record === undefined ? 0n : decodeFenceEpoch(record.value, DRIVER_NAME);
		// What is stored: no other group writes it meanwhile.
		this.#epochs.set(name, epoch);
		return epoch;
	}

	/** Throws TTLSTORAGE_FENCED when any of the fences is superseded (in the group's view). */
	#checkFences(
		view: GroupView<Sub>,
		fences: ReadonlyMap<string, WriteFence>,
		operation: string,
	): void {
		for (const [name, fence] of fences) {
			const current = this.#epochIn(view, name, fence.scope);
			if (fence.epoch < current) throw fencedError(DRIVER_NAME, operation, fence.epoch, current);
		}
	}

	/** The fences of some writes, one per scope (the lowest epoch decides). */
	static #fencesOf(fences: Iterable<WriteFence | undefined>): Map<string, WriteFence> {
		const out = new Map<string, WriteFence>();
		let previous: WriteFence | undefined;
		for (const f of fences) {
			// A batch's items usually share one fence object (a `withFence` view's).
			if (f === undefined || f === previous) continue;
			previous = f;
			const key = lockKeyOf(f.scope);
			const seen = out.get(key);
			if (seen === undefined || f.epoch < seen.epoch) out.set(key, f);
		}
		return out;
	}

	static #scopesOf(fences: ReadonlyMap<string, WriteFence>): Map<string, Bytes> | undefined {
		if (fences.size === 0) return undefined;
		const out = new Map<string, Bytes>();
		for (const [name, fence] of fences) out.set(name, fence.scope);
		return out;
	}

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		const key = dataKey(scope, FENCE_CCOLS);
		const lk = lockKeyOf(key);
		const name = lockKeyOf(scope);
		return this.#enqueue("raiseFence", [key], new Map([[name, scope]]), (view) => {
			const current = this.#epochIn(view, name, scope);
			if (epoch !== undefined && epoch < current)
				throw fencedError(DRIVER_NAME, "raiseFence", epoch, current);
			const next = epoch ?? current + 1n;
			const record = { expireAt: NO_EXPIRY, value: encodeFenceEpoch(next) };
			this.#rewrite(view.ops, key, view.record(lk), record);
			view.set(lk, record);
			view.epochs.set(name, next);
			return next;
		});
	}

	// --- writes ----------------------------------------------------------------------------------

	/** Read-check-write of one record, in a group (under its fence). */
	#conditional(
		operation: string,
		pKey: Bytes,
		cCols: Bytes,
		decide: (live: Decoded | undefined) => { expireAt: number; value: Bytes } | null | undefined,
		options: WriteOptions | undefined,
	): Promise<boolean> {
		validateWriteOptions(options);
		const key = dataKey(pKey, cCols);
		const lk = lockKeyOf(key);
		const fences = LevelTTLStorageImpl.#fencesOf([options?.fence]);
		return this.#enqueue(operation, [key], LevelTTLStorageImpl.#scopesOf(fences), (view) => {
			this.#checkFences(view, fences, operation);
			const old = view.record(lk);
			const live =
				old !== undefined && !isExpired(old.expireAt, this.#clock.now()) ? old : undefined;
			// `null`: condition failed; `undefined`: delete; otherwise the new record.
			const next = decide(live);
			if (next === null) return false;
			this.#rewrite(view.ops, key, old, next);
			view.set(lk, next === undefined ? undefined : { expireAt: next.expireAt, value: next.value });
			return true;
		});
	}

	// --- the contract ---------------------------------------------------------------------------

	async insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		return this.#conditional(
			"insertIfNotExists",
			pKey,
			cCols,
			(live) =>
				live !== undefined ? null : { expireAt: expireAtMs(this.#clock.now(), ttlSeconds), value },
			options,
		);
	}

	async compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateSwapArgs(pKey, cCols, oldValue, newValue, ttlSeconds);
		return this.#conditional(
			"compareAndSwap",
			pKey,
			cCols,
			(live) =>
				live === undefined || !bytesEqual(live.value, oldValue)
					? null
					: { expireAt: expireAtMs(this.#clock.now(), ttlSeconds), value: newValue },
			options,
		);
	}

	async compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
		return this.#conditional(
			"compareAndDelete",
			pKey,
			cCols,
			(live) => (live === undefined || !bytesEqual(live.value, expectedValue) ? null : undefined),
			options,
		);
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		this.#open("get");
		const key = dataKey(pKey, cCols);
		// A batch is atomic, so a lock-free read sees either the old or the new record.
		const stored = await new Promise<Uint8Array | undefined>((resolve, reject) => {
			this.#reads.push({ key, resolve, reject });
			if (this.#reading === undefined) {
				const reading = this.#readAll();
				this.#reading = reading;
				this.#inFlight.add(reading);
				void reading.then(() => this.#inFlight.delete(reading));
			}
		});
		try {
			const record = stored === undefined ? undefined : decodeValue(stored);
			return record === undefined || isExpired(record.expireAt, this.#clock.now())
				? undefined
				: record.value;
		} catch (error) {
			throw storageError("get", error);
		}
	}

	/**
	 * Stored values of `keys`: read on this thread where it can (see `syncReads`), else with one
	 * `getMany` on libuv's pool (also while the database is still opening: `getSync` does not wait).
	 */
	#readMany(
		keys: readonly Uint8Array[],
	): Promise<(Uint8Array | undefined)[]> | (Uint8Array | undefined)[] {
		if (this.#syncReads && this.#data.status === "open")
			return keys.map((key) => this.#data.getSync(key));
		return this.#data.getMany(keys as Uint8Array[]);
	}

	/**
	 * The point reads that arrive while one `getMany` is at LevelDB go together in the next one: a
	 * workspace's numbers, or the reads of several partitions, cost one call into LevelDB, not one
	 * each. Each sees every write that landed before it was called (its `getMany` starts later).
	 */
	async #readAll(): Promise<void> {
		await Promise.resolve();
		while (this.#reads.length > 0) {
			const reads = this.#reads;
			this.#reads = [];
			try {
				const values = await this.#readMany(reads.map((r) => r.key));
				reads.forEach((r, i) => {
					r.resolve(values[i]);
				});
			} catch (error) {
				for (const r of reads) r.reject(storageError("get", error));
			}
		}
		this.#reading = undefined;
	}

	async put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		const fence = options?.fence;
		await this.#write("put", [
			fence === undefined
				? { pKey, cCols, value, ttlSeconds }
				: { pKey, cCols, value, ttlSeconds, fence },
		]);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		await this.#write("putBatch", items);
	}

	/**
	 * Unconditional writes of already validated items, in one group (refused whole when fenced out).
	 * They read nothing: a replaced record's index entry is left for the cleaner, which drops an
	 * entry whose record's expiry differs (a put of numbers or an event costs no LevelDB read).
	 */
	#write(operation: string, items: readonly BatchItem[]): Promise<void> {
		if (items.length === 0) {
			this.#open(operation);
			return Promise.resolve();
		}
		const keys = items.map((item) => dataKey(item.pKey, item.cCols));
		const fences = LevelTTLStorageImpl.#fencesOf(items.map((item) => item.fence));
		return this.#enqueue(operation, NO_READS, LevelTTLStorageImpl.#scopesOf(fences), (view) => {
			this.#checkFences(view, fences, operation);
			const now = this.#clock.now();
			items.forEach((item, i) => {
				const next = { expireAt: expireAtMs(now, item.ttlSeconds ?? 0), value: item.value };
				const key = keys[i] as Uint8Array;
				this.#rewrite(view.ops, key, undefined, next);
				view.set(lockKeyOf(key), next);
			});
		});
	}

	async putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean> {
		validateConditionalBatch(items);
		const operation = "putBatchIf";
		if (items.length === 0) {
			this.#open(operation);
			return true;
		}
		const keys = items.map((item) => dataKey(item.pKey, item.cCols));
		const fences = LevelTTLStorageImpl.#fencesOf(items.map((item) => item.fence));
		// Only the conditions read; an unconditional item is a put (see #write).
		const reads = keys.filter((_, i) => (items[i] as ConditionalBatchItem).expected !== undefined);
		return this.#enqueue(operation, reads, LevelTTLStorageImpl.#scopesOf(fences), (view) => {
			this.#checkFences(view, fences, operation);
			const now = this.#clock.now();
			const lks = keys.map(lockKeyOf);
			// An unconditional item's key may be read by another job of the group: the view has it then.
			const olds = lks.map((lk) => view.record(lk));
			for (let i = 0; i < items.length; i++) {
				const expected = (items[i] as ConditionalBatchItem).expected;
				if (expected === undefined) continue;
				const old = olds[i];
				const live = old !== undefined && !isExpired(old.expireAt, now) ? old : undefined;
				if (expected === null ? live !== undefined : !live || !bytesEqual(live.value, expected))
					return false;
			}
			items.forEach((item, i) => {
				const next = { expireAt: expireAtMs(now, item.ttlSeconds ?? 0), value: item.value };
				this.#rewrite(view.ops, keys[i] as Uint8Array, olds[i], next);
				view.set(lks[i] as string, next);
			});
			return true;
		});
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, EMPTY);
		validateRange(range.from, range.to);
		const partition = dataKey(pKey, EMPTY);
		const start = range.from === undefined ? partition : dataKey(pKey, range.from);
		const end = range.to === undefined ? prefixEnd(partition) : dataKey(pKey, range.to);
		const self = this;
		return {
			async *[Symbol.asyncIterator](): AsyncGenerator<StoredRecord> {
				// Pages, not one long-lived iterator: close() never waits for a slow consumer, and each
				// page is a short tracked I/O.
				let after: Uint8Array | undefined;
				for (;;) {
					// Decoded inside #io, so a corrupt record rejects with TTLSTORAGE_FAILED.
					const page = await self.#io("read", async () => {
						const entries = await self.#data
							.iterator({
								...(after === undefined ? { gte: start } : { gt: after }),
								...(end === undefined ? {} : { lt: end }),
								limit: READ_PAGE,
							})
							.all();
						return entries.map(([key, stored]) => ({ key, record: decodeValue(stored) }));
					});
					const now = self.#clock.now();
					for (const { key, record } of page) {
						if (!isExpired(record.expireAt, now))
							yield { cCols: cColsOf(key), value: record.value };
					}
					if (page.length < READ_PAGE) return;
					after = page[page.length - 1]?.key;
				}
			},
		};
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		const key = dataKey(pKey, cCols);
		return this.#io("queryTTL", async () => {
			const record = await this.#load(key);
			return record === undefined
				? undefined
				: remainingSeconds(record.expireAt, this.#clock.now());
		});
	}

	// --- the cleaner ----------------------------------------------------------------------------

	#arm(): void {
		if (this.#closed) return;
		// unref: housekeeping must not keep a script alive that forgot close() (the database
		// itself does not either).
		this.#timer = this.#clock.setTimer(
			this.#intervalMs,
			() => {
				this.#timer = undefined;
				void this.#tick();
			},
			{ unref: true },
		);
	}

	async #tick(): Promise<void> {
		try {
			await this.runCleaner();
		} catch (error) {
			if (!(TTLStorageError.is(error) && error.code === "TTLSTORAGE_CLOSED")) {
				const failure = storageError("runCleaner", error);
				this.#log.error(
					{ operation: "runCleaner", code: failure.code, err: failure },
					`background cleaner failed: ${failure.message}`,
				);
			}
		} finally {
			this.#arm();
		}
	}

	runCleaner(): Promise<number> {
		return this.#io("runCleaner", async () => {
			const bound = indexBound(this.#clock.now());
			let after: Uint8Array | undefined;
			let removed = 0;
			for (;;) {
				if (this.#closed) return removed;
				// Index entries with expireAt <= now, in expiry order; the first later entry ends the pass.
				const page = await this.#index
					.keys({ ...(after === undefined ? {} : { gt: after }), lt: bound, limit: CLEAN_PAGE })
					.all();
				if (page.length === 0) return removed;
				removed += await this.#cleanPage(page);
				if (page.length < CLEAN_PAGE) return removed;
				after = page[page.length - 1];
			}
		});
	}

	/** Deletes the records of one page of due index entries that are still expired, in a group. */
	#cleanPage(page: readonly Uint8Array[]): Promise<number> {
		const entries = page.map((key) => ({ key, ...decodeIndexKey(key) }));
		return this.#enqueue(
			"runCleaner",
			entries.map((e) => e.dataKey),
			undefined,
			(view) => {
				const now = this.#clock.now();
				const lks = entries.map((e) => lockKeyOf(e.dataKey));
				const records = lks.map((lk) => view.record(lk));
				let removed = 0;
				entries.forEach((entry, i) => {
					const record = records[i];
					if (record !== undefined && record.expireAt === entry.expireAt) {
						// The entry is the record's own: delete both, but only if it is really expired now.
						if (!isExpired(record.expireAt, now)) return;
						view.ops.push({ type: "del", sublevel: this.#data, key: entry.dataKey });
						view.set(lks[i] as string, undefined);
						removed++;
					}
					// Either deleted with its record, or stale (the record was rewritten or deleted).
					view.ops.push({ type: "del", sublevel: this.#index, key: entry.key });
				});
				return removed;
			},
		);
	}

	// --- lifecycle ------------------------------------------------------------------------------

	close(): Promise<void> {
		if (this.#closing !== undefined) return this.#closing;
		this.#closed = true;
		this.#timer?.cancel();
		this.#timer = undefined;
		this.#closing = (async () => {
			// Queued writes still run (they were accepted); the group loop ends once they are written.
			do await Promise.allSettled([...this.#inFlight]);
			while (this.#inFlight.size > 0);
			if (this.#ownsDb) {
				try {
					await this.#db.close();
				} catch (error) {
					throw storageError("close", error);
				}
			}
		})();
		return this.#closing;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/**
 * Creates the embedded TTL storage over an `abstract-level` database (`classic-level` on disk,
 * `memory-level` in tests).
 *
 * - Conditional writes are atomic: each read-check-write holds a per-key lock, and the record and
 *   its expiry-index entry are written in one `batch`. One database belongs to one process.
 * - `putBatch` is one LevelDB batch (`supports.atomicBatches`). Fenced writes (`supports.fencing`
 *   `"epoch"`) are checked against their scope's epoch inside a per-scope gate that `raiseFence`
 *   holds alone, so no write of a superseded epoch lands once a raise resolved.
 * - Every record stores its expiry, checked on every read and condition with the injected clock
 *   (`now >= expireAt` is expired).
 * - A background cleaner on the clock's timer deletes records that are expired now, walking the
 *   expiry index; every conditional rewrite removes the record's previous index entry (a put
 *   leaves it, unread), and the cleaner re-checks each record's stored expiry in its group, so a
 *   renewed or replaced record is never deleted while live (unlike voedger's bbolt driver).
 *
 * @example
 * ```ts
 * import { ClassicLevel } from "classic-level";
 * import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
 * const storage = createLevelTTLStorage({ db: new ClassicLevel("./data"), ownsDb: true });
 * await storage.insertIfNotExists(pKey, cCols, value, 20);
 * await storage.close();
 * ```
 */
export function createLevelTTLStorage(options: LevelTTLStorageOptions): LevelTTLStorage {
	return new LevelTTLStorageImpl(options);
}
