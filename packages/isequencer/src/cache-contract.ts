// What every record cache of the sequencer offers; its own file, so the caches and the factory
// that picks one import it without importing each other.

/**
 * @internal What the sequencer needs of its cache. `onEvict` (given to the factory) runs only when
 * `set` pushes a value out to make room, never on `delete`/`clear`.
 *
 * @example
 * ```ts
 * const cache: RecordCache<number, Rec> = createRecordCache("lru-cache", 100, (r) => r.id, evicted);
 * cache.set(1, rec);
 * ```
 */
export interface RecordCache<K, V> {
	/** The value, counted as a use (it is kept longer); `undefined` on a miss. */
	get(key: K): V | undefined;
	/** The value without counting a use. */
	peek(key: K): V | undefined;
	has(key: K): boolean;
	/** Inserts or replaces; when full, evicts one value first (calling `onEvict`). */
	set(key: K, value: V): void;
	delete(key: K): boolean;
	/** Empties the cache without calling `onEvict`. */
	clear(): void;
	readonly size: number;
}
