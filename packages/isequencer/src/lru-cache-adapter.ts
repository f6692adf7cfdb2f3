import { LRUCache } from "lru-cache";
import type { RecordCache } from "./cache-contract.ts";

/**
 * @internal {@link RecordCache} over `LRUCache` from `lru-cache`: strict LRU, every `get` hit moves
 * the entry to the most recently used end. Options chosen for a cheap hot path: no TTL (so no age
 * tracking: `updateAgeOnGet` only refreshes a TTL, and recency is refreshed by every `get` anyway),
 * no size calculation, and `dispose` filtered to reason `"evict"` (not `disposeAfter`, which queues
 * every disposal); `noDisposeOnSet` skips the call when a key is replaced.
 *
 * @example
 * ```ts
 * const cache = new LruCacheAdapter<number, Rec>(100_000, (rec) => offCache.set(rec.id, rec));
 * ```
 */
export class LruCacheAdapter<K extends {}, V extends {}> implements RecordCache<K, V> {
	readonly #cache: LRUCache<K, V>;

	constructor(max: number, onEvict: (value: V, key: K) => void) {
		if (!Number.isSafeInteger(max) || max < 1)
			throw new RangeError(`[@vvm/isequencer] LRU max must be an integer >= 1, got ${max}`);
		this.#cache = new LRUCache<K, V>({
			max,
			updateAgeOnGet: false,
			noDisposeOnSet: true,
			dispose: (value, key, reason) => {
				if (reason === "evict") onEvict(value, key);
			},
		});
	}

	get size(): number {
		return this.#cache.size;
	}

	get(key: K): V | undefined {
		return this.#cache.get(key);
	}

	peek(key: K): V | undefined {
		return this.#cache.peek(key);
	}

	has(key: K): boolean {
		return this.#cache.has(key);
	}

	set(key: K, value: V): void {
		this.#cache.set(key, value);
	}

	delete(key: K): boolean {
		return this.#cache.delete(key);
	}

	clear(): void {
		this.#cache.clear();
	}
}
