import type { RecordCache } from "./cache-contract.ts";

/**
 * @internal A node of an {@link IntrusiveLru}: the value itself carries the recency links, so the
 * cache allocates nothing per entry beyond its `Map` slot.
 *
 * @example
 * ```ts
 * class Rec implements LruNode<Rec> { lruPrev: Rec | undefined; lruNext: Rec | undefined; }
 * ```
 */
export interface LruNode<V> {
	/** Less recently used neighbour; `undefined` at the head. Owned by the cache. */
	lruPrev: V | undefined;
	/** More recently used neighbour; `undefined` at the tail. Owned by the cache. */
	lruNext: V | undefined;
	/** Hit since it was last queued: gets a second chance before eviction. Owned by the cache. */
	lruUsed: boolean;
}

/**
 * @internal A cache of at most `max` values that evicts approximately the least recently used: a
 * queue threaded through the values ({@link LruNode}) with second chance (the CLOCK algorithm). A
 * hit is one `Map` probe and sets a flag on the value; only an eviction moves values: the oldest
 * value that was hit since it was queued is re-queued with its flag cleared, the first one that
 * was not is evicted. Random hits over 100 000 entries measured about 4x faster than `lru-cache`
 * (which relinks index arrays on every hit); relinking on every hit alone cost about 10 % of a
 * PLog replay. `onEvict` runs only when `set` pushes a value out (not on `delete`/`clear`). A
 * value must be in at most one cache at a time.
 *
 * @example
 * ```ts
 * const lru = new IntrusiveLru<number, Rec>(100_000, (rec) => offCache.set(rec.wsid, rec));
 * lru.set(1, rec);
 * lru.get(1); // rec, now the most recently used
 * ```
 */
export class IntrusiveLru<K, V extends LruNode<V>> implements RecordCache<K, V> {
	readonly #max: number;
	readonly #onEvict: (value: V, key: K) => void;
	readonly #keyOf: (value: V) => K;
	readonly #map = new Map<K, V>();
	/** Queued first: the next eviction candidate. */
	#head: V | undefined;
	/** Queued last. */
	#tail: V | undefined;

	constructor(max: number, keyOf: (value: V) => K, onEvict: (value: V, key: K) => void) {
		if (!Number.isSafeInteger(max) || max < 1)
			throw new RangeError(`[@vvm/isequencer] LRU max must be an integer >= 1, got ${max}`);
		this.#max = max;
		this.#keyOf = keyOf;
		this.#onEvict = onEvict;
	}

	get size(): number {
		return this.#map.size;
	}

	/** The value, marked as used (it survives the next eviction round); `undefined` on a miss. */
	get(key: K): V | undefined {
		const v = this.#map.get(key);
		if (v !== undefined && !v.lruUsed) v.lruUsed = true;
		return v;
	}

	/** The value without marking it as used. */
	peek(key: K): V | undefined {
		return this.#map.get(key);
	}

	has(key: K): boolean {
		return this.#map.has(key);
	}

	/** Inserts (or replaces) at the end of the queue; evicts one value first when full. */
	set(key: K, value: V): void {
		const old = this.#map.get(key);
		if (old !== undefined) {
			this.#unlink(old);
			this.#map.delete(key);
		} else if (this.#map.size >= this.#max) {
			let victim = this.#head as V;
			// Terminates: every pass clears one flag.
			while (victim.lruUsed) {
				victim.lruUsed = false;
				if (victim !== this.#tail) {
					this.#unlink(victim);
					this.#append(victim);
				}
				victim = this.#head as V;
			}
			const victimKey = this.#keyOf(victim);
			this.#unlink(victim);
			this.#map.delete(victimKey);
			this.#onEvict(victim, victimKey);
		}
		this.#map.set(key, value);
		value.lruUsed = false;
		this.#append(value);
	}

	delete(key: K): boolean {
		const v = this.#map.get(key);
		if (v === undefined) return false;
		this.#unlink(v);
		this.#map.delete(key);
		return true;
	}

	/** Empties the cache without calling `onEvict`. */
	clear(): void {
		for (let v = this.#head; v !== undefined; ) {
			const next: V | undefined = v.lruNext;
			v.lruPrev = undefined;
			v.lruNext = undefined;
			v.lruUsed = false;
			v = next;
		}
		this.#head = undefined;
		this.#tail = undefined;
		this.#map.clear();
	}

	#unlink(v: V): void {
		const prev = v.lruPrev;
		const next = v.lruNext;
		if (prev === undefined) this.#head = next;
		else prev.lruNext = next;
		if (next === undefined) this.#tail = prev;
		else next.lruPrev = prev;
		v.lruPrev = undefined;
		v.lruNext = undefined;
	}

	#append(v: V): void {
		const tail = this.#tail;
		v.lruPrev = tail;
		if (tail === undefined) this.#head = v;
		else tail.lruNext = v;
		this.#tail = v;
	}
}
