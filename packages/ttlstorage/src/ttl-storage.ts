/** Bytes as every driver stores them. */
export type Bytes = Uint8Array;

/** One record of a {@link TTLStorage.putBatch}. */
export interface BatchItem {
	readonly pKey: Bytes;
	readonly cCols: Bytes;
	readonly value: Bytes;
	/** 0 (the default) keeps the record forever. */
	readonly ttlSeconds?: number;
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
 *   `RangeError` before any I/O.
 *
 * @see voedger pkg/istorage IAppStorage
 * @example
 * ```ts
 * const inserted = await storage.insertIfNotExists(pKey, cCols, value, 20);
 * const renewed = await storage.compareAndSwap(pKey, cCols, value, value, 20);
 * ```
 */
export interface TTLStorage extends AsyncDisposable {
	/** Writes the record unless a live one exists; `true` when written. */
	insertIfNotExists(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds: number): Promise<boolean>;
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
	): Promise<boolean>;
	/** Deletes the record when a live one holds exactly `expectedValue`; `true` when deleted. */
	compareAndDelete(pKey: Bytes, cCols: Bytes, expectedValue: Bytes): Promise<boolean>;
	/** The value of the live record, or `undefined`. */
	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined>;
	/** Writes unconditionally; `ttlSeconds` defaults to 0 (no TTL). */
	put(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds?: number): Promise<void>;
	/** Writes many records unconditionally. All arguments are validated before anything is written. */
	putBatch(items: readonly BatchItem[]): Promise<void>;
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
