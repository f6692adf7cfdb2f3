/**
 * The storage elections need: conditional writes with a TTL in whole seconds. A record is expired
 * when `now >= expireAt`, and expired records are invisible to every condition and to `get`.
 * Storage failures reject the promise (never `false`).
 *
 * Build one over any `TTLStorage` driver with {@link createElectionsStorage}, or use
 * {@link vvmLeadershipStorage} for the VVM key layout.
 *
 * @see server.design.orch/ITTLStorage (voedger pkg/ielections ITTLStorage)
 * @example
 * ```ts
 * const storage: ITTLStorage<number, string> = vvmLeadershipStorage(createMemTTLStorage());
 * await storage.insertIfNotExist(1, "10.0.0.1", 20); // true
 * ```
 */
export interface ITTLStorage<K, V> {
	/** Writes `value` with the TTL unless a live record exists; `true` when written. */
	insertIfNotExist(key: K, value: V, ttlSeconds: number): Promise<boolean>;
	/**
	 * When a live record holds `oldValue`, writes `newValue` and resets the TTL: `true`. Missing,
	 * expired or another value: `false`.
	 */
	compareAndSwap(key: K, oldValue: V, newValue: V, ttlSeconds: number): Promise<boolean>;
	/** Deletes the record only when a live one holds `value`; `true` when deleted. */
	compareAndDelete(key: K, value: V): Promise<boolean>;
	/** The value of the live record, or `undefined`. */
	get(key: K): Promise<V | undefined>;
	/**
	 * Where the fencing tokens of the keys live (a counter record per key, without TTL). Optional:
	 * without it, leaderships have no `fencingToken`. {@link createElectionsStorage} and
	 * {@link vvmLeadershipStorage} provide it.
	 */
	readonly fencing?: FencingCounter<K>;
}

/**
 * A per-key counter that only grows, kept without TTL, advanced by a conditional write: the
 * fencing tokens of {@link ITTLStorage}. Elections advance it once per acquisition, while the new
 * lease is valid, and hand the new value out as the leadership's fencing token.
 *
 * @example
 * ```ts
 * const current = await storage.fencing.read(1);          // 0 before the first acquisition
 * const ok = await storage.fencing.advance(1, current);   // current -> current + 1
 * ```
 */
export interface FencingCounter<K> {
	/** The key's last token; `0` before the first acquisition. */
	read(key: K): Promise<number>;
	/**
	 * Sets the counter to `current + 1` if it still holds `current` (insert-if-absent for `0`):
	 * `true` when written, `false` when another write got there first.
	 */
	advance(key: K, current: number): Promise<boolean>;
}
