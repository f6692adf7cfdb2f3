import { TTLStorageError } from "./errors.ts";
import type { Bytes, WriteFence } from "./ttl-storage.ts";

/**
 * Where a driver keeps the fence of a scope: the record at pKey `scope`, cCols `FENCE_CCOLS`
 * (empty). Callers choose scopes that hold no data of their own under that key.
 */
export const FENCE_CCOLS: Uint8Array = new Uint8Array(0);

/** The stored form of an epoch: 8 bytes, big-endian. */
export function encodeFenceEpoch(epoch: bigint): Uint8Array {
	const out = new Uint8Array(8);
	new DataView(out.buffer).setBigUint64(0, epoch);
	return out;
}

/** Reads the epoch from the first 8 bytes of a stored fence record (`TTLSTORAGE_FAILED` if short). */
export function decodeFenceEpoch(value: Bytes, driver: string): bigint {
	if (value.length < 8)
		throw new TTLStorageError(
			"TTLSTORAGE_FAILED",
			`a fence record holds ${value.length} bytes, expected at least 8`,
			{ driver, operation: "raiseFence" },
		);
	return new DataView(value.buffer, value.byteOffset, value.byteLength).getBigUint64(0);
}

/** Whether two fences name the same scope (byte-equal). */
export function sameFence(a: WriteFence, b: WriteFence): boolean {
	if (a.scope.length !== b.scope.length) return false;
	for (let i = 0; i < a.scope.length; i++) if (a.scope[i] !== b.scope[i]) return false;
	return true;
}
