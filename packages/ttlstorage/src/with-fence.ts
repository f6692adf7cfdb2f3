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
} from "./ttl-storage.ts";

/** See {@link withFence}. */
class FencedStorage implements TTLStorage {
	readonly #inner: TTLStorage;
	readonly #options: WriteOptions;
	readonly #fence: WriteFence;
	readonly supports?: TTLStorageSupports;
	/** The inner storage's, each item fenced; absent when the inner storage has none. */
	readonly putBatchIf?: (items: readonly ConditionalBatchItem[]) => Promise<boolean>;

	constructor(inner: TTLStorage, fence: WriteFence) {
		this.#inner = inner;
		this.#fence = fence;
		this.#options = { fence };
		if (inner.supports !== undefined) this.supports = inner.supports;
		const putBatchIf = inner.putBatchIf?.bind(inner);
		if (putBatchIf !== undefined)
			this.putBatchIf = (items) => putBatchIf(items.map((item) => ({ ...item, fence })));
	}

	insertIfNotExists(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds: number): Promise<boolean> {
		return this.#inner.insertIfNotExists(pKey, cCols, value, ttlSeconds, this.#options);
	}

	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
	): Promise<boolean> {
		return this.#inner.compareAndSwap(pKey, cCols, oldValue, newValue, ttlSeconds, this.#options);
	}

	compareAndDelete(pKey: Bytes, cCols: Bytes, expectedValue: Bytes): Promise<boolean> {
		return this.#inner.compareAndDelete(pKey, cCols, expectedValue, this.#options);
	}

	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		return this.#inner.get(pKey, cCols);
	}

	put(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds = 0): Promise<void> {
		return this.#inner.put(pKey, cCols, value, ttlSeconds, this.#options);
	}

	putBatch(items: readonly BatchItem[]): Promise<void> {
		return this.#inner.putBatch(items.map((item) => ({ ...item, fence: this.#fence })));
	}

	read(pKey: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
		return this.#inner.read(pKey, range);
	}

	queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		return this.#inner.queryTTL(pKey, cCols);
	}

	/** The inner storage belongs to its owner. */
	async close(): Promise<void> {}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/**
 * A view of `storage` whose every write carries `fence`: what one writer of a fenced scope (a
 * deployed partition, under its epoch) writes through. Reads pass through; closing the view leaves
 * `storage` open.
 *
 * @example
 * ```ts
 * const epoch = await storage.raiseFence?.(scope, lease.epoch);
 * const mine = withFence(storage, { scope, epoch });
 * await mine.put(pKey, cCols, value); // refused or superseded once a newer epoch took the scope
 * ```
 */
export function withFence(storage: TTLStorage, fence: WriteFence): TTLStorage {
	return new FencedStorage(storage, fence);
}
