import { putU32, putU64 } from "@vvm/ttlstorage";
import type { CpKeyInfo } from "./errors.ts";

/**
 * pKey prefixes of the event log and the records. They follow the ones of the VVM storage
 * (1 leader, 2 sequencer's PLog offset, 3 sequence numbers, 4 app TTL: reference §4.2), so one
 * keyspace holds them all without collisions.
 */
const TWO_32 = 0x1_0000_0000;

export const PKEY_PREFIX_PLOG = 5;
/** pKey prefix of the WLog (events per workspace). */
export const PKEY_PREFIX_WLOG = 6;
/** pKey prefix of records by `(wsid, id)`. */
export const PKEY_PREFIX_RECORDS = 7;
/** pKey prefix of idempotency keys by `(wsid, key)`. */
export const PKEY_PREFIX_IDEMPOTENCY = 8;
/** pKey prefix of a partition's fence record (the storage driver's, see `raiseFence`). */
export const PKEY_PREFIX_FENCE = 9;

/**
 * Offsets and IDs per partition key: a PLog, a WLog and a workspace's records are bucketed by
 * `floor(n / 4096)` so no Cassandra or DynamoDB partition grows without bound.
 */
export const BUCKET_SIZE = 4096;

/** A storage key. */
export interface StorageKey {
	readonly pKey: Uint8Array;
	readonly cCols: Uint8Array;
}

/** @internal 8-byte big-endian encoding of a safe non-negative integer. */
export function u64(n: number): Uint8Array {
	const b = new Uint8Array(8);
	putU64(b, 0, n);
	return b;
}

/** @internal Decodes 8 big-endian bytes; `undefined` unless exactly 8 bytes of a safe integer. */
export function readU64(b: Uint8Array): number | undefined {
	if (b.length !== 8) return undefined;
	const hi =
		(((b[0] as number) << 24) |
			((b[1] as number) << 16) |
			((b[2] as number) << 8) |
			(b[3] as number)) >>>
		0;
	const lo =
		(((b[4] as number) << 24) |
			((b[5] as number) << 16) |
			((b[6] as number) << 8) |
			(b[7] as number)) >>>
		0;
	const n = hi * TWO_32 + lo;
	return Number.isSafeInteger(n) ? n : undefined;
}

/** @internal The bucket of an offset or ID. */
export function bucketOf(n: number): number {
	return Math.floor(n / BUCKET_SIZE);
}

/** @internal pKey `u32(5) u32(appId) u16(partitionId) u64(bucket)`, 18 bytes. */
export function plogPKey(appId: number, partitionId: number, bucket: number): Uint8Array {
	const b = new Uint8Array(18);
	putU32(b, 0, PKEY_PREFIX_PLOG);
	putU32(b, 4, appId);
	b[8] = partitionId >>> 8;
	b[9] = partitionId & 0xff;
	putU64(b, 10, bucket);
	return b;
}

function wsPKey(prefix: number, appId: number, wsid: number, bucket: number): Uint8Array {
	const b = new Uint8Array(24);
	putU32(b, 0, prefix);
	putU32(b, 4, appId);
	putU64(b, 8, wsid);
	putU64(b, 16, bucket);
	return b;
}

/** @internal pKey `u32(6) u32(appId) u64(wsid) u64(bucket)`, 24 bytes. */
export function wlogPKey(appId: number, wsid: number, bucket: number): Uint8Array {
	return wsPKey(PKEY_PREFIX_WLOG, appId, wsid, bucket);
}

/** @internal The fence scope of a partition: `u32(9) u32(appId) u16(partitionId)`, 10 bytes. */
export function fenceScope(appId: number, partitionId: number): Uint8Array {
	const b = new Uint8Array(10);
	putU32(b, 0, PKEY_PREFIX_FENCE);
	putU32(b, 4, appId);
	b[8] = partitionId >>> 8;
	b[9] = partitionId & 0xff;
	return b;
}

/** FNV-1a of a string's UTF-16 code units: spreads idempotency keys over partition keys. */
function fnv1a(s: string): number {
	let h = 0x811c9dc5;
	for (let i = 0; i < s.length; i++) {
		h ^= s.charCodeAt(i);
		h = Math.imul(h, 0x01000193) >>> 0;
	}
	return h;
}

/**
 * The storage keys of the event log and the records, for tools and tests (e.g. to corrupt the
 * next key on purpose, as seed 004's integration tests do). Every integer is big-endian.
 *
 * @example
 * ```ts
 * const { pKey, cCols } = cpKeys.record(1, 1001, 322685000131072);
 * await storage.put(pKey, cCols, new Uint8Array([1]));
 * ```
 */
export const cpKeys: {
	/** PLog event: pKey `u32(5) u32(appId) u16(partitionId) u64(offset / 4096)`, cCols `u64(offset)`. */
	plog(appId: number, partitionId: number, offset: number): StorageKey;
	/** WLog event: pKey `u32(6) u32(appId) u64(wsid) u64(offset / 4096)`, cCols `u64(offset)`. */
	wlog(appId: number, wsid: number, offset: number): StorageKey;
	/** Record: pKey `u32(7) u32(appId) u64(wsid) u64(id / 4096)`, cCols `u64(id)`. */
	record(appId: number, wsid: number, id: number): StorageKey;
	/**
	 * Idempotency key: pKey `u32(8) u32(appId) u64(wsid) u32(fnv1a(key))`, cCols the key's UTF-8
	 * bytes (one small partition per key, read by point lookups only).
	 */
	idempotency(appId: number, wsid: number, key: string): StorageKey;
} = {
	plog: (appId, partitionId, offset) => ({
		pKey: plogPKey(appId, partitionId, bucketOf(offset)),
		cCols: u64(offset),
	}),
	wlog: (appId, wsid, offset) => ({
		pKey: wlogPKey(appId, wsid, bucketOf(offset)),
		cCols: u64(offset),
	}),
	record: (appId, wsid, id) => ({
		pKey: wsPKey(PKEY_PREFIX_RECORDS, appId, wsid, bucketOf(id)),
		cCols: u64(id),
	}),
	idempotency: (appId, wsid, key) => {
		const pKey = new Uint8Array(20);
		putU32(pKey, 0, PKEY_PREFIX_IDEMPOTENCY);
		putU32(pKey, 4, appId);
		putU64(pKey, 8, wsid);
		putU32(pKey, 16, fnv1a(key));
		return { pKey, cCols: new TextEncoder().encode(key) };
	},
};

/** @internal Lower-case hex of bytes. */
export function hex(b: Uint8Array): string {
	return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("hex");
}

/** @internal Describes a key for errors and logs. */
export function keyInfo(kind: CpKeyInfo["kind"], description: string, key: StorageKey): CpKeyInfo {
	return { kind, description, pKey: hex(key.pKey), cCols: hex(key.cCols) };
}
