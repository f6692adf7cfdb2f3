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

/**
 * get coalesced the wrong way: a get of a key that another get is already reading takes that
 * read's answer, though the read may have started before a write that was answered before this
 * get was called (what grouped reads must not do: a waiting read goes in a later statement).
 */
class CoalescedGet extends Delegate {
	readonly #reading = new Map<string, Promise<Bytes | undefined>>();
	override get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		const key = `${pKey.length}:${Buffer.from(pKey).toString("hex")}${Buffer.from(cCols).toString("hex")}`;
		const running = this.#reading.get(key);
		if (running !== undefined) return running;
		// The answer comes back a moment after the read (a statement's way back to the client).
		const read = this.inner
			.get(pKey, cCols)
			.then(async (value) => {
				await pause();
				return value;
			})
			.finally(() => this.#reading.delete(key));
		this.#reading.set(key, read);
		return read;
	}
}

/** The broken drivers, by name. */
export const mutants: Readonly<
	Record<"racySwap" | "earlyAckPut" | "coalescedGet", (s: TTLStorage) => TTLStorage>
> = {
	racySwap: (s) => new RacySwap(s),
	earlyAckPut: (s) => new EarlyAckPut(s),
	coalescedGet: (s) => new CoalescedGet(s),
};
