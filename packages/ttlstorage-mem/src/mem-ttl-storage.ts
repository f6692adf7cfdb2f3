import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteFence,
	WriteOptions,
} from "@vvm/ttlstorage";
import {
	bytesEqual,
	closedError,
	compareBytes,
	decodeFenceEpoch,
	encodeFenceEpoch,
	expireAtMs,
	FENCE_CCOLS,
	fencedError,
	inRange,
	isExpired,
	remainingSeconds,
	validateBatch,
	validateConditionalBatch,
	validateDeleteArgs,
	validateFenceEpoch,
	validateFenceScope,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateWriteOptions,
} from "@vvm/ttlstorage";

const DRIVER_NAME = "mem";

/** Options of {@link createMemTTLStorage}. */
export interface MemTTLStorageOptions {
	/** Clock for expiry; default the system clock. Tests pass a `MockClock`. */
	readonly clock?: Clock;
	/**
	 * Expired records are removed physically after this many writes (amortised sweep), so memory
	 * stays bounded by the live records. Default 1024.
	 */
	readonly sweepEveryWrites?: number;
	/**
	 * How fenced writes are honoured: `"epoch"` (default) refuses every write under an epoch below
	 * its scope's raised one, as `@vvm/ttlstorage-level` does; `"ordered"` behaves like the
	 * DynamoDB and Cassandra drivers (per record, a write under a lower epoch never replaces one
	 * under a higher epoch, and is otherwise written), so tests can run against the weaker guarantee.
	 */
	readonly fencing?: "epoch" | "ordered";
}

interface Entry {
	value: Bytes;
	expireAt: number;
	/** "ordered" fencing: the epoch and the per-process write number the record was written under. */
	order?: readonly [epoch: bigint, stamp: number];
}

/** `a` is newer than `b` in (epoch, stamp) order. */
const newer = (a: readonly [bigint, number], b: readonly [bigint, number]): boolean =>
	a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);

// Byte strings as map keys: latin1 keeps one char per byte, so the mapping is exact and cheap.
const keyOf = (b: Bytes): string =>
	Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
const copy = (b: Bytes): Bytes => Uint8Array.from(b);

class MemTTLStorageImpl implements TTLStorage {
	/**
	 * Wall time, as the drivers it stands in for in tests (DynamoDB, level) compare expiries with
	 * the wall clock; tests that share one instance between simulated hosts give it one clock.
	 */
	readonly #clock: Clock;
	readonly #sweepEvery: number;
	readonly #partitions = new Map<string, Map<string, Entry & { cCols: Bytes }>>();
	readonly supports: TTLStorageSupports;
	/**
	 * All or nothing in one synchronous step; `"epoch"` fencing only (under `"ordered"` a
	 * superseded item would be dropped and the rest written).
	 */
	readonly putBatchIf?: (items: readonly ConditionalBatchItem[]) => Promise<boolean>;
	#writes = 0;
	/** "ordered" fencing: the number of the next fenced write (F2: later calls win). */
	#stamp = 0;
	#closed = false;

	constructor(options: MemTTLStorageOptions) {
		this.#clock = options.clock ?? systemClock;
		this.#sweepEvery = options.sweepEveryWrites ?? 1024;
		const fencing = options.fencing ?? "epoch";
		if (fencing !== "epoch" && fencing !== "ordered")
			throw new RangeError(
				`[@vvm/ttlstorage-mem] fencing must be "epoch" or "ordered", got ${String(fencing)}`,
			);
		// Ordered fencing drops a superseded item and writes the rest: not all or nothing.
		this.supports = Object.freeze({ atomicBatches: fencing === "epoch", fencing });
		if (fencing === "epoch") this.putBatchIf = (items) => this.#putBatchIf(items);
		if (!Number.isInteger(this.#sweepEvery) || this.#sweepEvery < 1) {
			throw new RangeError(
				`[@vvm/ttlstorage-mem] sweepEveryWrites must be a positive integer, got ${this.#sweepEvery}`,
			);
		}
	}

	/** Live entry or undefined; an expired entry is removed on sight. */
	#live(pKey: Bytes, cCols: Bytes): Entry | undefined {
		const part = this.#partitions.get(keyOf(pKey));
		const ck = keyOf(cCols);
		const entry = part?.get(ck);
		if (entry === undefined) return undefined;
		if (isExpired(entry.expireAt, this.#clock.now())) {
			part?.delete(ck);
			if (part?.size === 0) this.#partitions.delete(keyOf(pKey));
			return undefined;
		}
		return entry;
	}

	#write(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		order?: readonly [bigint, number],
	): void {
		const pk = keyOf(pKey);
		let part = this.#partitions.get(pk);
		if (part === undefined) {
			part = new Map();
			this.#partitions.set(pk, part);
		}
		part.set(keyOf(cCols), {
			cCols: copy(cCols),
			value: copy(value),
			expireAt: expireAtMs(this.#clock.now(), ttlSeconds),
			...(order === undefined ? {} : { order }),
		});
		if (++this.#writes % this.#sweepEvery === 0) this.sweep();
	}

	// --- fencing ---------------------------------------------------------------------------------

	/** The epoch raised for `scope` (0n before any raise). */
	#epochOf(scope: Bytes): bigint {
		const stored = this.#live(scope, FENCE_CCOLS);
		return stored === undefined ? 0n : decodeFenceEpoch(stored.value, DRIVER_NAME);
	}

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		this.#open("raiseFence");
		const current = this.#epochOf(scope);
		if (epoch !== undefined && epoch < current)
			throw fencedError(DRIVER_NAME, "raiseFence", epoch, current);
		const next = epoch ?? current + 1n;
		this.#write(scope, FENCE_CCOLS, encodeFenceEpoch(next), 0);
		return next;
	}

	/**
	 * What a fenced write may do. "epoch": refused (throws) under a superseded epoch. "ordered":
	 * the (epoch, stamp) to store, and whether the live record at the key is newer (then a plain
	 * write is shadowed: skipped without an error).
	 */
	#fence(fence: WriteFence | undefined, operation: string): readonly [bigint, number] | undefined {
		if (fence === undefined) return undefined;
		if (this.supports.fencing === "epoch") {
			const current = this.#epochOf(fence.scope);
			if (fence.epoch < current) throw fencedError(DRIVER_NAME, operation, fence.epoch, current);
			return undefined;
		}
		return [fence.epoch, ++this.#stamp];
	}

	/** "ordered": whether a write under `order` is superseded by the live record at the key. */
	#shadowed(live: Entry | undefined, order: readonly [bigint, number] | undefined): boolean {
		return order !== undefined && live?.order !== undefined && newer(live.order, order);
	}

	#delete(pKey: Bytes, cCols: Bytes): void {
		const pk = keyOf(pKey);
		const part = this.#partitions.get(pk);
		part?.delete(keyOf(cCols));
		if (part?.size === 0) this.#partitions.delete(pk);
	}

	#open(operation: string): void {
		if (this.#closed) throw closedError(DRIVER_NAME, operation);
	}

	/** Removes every expired record now; returns how many. */
	sweep(): number {
		const now = this.#clock.now();
		let removed = 0;
		for (const [pk, part] of this.#partitions) {
			for (const [ck, entry] of part) {
				if (isExpired(entry.expireAt, now)) {
					part.delete(ck);
					removed++;
				}
			}
			if (part.size === 0) this.#partitions.delete(pk);
		}
		return removed;
	}

	/** Number of records held in memory, expired ones not yet swept included. */
	get size(): number {
		let n = 0;
		for (const part of this.#partitions.values()) n += part.size;
		return n;
	}

	// Every method is synchronous inside, so each conditional write is atomic; `async` turns
	// validation errors into rejections only after they were thrown before any state change.
	async insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		this.#open("insertIfNotExists");
		const order = this.#fence(options?.fence, "insertIfNotExists");
		if (this.#live(pKey, cCols) !== undefined) return false;
		this.#write(pKey, cCols, value, ttlSeconds, order);
		return true;
	}

	async compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateSwapArgs(pKey, cCols, oldValue, newValue, ttlSeconds);
		validateWriteOptions(options);
		this.#open("compareAndSwap");
		const order = this.#fence(options?.fence, "compareAndSwap");
		const entry = this.#live(pKey, cCols);
		if (entry === undefined || !bytesEqual(entry.value, oldValue)) return false;
		if (this.#shadowed(entry, order)) return false;
		this.#write(pKey, cCols, newValue, ttlSeconds, order);
		return true;
	}

	async compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
		validateWriteOptions(options);
		this.#open("compareAndDelete");
		const order = this.#fence(options?.fence, "compareAndDelete");
		const entry = this.#live(pKey, cCols);
		if (entry === undefined || !bytesEqual(entry.value, expectedValue)) return false;
		if (this.#shadowed(entry, order)) return false;
		this.#delete(pKey, cCols);
		return true;
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		this.#open("get");
		const entry = this.#live(pKey, cCols);
		return entry === undefined ? undefined : copy(entry.value);
	}

	async put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		this.#open("put");
		const order = this.#fence(options?.fence, "put");
		if (this.#shadowed(this.#live(pKey, cCols), order)) return;
		this.#write(pKey, cCols, value, ttlSeconds, order);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		// All fences first: under "epoch", one superseded item refuses the whole batch.
		const orders = items.map((item) => this.#fence(item.fence, "putBatch"));
		items.forEach((item, i) => {
			const order = orders[i];
			if (this.#shadowed(this.#live(item.pKey, item.cCols), order)) return;
			this.#write(item.pKey, item.cCols, item.value, item.ttlSeconds ?? 0, order);
		});
	}

	async #putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean> {
		validateConditionalBatch(items);
		this.#open("putBatchIf");
		for (const item of items) this.#fence(item.fence, "putBatchIf");
		for (const { pKey, cCols, expected } of items) {
			if (expected === undefined) continue;
			const live = this.#live(pKey, cCols);
			if (expected === null ? live !== undefined : !live || !bytesEqual(live.value, expected))
				return false;
		}
		for (const item of items) this.#write(item.pKey, item.cCols, item.value, item.ttlSeconds ?? 0);
		return true;
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, new Uint8Array());
		validateRange(range.from, range.to);
		const self = this;
		return {
			async *[Symbol.asyncIterator]() {
				self.#open("read");
				// Snapshot first: the caller may write while iterating.
				const part = self.#partitions.get(keyOf(pKey));
				const now = self.#clock.now();
				const records = [...(part?.values() ?? [])]
					.filter((e) => !isExpired(e.expireAt, now) && inRange(e.cCols, range.from, range.to))
					.sort((a, b) => compareBytes(a.cCols, b.cCols))
					.map((e) => ({ cCols: copy(e.cCols), value: copy(e.value) }));
				yield* records;
			},
		};
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		this.#open("queryTTL");
		const entry = this.#live(pKey, cCols);
		return entry === undefined ? undefined : remainingSeconds(entry.expireAt, this.#clock.now());
	}

	async close(): Promise<void> {
		this.#closed = true;
		this.#partitions.clear();
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/** The in-memory driver with its maintenance extras. */
export interface MemTTLStorage extends TTLStorage {
	/** Removes every expired record now; returns how many were removed. */
	sweep(): number;
	/** Records held in memory, expired ones not yet swept included. */
	readonly size: number;
}

/**
 * Creates the in-memory TTL storage: conditional writes are atomic because each runs synchronously
 * on the event loop; expiry uses the injected clock (`now >= expireAt`), and expired records are
 * removed on access and by an amortised sweep, so memory does not grow with dead records.
 * `putBatch` is atomic (`supports.atomicBatches`, but for a fenced batch under `"ordered"`
 * fencing, which drops superseded items); fenced writes are checked in the same
 * synchronous step (`supports.fencing`, `"epoch"` by default).
 *
 * @example
 * ```ts
 * import { MockClock } from "@vvm/clock";
 * import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
 * const clock = new MockClock();
 * const storage = createMemTTLStorage({ clock });
 * await storage.insertIfNotExists(pKey, cCols, value, 20);
 * ```
 */
export function createMemTTLStorage(options: MemTTLStorageOptions = {}): MemTTLStorage {
	return new MemTTLStorageImpl(options);
}
