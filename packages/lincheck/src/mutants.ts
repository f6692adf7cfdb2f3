// Deliberately broken drivers: the check must find each of them non-linearizable.
import type { Bytes, TTLStorage, WriteOptions } from "@vvm/ttlstorage";
import { bytesEqual, TTLStorageError } from "@vvm/ttlstorage";
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

/**
 * A write answered "nothing was written" that is applied later: every 7th `put` answers
 * `TTLSTORAGE_UNAVAILABLE` at once and is held, and `release()` (called by `afterWindow`, as the
 * proxy's `stopFaults()` delivers its holds) applies the held ones. The DynamoDB bug of issue 32
 * as a held request shows it. Found only by a read after the window's late deliveries: the
 * release comes after every client's last operation (found by review: 20 of 20 windows passed
 * before the window's final reads).
 */
export class HeldWritesLie extends Delegate {
	#n = 0;
	readonly #held: Array<() => Promise<unknown>> = [];
	/** Puts answered UNAVAILABLE and held so far. */
	lies = 0;

	/** Applies the held puts, in order. */
	async release(): Promise<void> {
		for (const run of this.#held.splice(0)) await run().catch(() => {});
	}

	override async put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		if (++this.#n % 7 !== 0) return this.inner.put(pKey, cCols, value, ttlSeconds, options);
		this.lies++;
		this.#held.push(() => this.inner.put(pKey, cCols, value, ttlSeconds, options));
		throw new TTLStorageError("TTLSTORAGE_UNAVAILABLE", "held (mutant)", {
			driver: "mutant",
			operation: "put",
		});
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
