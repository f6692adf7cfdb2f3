// Deliberately broken drivers: the check must find each of them non-linearizable.
import type { Bytes, TTLStorage, WriteOptions } from "@vvm/ttlstorage";
import { bytesEqual } from "@vvm/ttlstorage";
import { Delegate } from "./delegate.ts";

const pause = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 2));

/**
 * compareAndSwap as a read, a pause, and a put: two swaps of one value can both succeed. Only
 * unfenced swaps are broken, so that what the check finds is the race, not a fence.
 */
class RacySwap extends Delegate {
	override async compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		if (options?.fence !== undefined)
			return this.inner.compareAndSwap(pKey, cCols, oldValue, newValue, ttlSeconds, options);
		const current = await this.inner.get(pKey, cCols);
		await pause();
		if (current === undefined || !bytesEqual(current, oldValue)) return false;
		await this.inner.put(pKey, cCols, newValue, ttlSeconds, options);
		return true;
	}
}

/** put acknowledged before it is applied (unfenced puts only): a read after the answer can miss it. */
class EarlyAckPut extends Delegate {
	override async put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		if (options?.fence !== undefined)
			return this.inner.put(pKey, cCols, value, ttlSeconds, options);
		setTimeout(() => {
			this.inner.put(pKey, cCols, value, ttlSeconds, options).catch(() => {});
		}, 3);
	}
}

/** The broken drivers, by name. */
export const mutants: Readonly<Record<"racySwap" | "earlyAckPut", (s: TTLStorage) => TTLStorage>> =
	{
		racySwap: (s) => new RacySwap(s),
		earlyAckPut: (s) => new EarlyAckPut(s),
	};
