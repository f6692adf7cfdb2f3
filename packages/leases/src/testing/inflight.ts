import type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";

/**
 * A storage that knows how many of its calls are in flight.
 *
 * @example
 * ```ts
 * const tracked: TrackedTTLStorage = trackInflight(storage);
 * if (tracked.pending > 0) await tracked.idle();
 * ```
 */
export interface TrackedTTLStorage extends TTLStorage {
	readonly pending: number;
	/** Resolves once no call is in flight. */
	idle(): Promise<void>;
}

/**
 * Wraps a storage to count calls in flight, so a test on a mock clock can wait for background
 * work (renewals, polls) that is waiting on real I/O before it moves time again.
 *
 * @example
 * ```ts
 * const tracked = trackInflight(storage);
 * clock.advance(1000);
 * await tracked.idle();
 * ```
 */
export function trackInflight(storage: TTLStorage): TrackedTTLStorage {
	let pending = 0;
	let waiters: Array<() => void> = [];
	const done = (): void => {
		pending--;
		if (pending === 0) {
			const w = waiters;
			waiters = [];
			for (const f of w) f();
		}
	};
	const track = <T>(p: () => Promise<T>): Promise<T> => {
		pending++;
		let promise: Promise<T>;
		try {
			promise = p();
		} catch (error) {
			done();
			throw error;
		}
		return promise.finally(done);
	};
	return {
		insertIfNotExists: (p: Bytes, c: Bytes, v: Bytes, t: number) =>
			track(() => storage.insertIfNotExists(p, c, v, t)),
		compareAndSwap: (p: Bytes, c: Bytes, o: Bytes, n: Bytes, t: number) =>
			track(() => storage.compareAndSwap(p, c, o, n, t)),
		compareAndDelete: (p: Bytes, c: Bytes, v: Bytes) =>
			track(() => storage.compareAndDelete(p, c, v)),
		get: (p: Bytes, c: Bytes) => track(() => storage.get(p, c)),
		put: (p: Bytes, c: Bytes, v: Bytes, t?: number) => track(() => storage.put(p, c, v, t)),
		putBatch: (items: readonly BatchItem[]) => track(() => storage.putBatch(items)),
		read(p: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
			return {
				async *[Symbol.asyncIterator]() {
					const all = await track(async () => {
						const out: StoredRecord[] = [];
						for await (const r of storage.read(p, range)) out.push(r);
						return out;
					});
					yield* all;
				},
			};
		},
		queryTTL: (p: Bytes, c: Bytes) => track(() => storage.queryTTL(p, c)),
		close: () => storage.close(),
		[Symbol.asyncDispose]: () => storage.close(),
		get pending() {
			return pending;
		},
		idle(): Promise<void> {
			if (pending === 0) return Promise.resolve();
			return new Promise((resolve) => waiters.push(resolve));
		},
	};
}
