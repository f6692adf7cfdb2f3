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
 * @internal Group commit of unconditional writes: the `put`/`putBatch` calls that arrive while
 * `maxInFlight` batches are at the storage are queued and then sent as one `putBatch`. Every
 * caller's promise settles with the outcome of the batch that carried its items (a failed batch
 * fails all of them, and each caller recovers as from its own failure). Batches leave in arrival
 * order; a batch waits while one in flight holds any of its keys, and a key already queued starts a
 * new batch, so a later write of a key never overtakes an earlier one. Conditional writes and reads
 * go straight through.
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
			g.waiters.push({ resolve, reject });
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
			(error: unknown) => {
				for (const w of g.waiters) w.reject(error);
			},
		);
		this.#inFlight.add(sent);
		void sent.then(() => {
			this.#inFlight.delete(sent);
			for (const k of g.keys) this.#inFlightKeys.delete(k);
			this.#pump();
		});
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
		while (this.#inFlight.size > 0) await Promise.all([...this.#inFlight]);
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}
