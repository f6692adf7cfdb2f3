import type {
	BatchItem,
	Bytes,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteOptions,
} from "@vvm/ttlstorage";
import { TTLStorageError, validateBatch } from "@vvm/ttlstorage";

interface Waiter {
	/** This caller's items, sent again on their own if a merged batch was fenced out. */
	readonly items: readonly BatchItem[];
	readonly resolve: () => void;
	readonly reject: (error: unknown) => void;
}

interface Group {
	readonly items: BatchItem[];
	readonly keys: Set<string>;
	readonly waiters: Waiter[];
}

const keyOf = (item: BatchItem): string =>
	`${Buffer.from(item.pKey.buffer, item.pKey.byteOffset, item.pKey.byteLength).toString("latin1")}\u0000${Buffer.from(item.cCols.buffer, item.cCols.byteOffset, item.cCols.byteLength).toString("latin1")}`;

/**
 * @internal Group commit of unconditional writes: the `put`/`putBatch` calls that arrive while
 * `maxInFlight` batches are at the storage are queued and then sent as one `putBatch`. Every
 * caller's promise settles with the outcome of the batch that carried its items (a failed batch
 * fails all of them, and each caller recovers as from its own failure). Batches leave in arrival
 * order; a batch waits while one in flight holds any of its keys, and a key already queued starts a
 * new batch, so a later write of a key never overtakes an earlier one. Conditional writes and reads
 * go straight through. Items keep their fences; when a storage that fences by epoch refuses a
 * merged batch (`TTLSTORAGE_FENCED`: one partition's holder was deposed), each caller's items are
 * sent again on their own, so only the deposed caller fails.
 */
export class CoalescingStorage implements TTLStorage {
	readonly #storage: TTLStorage;
	readonly #maxItems: number;
	readonly #maxInFlight: number;
	readonly #queue: Group[] = [];
	readonly #inFlightKeys = new Set<string>();
	readonly #inFlight = new Set<Promise<void>>();
	/** Batches sent (for the benchmark and tests). */
	batches = 0;

	constructor(storage: TTLStorage, options: { maxInFlight?: number; maxItems?: number } = {}) {
		this.#storage = storage;
		if (storage.supports !== undefined) this.supports = storage.supports;
		this.#maxItems = options.maxItems ?? 512;
		this.#maxInFlight = options.maxInFlight ?? 2;
	}

	putBatch(items: readonly BatchItem[]): Promise<void> {
		// Validated here, so a bad item fails its own caller, never a whole batch.
		validateBatch(items);
		if (items.length === 0) return Promise.resolve();
		return new Promise<void>((resolve, reject) => {
			const keys = items.map(keyOf);
			let g = this.#queue.at(-1);
			if (
				g === undefined ||
				g.items.length + items.length > this.#maxItems ||
				keys.some((k) => g?.keys.has(k))
			) {
				g = { items: [], keys: new Set(), waiters: [] };
				this.#queue.push(g);
			}
			g.items.push(...items);
			for (const k of keys) g.keys.add(k);
			g.waiters.push({ items, resolve, reject });
			this.#pump();
		});
	}

	#pump(): void {
		while (this.#inFlight.size < this.#maxInFlight) {
			const g = this.#queue[0];
			if (g === undefined) return;
			for (const k of g.keys) if (this.#inFlightKeys.has(k)) return;
			this.#queue.shift();
			this.#send(g);
		}
	}

	#send(g: Group): void {
		this.batches++;
		for (const k of g.keys) this.#inFlightKeys.add(k);
		let written: Promise<void>;
		try {
			written = this.#storage.putBatch(g.items);
		} catch (error) {
			written = Promise.reject(error);
		}
		const sent: Promise<void> = written.then(
			() => {
				for (const w of g.waiters) w.resolve();
			},
			async (error: unknown) => {
				const fenced = TTLStorageError.is(error) && error.code === "TTLSTORAGE_FENCED";
				if (!fenced || g.waiters.length === 1) {
					for (const w of g.waiters) w.reject(error);
					return;
				}
				// Keys stay held meanwhile: later writes of them wait, as for any batch in flight.
				for (const w of g.waiters) await this.#storage.putBatch(w.items).then(w.resolve, w.reject);
			},
		);
		this.#inFlight.add(sent);
		void sent.then(() => {
			this.#inFlight.delete(sent);
			for (const k of g.keys) this.#inFlightKeys.delete(k);
			this.#pump();
		});
	}

	/** The storage's, when it has them. */
	readonly supports?: TTLStorageSupports;

	raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		if (this.#storage.raiseFence === undefined)
			return Promise.reject(new TypeError("[@vvm/cp] the storage does not support fencing"));
		return this.#storage.raiseFence(scope, epoch);
	}

	put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		const fence = options?.fence;
		return this.putBatch([
			fence === undefined
				? { pKey, cCols, value, ttlSeconds }
				: { pKey, cCols, value, ttlSeconds, fence },
		]);
	}

	insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.#storage.insertIfNotExists(pKey, cCols, value, ttlSeconds, options);
	}

	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.#storage.compareAndSwap(pKey, cCols, oldValue, newValue, ttlSeconds, options);
	}

	compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		return this.#storage.compareAndDelete(pKey, cCols, expectedValue, options);
	}

	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		return this.#storage.get(pKey, cCols);
	}

	read(pKey: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
		return this.#storage.read(pKey, range);
	}

	queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		return this.#storage.queryTTL(pKey, cCols);
	}

	/** Waits for queued writes; the underlying storage stays open (its owner closes it). */
	async close(): Promise<void> {
		while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}
