// A storage that forwards every call to another: the base of the fault layer and the mutants.
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteOptions,
} from "@vvm/ttlstorage";

/** Forwards every call to `inner`; `putBatchIf` and `raiseFence` exist when the inner ones do. */
export class Delegate implements TTLStorage {
	protected readonly inner: TTLStorage;
	readonly supports?: TTLStorageSupports;
	readonly putBatchIf?: (items: readonly ConditionalBatchItem[]) => Promise<boolean>;
	readonly raiseFence?: (scope: Bytes, epoch?: bigint) => Promise<bigint>;

	constructor(inner: TTLStorage) {
		this.inner = inner;
		if (inner.supports !== undefined) this.supports = inner.supports;
		if (inner.putBatchIf !== undefined)
			this.putBatchIf = (items) => this.call("putBatchIf", () => this.doPutBatchIf(items));
		if (inner.raiseFence !== undefined)
			this.raiseFence = (scope, epoch) =>
				this.call("raiseFence", () => this.doRaiseFence(scope, epoch));
	}

	/** Runs one call (`run` reaches the inner storage); the fault layer overrides it. */
	protected call<T>(_operation: string, run: () => Promise<T>): Promise<T> {
		return run();
	}

	protected doPutBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean> {
		return (this.inner.putBatchIf as NonNullable<TTLStorage["putBatchIf"]>)(items);
	}

	protected doRaiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		return (this.inner.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(scope, epoch);
	}

	insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.call("insertIfNotExists", () =>
			this.inner.insertIfNotExists(pKey, cCols, value, ttlSeconds, options),
		);
	}

	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.call("compareAndSwap", () =>
			this.inner.compareAndSwap(pKey, cCols, oldValue, newValue, ttlSeconds, options),
		);
	}

	compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.call("compareAndDelete", () =>
			this.inner.compareAndDelete(pKey, cCols, expectedValue, options),
		);
	}

	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		return this.call("get", () => this.inner.get(pKey, cCols));
	}

	put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		return this.call("put", () => this.inner.put(pKey, cCols, value, ttlSeconds, options));
	}

	putBatch(items: readonly BatchItem[]): Promise<void> {
		return this.call("putBatch", () => this.inner.putBatch(items));
	}

	read(pKey: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
		return this.inner.read(pKey, range);
	}

	queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		return this.call("queryTTL", () => this.inner.queryTTL(pKey, cCols));
	}

	close(): Promise<void> {
		return this.inner.close();
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}
