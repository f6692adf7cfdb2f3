// A minimal in-test TTLStorage on an injected clock (voedger's impl_mockstorage.go role), so this
// package tests itself without depending on a driver package that depends on it.
import type { Clock } from "@vvm/clock";
import type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import {
	bytesEqual,
	closedError,
	compareBytes,
	expireAtMs,
	inRange,
	isExpired,
	remainingSeconds,
	validateBatch,
	validateKey,
	validateTTL,
	validateValue,
} from "@vvm/ttlstorage";

interface Entry {
	readonly pKey: Bytes;
	readonly cCols: Bytes;
	readonly value: Bytes;
	readonly expireAt: number;
}

const id = (p: Bytes, c: Bytes): string => `${[...p].join(",")}|${[...c].join(",")}`;

export function createMiniTTLStorage(clock: Clock): TTLStorage {
	const entries = new Map<string, Entry>();
	let closed = false;
	const live = (p: Bytes, c: Bytes): Entry | undefined => {
		const e = entries.get(id(p, c));
		return e === undefined || isExpired(e.expireAt, clock.now()) ? undefined : e;
	};
	const write = (p: Bytes, c: Bytes, v: Bytes, ttl: number): void => {
		entries.set(id(p, c), {
			pKey: Uint8Array.from(p),
			cCols: Uint8Array.from(c),
			value: Uint8Array.from(v),
			expireAt: expireAtMs(clock.now(), ttl),
		});
	};
	const open = (op: string): void => {
		if (closed) throw closedError("mini", op);
	};
	const storage: TTLStorage = {
		async insertIfNotExists(p, c, v, ttl) {
			validateKey(p, c);
			validateValue(v);
			validateTTL(ttl);
			open("insertIfNotExists");
			if (live(p, c) !== undefined) return false;
			write(p, c, v, ttl);
			return true;
		},
		async compareAndSwap(p, c, o, n, ttl) {
			validateKey(p, c);
			validateValue(o, "oldValue");
			validateValue(n, "newValue");
			validateTTL(ttl);
			open("compareAndSwap");
			const e = live(p, c);
			if (e === undefined || !bytesEqual(e.value, o)) return false;
			write(p, c, n, ttl);
			return true;
		},
		async compareAndDelete(p, c, v) {
			validateKey(p, c);
			validateValue(v);
			open("compareAndDelete");
			const e = live(p, c);
			if (e === undefined || !bytesEqual(e.value, v)) return false;
			entries.delete(id(p, c));
			return true;
		},
		async get(p, c) {
			validateKey(p, c);
			open("get");
			const e = live(p, c);
			return e === undefined ? undefined : Uint8Array.from(e.value);
		},
		async put(p, c, v, ttl = 0) {
			validateKey(p, c);
			validateValue(v);
			validateTTL(ttl);
			open("put");
			write(p, c, v, ttl);
		},
		async putBatch(items: readonly BatchItem[]) {
			validateBatch(items);
			open("putBatch");
			for (const i of items) write(i.pKey, i.cCols, i.value, i.ttlSeconds ?? 0);
		},
		read(p: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
			return {
				async *[Symbol.asyncIterator]() {
					open("read");
					const out = [...entries.values()]
						.filter(
							(e) =>
								bytesEqual(e.pKey, p) &&
								!isExpired(e.expireAt, clock.now()) &&
								inRange(e.cCols, range.from, range.to),
						)
						.sort((a, b) => compareBytes(a.cCols, b.cCols));
					for (const e of out) yield { cCols: e.cCols, value: e.value };
				},
			};
		},
		async queryTTL(p, c) {
			validateKey(p, c);
			open("queryTTL");
			const e = live(p, c);
			return e === undefined ? undefined : remainingSeconds(e.expireAt, clock.now());
		},
		async close() {
			closed = true;
		},
		[Symbol.asyncDispose]: () => storage.close(),
	};
	return storage;
}
