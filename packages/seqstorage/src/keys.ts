import type { PLogOffset, SeqID, SeqNumber, WSID } from "@vvm/isequencer";
import { putU32, putU64 } from "@vvm/ttlstorage";
import { SeqStorageError } from "./errors.ts";

/** pKey prefix of a partition's next PLog offset (voedger `pKeyPrefix_SeqStorage_Part`). */
const TWO_32 = 0x1_0000_0000;

export const PKEY_PREFIX_SEQ_STORAGE_PART = 2;
/** pKey prefix of a workspace's numbers (voedger `pKeyPrefix_SeqStorage_WS`). */
export const PKEY_PREFIX_SEQ_STORAGE_WS = 3;

/** @internal `u32(3) u32(appId) u64(wsid)`, 16 bytes. */
export function numbersPKey(appId: number, wsid: WSID): Uint8Array {
	const b = new Uint8Array(16);
	putU32(b, 0, PKEY_PREFIX_SEQ_STORAGE_WS);
	putU32(b, 4, appId);
	putU64(b, 8, wsid);
	return b;
}

/** @internal `u16(seqId)`, 2 bytes. */
export function seqIdCCols(seqId: SeqID): Uint8Array {
	return new Uint8Array([seqId >>> 8, seqId & 0xff]);
}

/** @internal `u32(2) u32(appId) u16(partitionId)`, 10 bytes. */
export function offsetPKey(appId: number, partitionId: number): Uint8Array {
	const b = new Uint8Array(10);
	putU32(b, 0, PKEY_PREFIX_SEQ_STORAGE_PART);
	putU32(b, 4, appId);
	b[8] = partitionId >>> 8;
	b[9] = partitionId & 0xff;
	return b;
}

/** @internal voedger's `PLogOffsetCC`: 4 zero bytes. */
export const OFFSET_CCOLS: Uint8Array = new Uint8Array(4);

/** @internal 8-byte big-endian unsigned value. */
export function encodeU64(n: SeqNumber | PLogOffset): Uint8Array {
	const b = new Uint8Array(8);
	putU64(b, 0, n);
	return b;
}

/** @internal `u64(value) u64(asOf)`, 16 bytes: a number with the log offset it is valid for. */
export function encodeU64Pair(value: number, asOf: number): Uint8Array {
	const b = new Uint8Array(16);
	putU64(b, 0, value);
	putU64(b, 8, asOf);
	return b;
}

/** @internal Decodes an 8-byte big-endian value; above 2^53 - 1 is rejected as corrupted. */
export function decodeU64(b: Uint8Array, what: string): number {
	if (b.length !== 8)
		throw new SeqStorageError(
			"SEQSTORAGE_CORRUPTED_VALUE",
			`${what}: expected 8 bytes, got ${b.length}`,
		);
	const v = new DataView(b.buffer, b.byteOffset, 8);
	const n = v.getUint32(0) * TWO_32 + v.getUint32(4);
	if (!Number.isSafeInteger(n))
		throw new SeqStorageError("SEQSTORAGE_CORRUPTED_VALUE", `${what}: ${n} exceeds 2^53 - 1`);
	return n;
}
