/** Bytes as every driver stores them. */
export type Bytes = Uint8Array;

/**
 * The fence of a write: the scope it belongs to (an opaque name, e.g. one partition of an
 * application) and the epoch of the writer (its fencing token). See {@link TTLStorage.raiseFence}.
 *
 * @example
 * ```ts
 * const fence: WriteFence = { scope: utf8("app1/partition/7"), epoch: 42n };
 * await storage.put(pKey, cCols, value, 0, { fence });
 * ```
 */
export interface WriteFence {
	/** 1..255 bytes naming the fenced scope. */
	readonly scope: Bytes;
	/** The writer's epoch, `0n..2n ** 63n - 1n`; a newer writer of the scope has a higher one. */
	readonly epoch: bigint;
}

/** Options of a single write. */
export interface WriteOptions {
	/** Fence the write (drivers whose `supports.fencing` is set; see {@link TTLStorage.raiseFence}). */
	readonly fence?: WriteFence;
}

/**
 * What a driver can do beyond the contract, as `abstract-level`'s `db.supports`: read by callers
 * instead of driver names.
 *
 * @example
 * ```ts
 * if (storage.supports?.atomicBatches) await storage.putBatch([event, ...effects]);
 * ```
 */
export interface TTLStorageSupports {
	/**
	 * `putBatch` is all or nothing (one LevelDB batch, one synchronous step in memory), fences
	 * included: a batch with a superseded fence writes nothing. So a driver with `"ordered"`
	 * fencing, which drops a superseded item and writes the rest, does not say `true`.
	 */
	readonly atomicBatches: boolean;
	/**
	 * How fenced writes are honoured ({@link TTLStorage.raiseFence}):
	 * - `"epoch"`: every fenced write (conditional or not) under an epoch below the scope's raised
	 *   epoch is refused with `TTLSTORAGE_FENCED` and writes nothing, atomically with the write;
	 * - `"ordered"`: per record, a write under a lower epoch never replaces one under a higher
	 *   epoch, whichever lands first (it is refused or shadowed); it may still land on a record no
	 *   newer write has touched. Unconditional writes refused this way resolve without an error.
	 * `undefined`: the driver ignores fences.
	 */
	readonly fencing?: "epoch" | "ordered";
	/**
	 * The driver itself merges the writes that arrive while it is busy into one storage write, in
	 * call order (a later write of a key never lands before an earlier one): callers gain nothing by
	 * coalescing writes themselves (`@vvm/cp` then turns its group commit off by default).
	 * `undefined`: it does not.
	 */
	readonly groupCommit?: boolean;
}

/** One record of a {@link TTLStorage.putBatch}. */
export interface BatchItem {
	readonly pKey: Bytes;
	readonly cCols: Bytes;
	readonly value: Bytes;
	/** 0 (the default) keeps the record forever. */
	readonly ttlSeconds?: number;
	/** Fence this item (see {@link WriteFence}); items of one batch may carry different fences. */
	readonly fence?: WriteFence;
}

/**
 * One record of {@link TTLStorage.putBatchIf}: a {@link BatchItem} and the condition it is
 * written under.
 *
 * @example
 * ```ts
 * const insert: ConditionalBatchItem = { pKey, cCols, value, expected: null };
 * const swap: ConditionalBatchItem = { pKey, cCols: other, value: next, expected: previous };
 * ```
 */
export interface ConditionalBatchItem extends BatchItem {
	/**
	 * `null`: no live record may be at the key (as `insertIfNotExists`); bytes: the live record must
	 * hold exactly them (as `compareAndSwap`); omitted: no condition (as `putBatch`).
	 */
	readonly expected?: Bytes | null;
}

/** A record returned by a range read. */
export interface StoredRecord {
	readonly cCols: Bytes;
	readonly value: Bytes;
}

/** Bounds of a range read over the clustering columns of one partition key. */
export interface ReadRange {
	/** Inclusive lower bound; omitted = from the first record. */
	readonly from?: Bytes;
	/** Exclusive upper bound; omitted = to the last record. */
	readonly to?: Bytes;
}

/**
 * A keyspace-scoped key/value store with per-record TTL and atomic conditional writes. Keys are a
 * partition key `pKey` plus clustering columns `cCols`, as in voedger's `IAppStorage`.
 *
 * One semantics on every driver:
 * - a record written with `ttlSeconds = T > 0` at time `t` expires at `expireAt = t + T s`, and is
 *   expired when `now >= expireAt`; `ttlSeconds = 0` keeps it forever;
 * - expired records are invisible to every read and every condition;
 * - conditional writes are atomic;
 * - `read` returns `from <= cCols < to`, ordered by the bytes of `cCols`;
 * - storage failures reject with a {@link TTLStorageError}; bad arguments throw a `TypeError` or
 *   `RangeError` before any I/O;
 * - with `supports.fencing`, writes carrying a {@link WriteFence} are fenced: a writer deposed by a
 *   newer epoch of the same scope can never replace what the newer one wrote (see `raiseFence`).
 *
 * @see voedger pkg/istorage IAppStorage
 * @example
 * ```ts
 * const inserted = await storage.insertIfNotExists(pKey, cCols, value, 20);
 * const renewed = await storage.compareAndSwap(pKey, cCols, value, value, 20);
 * ```
 */
export interface TTLStorage extends AsyncDisposable {
	/** What the driver supports beyond the contract; absent on drivers written before it existed. */
	readonly supports?: TTLStorageSupports;
	/**
	 * Makes `epoch` the current epoch of `scope` (without `epoch`: one above the stored one) and
	 * resolves to the epoch now in force. Rejects with `TTLSTORAGE_FENCED` when a higher epoch is
	 * already stored (a newer writer took the scope over); raising to the stored epoch again is
	 * allowed. Epochs only grow. Drivers with `supports.fencing` only.
	 *
	 * Once it resolved, the driver guarantees, for every write carrying `{ scope, epoch: e }` with
	 * `e` below the raised epoch: **(F1)** it never replaces a record written under the raised
	 * epoch or a later one, whenever it lands (`"epoch"` drivers refuse it altogether). And for
	 * writes under one epoch from one process: **(F2)** of two writes of one record, the one
	 * called later wins, even if the earlier one lands later (a timed-out request applied late).
	 */
	raiseFence?(scope: Bytes, epoch?: bigint): Promise<bigint>;
	/** Writes the record unless a live one exists; `true` when written. */
	insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean>;
	/**
	 * Replaces the value and resets the TTL when a live record holds exactly `oldValue`; `true`
	 * when swapped, `false` when the record is missing, expired or holds another value.
	 */
	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean>;
	/** Deletes the record when a live one holds exactly `expectedValue`; `true` when deleted. */
	compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean>;
	/** The value of the live record, or `undefined`. */
	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined>;
	/** Writes unconditionally; `ttlSeconds` defaults to 0 (no TTL). */
	put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds?: number,
		options?: WriteOptions,
	): Promise<void>;
	/** Writes many records unconditionally. All arguments are validated before anything is written. */
	putBatch(items: readonly BatchItem[]): Promise<void>;
	/**
	 * Writes every item if the condition of every item holds, all or nothing and atomically (no
	 * other write lands between the checks and the writes): `true` when written, `false` when a
	 * condition failed (nothing was written). Conditions see the records as they were before the
	 * batch, so a key may appear only once (a `TypeError` otherwise). Each item carries its own
	 * fence; with `"epoch"` fencing one superseded fence refuses the whole batch with
	 * `TTLSTORAGE_FENCED`. Optional: drivers that do it in one atomic step (level, mem); callers
	 * fall back to single conditional writes where it is missing.
	 */
	putBatchIf?(items: readonly ConditionalBatchItem[]): Promise<boolean>;
	/** Live records of one partition key within `range`, ordered by `cCols` bytes. */
	read(pKey: Bytes, range?: ReadRange): AsyncIterable<StoredRecord>;
	/**
	 * Remaining TTL of the live record in whole seconds, rounded up (`1..ttl`); `0` when it has no
	 * TTL; `undefined` when it is missing or expired.
	 */
	queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined>;
	/** Releases resources the driver owns; later calls reject with `TTLSTORAGE_CLOSED`. Idempotent. */
	close(): Promise<void>;
}
