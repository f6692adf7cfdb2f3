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
}
