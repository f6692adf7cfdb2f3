import { TTLStorageError } from "./errors.ts";
import type { Bytes } from "./ttl-storage.ts";

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

/** What {@link raiseFenceRecord} needs: a storage's own conditional writes on the fence record. */
export interface FenceRecordStore {
	get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined>;
	insertIfNotExists(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds: number): Promise<boolean>;
	compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
	): Promise<boolean>;
}

/**
 * `raiseFence` over a driver's own atomic conditional writes: reads the fence record of `scope`,
 * refuses a lower epoch (`TTLSTORAGE_FENCED`), and moves it up by compare-and-swap (insert when
 * absent), reading again after a lost race. For drivers whose writes are ordered per record
 * (`supports.fencing: "ordered"`), where the record only names the epoch in force.
 *
 * @example
 * ```ts
 * raiseFence(scope, epoch) { return raiseFenceRecord(this, "dyn", scope, epoch); }
 * ```
 */
export async function raiseFenceRecord(
	store: FenceRecordStore,
	driver: string,
	scope: Bytes,
	epoch: bigint | undefined,
): Promise<bigint> {
	for (;;) {
		const stored = await store.get(scope, FENCE_CCOLS);
		const current = stored === undefined ? 0n : decodeFenceEpoch(stored, driver);
		if (epoch !== undefined && epoch < current)
			throw new TTLStorageError(
				"TTLSTORAGE_FENCED",
				`epoch ${epoch} was superseded by epoch ${current} of its scope; nothing was written`,
				{ driver, operation: "raiseFence" },
			);
		const next = epoch ?? current + 1n;
		if (stored !== undefined && next === current) return current;
		const value = encodeFenceEpoch(next);
		const moved =
			stored === undefined
				? await store.insertIfNotExists(scope, FENCE_CCOLS, value, 0)
				: await store.compareAndSwap(scope, FENCE_CCOLS, stored, value, 0);
		if (moved) return next;
	}
}
