import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import type { FencingCounter, ITTLStorage } from "./ttl-storage.ts";

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
	/**
	 * Partition key of `key`'s fencing-token counter (its `cCols` are the record's). Default: the
	 * bytes of `"vvm.fencing:"` followed by `pKey(key)`, a partition of its own, so range reads
	 * of the records never see counters.
	 */
	fencingPKey?(key: K): Bytes;
}

const FENCING_PKEY_PREFIX = utf8("vvm.fencing:");

function concat(a: Bytes, b: Bytes): Bytes {
	const out = new Uint8Array(a.length + b.length);
	out.set(a);
	out.set(b, a.length);
	return out;
}

/** A token as stored: 8 bytes, big-endian. */
function encodeToken(token: number): Bytes {
	const b = new Uint8Array(8);
	const v = new DataView(b.buffer);
	v.setUint32(0, Math.floor(token / 0x1_0000_0000));
	v.setUint32(4, token >>> 0);
	return b;
}

function decodeToken(bytes: Bytes): number {
	if (bytes.length !== 8) {
		throw new Error(
			`[@vvm/ielections] corrupted fencing token: expected 8 bytes, got ${bytes.length}`,
		);
	}
	const v = new DataView(bytes.buffer, bytes.byteOffset, 8);
	return v.getUint32(0) * 0x1_0000_0000 + v.getUint32(4);
}

function fencingCounter<K, V>(driver: TTLStorage, codec: ElectionsCodec<K, V>): FencingCounter<K> {
	const pKey = (key: K): Bytes =>
		codec.fencingPKey?.(key) ?? concat(FENCING_PKEY_PREFIX, codec.pKey(key));
	return {
		async read(key) {
			const bytes = await driver.get(pKey(key), codec.cCols(key));
			return bytes === undefined ? 0 : decodeToken(bytes);
		},
		async advance(key, current) {
			if (!Number.isSafeInteger(current) || current < 0 || current >= Number.MAX_SAFE_INTEGER)
				throw new RangeError(`[@vvm/ielections] bad fencing token ${String(current)}`);
			const next = encodeToken(current + 1);
			// No TTL: the counter must outlive every leadership, or tokens would start over.
			return current === 0
				? driver.insertIfNotExists(pKey(key), codec.cCols(key), next, 0)
				: driver.compareAndSwap(pKey(key), codec.cCols(key), encodeToken(current), next, 0);
		},
	};
}

/**
 * Adapts a `TTLStorage` driver to the {@link ITTLStorage} elections need, through `codec`.
 * Values are compared as encoded bytes, so `encodeValue` must be deterministic. Driver errors
 * propagate unchanged (`TTLStorageError` with its code). Provides fencing tokens: a counter
 * record per key (u64 big-endian, no TTL) at `codec.fencingPKey(key)` / `codec.cCols(key)`.
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
		fencing: fencingCounter(driver, codec),
	};
}
