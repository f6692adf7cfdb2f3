import type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import { validateBatch } from "@vvm/ttlstorage";

interface Waiter {
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
 * @internal Group commit of unconditional writes: while one `putBatch` is at the storage, the
 * `put`/`putBatch` calls that arrive are queued and then sent as one `putBatch`. Every caller's
 * promise settles with the outcome of the batch that carried its items (a failed batch fails all
 * of them, and each caller recovers as from its own failure). Writes are sent in arrival order,
 * one batch at a time; a key already waiting starts a new batch, so a later write of a key is
 * never reordered before an earlier one. Conditional writes and reads go straight through.
 */
export class CoalescingStorage implements TTLStorage {
	readonly #storage: TTLStorage;
	readonly #maxItems: number;
	readonly #queue: Group[] = [];
	#sending: Promise<void> | undefined;
	/** Batches sent (for the benchmark and tests). */
	batches = 0;

	constructor(storage: TTLStorage, maxItems = 512) {
		this.#storage = storage;
		this.#maxItems = maxItems;
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
			g.waiters.push({ resolve, reject });
			if (this.#sending === undefined) this.#sending = this.#pump();
		});
	}

	async #pump(): Promise<void> {
		for (let g = this.#queue.shift(); g !== undefined; g = this.#queue.shift()) {
			this.batches++;
			try {
				await this.#storage.putBatch(g.items);
				for (const w of g.waiters) w.resolve();
			} catch (error) {
				for (const w of g.waiters) w.reject(error);
			}
		}
		this.#sending = undefined;
	}

	put(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds = 0): Promise<void> {
		return this.putBatch([{ pKey, cCols, value, ttlSeconds }]);
	}

	insertIfNotExists(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds: number): Promise<boolean> {
		return this.#storage.insertIfNotExists(pKey, cCols, value, ttlSeconds);
	}

	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
	): Promise<boolean> {
		return this.#storage.compareAndSwap(pKey, cCols, oldValue, newValue, ttlSeconds);
	}

	compareAndDelete(pKey: Bytes, cCols: Bytes, expectedValue: Bytes): Promise<boolean> {
		return this.#storage.compareAndDelete(pKey, cCols, expectedValue);
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
		await this.#sending;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}
