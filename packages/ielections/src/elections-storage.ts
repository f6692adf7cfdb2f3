import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import type { ITTLStorage } from "./ttl-storage.ts";

/**
 * How keys and values of an {@link ITTLStorage} map onto a `TTLStorage` driver's byte keys.
 *
 * @example
 * ```ts
 * const codec: ElectionsCodec<string, string> = {
 *   pKey: () => utf8("my-app/leaders"), cCols: (k) => utf8(k),
 *   encodeValue: (v) => utf8(v), decodeValue: (b) => fromUtf8(b),
 * };
 * ```
 */
export interface ElectionsCodec<K, V> {
	/** Partition key of `key`'s record (non-empty). */
	pKey(key: K): Bytes;
	/** Clustering columns of `key`'s record. */
	cCols(key: K): Bytes;
	encodeValue(value: V): Bytes;
	decodeValue(bytes: Bytes): V;
}

/**
 * Adapts a `TTLStorage` driver to the {@link ITTLStorage} elections need, through `codec`.
 * Values are compared as encoded bytes, so `encodeValue` must be deterministic. Driver errors
 * propagate unchanged (`TTLStorageError` with its code).
 *
 * @see voedger pkg/vvm/storage NewElectionsTTLStorage
 * @example
 * ```ts
 * const storage = createElectionsStorage(createMemTTLStorage(), codec);
 * const elections = createElections(storage);
 * ```
 */
export function createElectionsStorage<K, V>(
	driver: TTLStorage,
	codec: ElectionsCodec<K, V>,
): ITTLStorage<K, V> {
	return {
		// async: codec and validation errors reject like storage errors do, never throw synchronously.
		insertIfNotExist: async (key, value, ttlSeconds) =>
			driver.insertIfNotExists(
				codec.pKey(key),
				codec.cCols(key),
				codec.encodeValue(value),
				ttlSeconds,
			),
		compareAndSwap: async (key, oldValue, newValue, ttlSeconds) =>
			driver.compareAndSwap(
				codec.pKey(key),
				codec.cCols(key),
				codec.encodeValue(oldValue),
				codec.encodeValue(newValue),
				ttlSeconds,
			),
		compareAndDelete: async (key, value) =>
			driver.compareAndDelete(codec.pKey(key), codec.cCols(key), codec.encodeValue(value)),
		async get(key) {
			const bytes = await driver.get(codec.pKey(key), codec.cCols(key));
			return bytes === undefined ? undefined : codec.decodeValue(bytes);
		},
	};
}
