import type { TTLStorage } from "@vvm/ttlstorage";

/**
 * A storage that delegates every operation to `storage` except those in `overrides`: the base of
 * the test wrappers (write checks, broken storages for mutation tests).
 *
 * @example
 * ```ts
 * const noisy = wrapStorage(storage, { get: async (p, c) => { console.log("get"); return storage.get(p, c); } });
 * ```
 */
export function wrapStorage(storage: TTLStorage, overrides: Partial<TTLStorage>): TTLStorage {
	return {
		insertIfNotExists: (p, c, v, t) => storage.insertIfNotExists(p, c, v, t),
		compareAndSwap: (p, c, o, n, t) => storage.compareAndSwap(p, c, o, n, t),
		compareAndDelete: (p, c, v) => storage.compareAndDelete(p, c, v),
		get: (p, c) => storage.get(p, c),
		put: (p, c, v, t) => storage.put(p, c, v, t),
		putBatch: (items) => storage.putBatch(items),
		read: (p, r) => storage.read(p, r),
		queryTTL: (p, c) => storage.queryTTL(p, c),
		close: () => storage.close(),
		[Symbol.asyncDispose]: () => storage.close(),
		...overrides,
	};
}
