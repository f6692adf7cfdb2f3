import type { PLogOffset, SeqID, SeqNumber, WSID } from "@vvm/isequencer";
import { SeqStorageError } from "./errors.ts";

/** pKey prefix of a partition's next PLog offset (voedger `pKeyPrefix_SeqStorage_Part`). */
export const PKEY_PREFIX_SEQ_STORAGE_PART = 2;
/** pKey prefix of a workspace's numbers (voedger `pKeyPrefix_SeqStorage_WS`). */
export const PKEY_PREFIX_SEQ_STORAGE_WS = 3;

const TWO_32 = 0x1_0000_0000;

function putU64(view: DataView, at: number, n: number): void {
	view.setUint32(at, Math.floor(n / TWO_32));
	view.setUint32(at + 4, n >>> 0);
}

/** @internal `u32(3) u32(appId) u64(wsid)`, 16 bytes. */
export function numbersPKey(appId: number, wsid: WSID): Uint8Array {
	const b = new Uint8Array(16);
	const v = new DataView(b.buffer);
	v.setUint32(0, PKEY_PREFIX_SEQ_STORAGE_WS);
	v.setUint32(4, appId);
	putU64(v, 8, wsid);
	return b;
}

/** @internal `u16(seqId)`, 2 bytes. */
export function seqIdCCols(seqId: SeqID): Uint8Array {
	return new Uint8Array([seqId >>> 8, seqId & 0xff]);
}

/** @internal `u32(2) u32(appId) u16(partitionId)`, 10 bytes. */
export function offsetPKey(appId: number, partitionId: number): Uint8Array {
	const b = new Uint8Array(10);
	const v = new DataView(b.buffer);
	v.setUint32(0, PKEY_PREFIX_SEQ_STORAGE_PART);
	v.setUint32(4, appId);
	v.setUint16(8, partitionId);
	return b;
}

/** @internal voedger's `PLogOffsetCC`: 4 zero bytes. */
export const OFFSET_CCOLS: Uint8Array = new Uint8Array(4);

/** @internal 8-byte big-endian unsigned value. */
export function encodeU64(n: SeqNumber | PLogOffset): Uint8Array {
	const b = new Uint8Array(8);
	putU64(new DataView(b.buffer), 0, n);
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
