// The conformance suite must be able to fail: run its cases against deliberately broken storages
// and check that the cases that guard each broken property do fail.
import type { Clock } from "@vvm/clock";
import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual } from "@vvm/ttlstorage";
import { ttlStorageCases } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMemTTLStorage } from "../src/index.ts";

type Breaker = (inner: TTLStorage, clock: Clock) => Partial<TTLStorage>;

function broken(breaker: Breaker) {
	return ({ clock }: { clock: Clock }): TTLStorage => {
		const inner = createMemTTLStorage({ clock });
		const overrides = breaker(inner, clock);
		return new Proxy(inner, {
			get(target, prop, receiver) {
				if (prop in overrides) return (overrides as Record<PropertyKey, unknown>)[prop];
				const v = Reflect.get(target, prop, receiver);
				return typeof v === "function" ? v.bind(target) : v;
			},
		});
	};
}

async function failingCases(breaker: Breaker): Promise<string[]> {
	const failed: string[] = [];
	for (const c of ttlStorageCases({
		createStorage: broken(breaker),
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	})) {
		try {
			await c.run();
		} catch {
			failed.push(c.name);
		}
	}
	return failed;
}

describe("ttlStorageTestSuite catches broken drivers", () => {
	it("passes on the correct mem driver (control)", async () => {
		expect(await failingCases(() => ({}))).toEqual([]);
	});

	it("catches a putBatchIf that writes the items whose conditions hold and skips the rest", async () => {
		const failed = await failingCases((inner) => ({
			putBatchIf: async (items) => {
				let all = true;
				for (const item of items) {
					const live = await inner.get(item.pKey, item.cCols);
					const holds =
						item.expected === undefined ||
						(item.expected === null
							? live === undefined
							: live !== undefined && bytesEqual(live, item.expected));
					if (holds) await inner.put(item.pKey, item.cCols, item.value, item.ttlSeconds ?? 0);
					else all = false;
				}
				return all;
			},
		}));
		expect(failed).toContain("PutBatchIf: writes nothing when any condition fails");
	});

	it("catches a compare-and-swap that ignores the old value", async () => {
		const failed = await failingCases((inner) => ({
			compareAndSwap: async (p, c, _old, n, ttl) => {
				if ((await inner.get(p, c)) === undefined) return false;
				await inner.put(p, c, n, ttl);
				return true;
			},
		}));
		expect(failed).toContain("CompareAndSwap: does not swap when the value differs");
	});

	it("catches expiry that is off by one (alive at exactly expireAt)", async () => {
		// Checks expiry with the driver's clock 1 ms late, while writes keep exact expiry times.
		const failed = await failingCases((inner, clock) => {
			void inner;
			let lag = 0;
			const laggy = createMemTTLStorage({
				clock: {
					now: () => clock.now() - lag,
					monotonic: () => clock.monotonic(),
					setTimer: (d, f) => clock.setTimer(d, f),
					sleep: (d, s) => clock.sleep(d, s),
				},
			});
			const checking =
				<A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
				async (...a: A): Promise<R> => {
					lag = 1;
					try {
						return await fn(...a);
					} finally {
						lag = 0;
					}
				};
			return {
				insertIfNotExists: async (p, c, v, ttl) => {
					if ((await checking(laggy.get.bind(laggy))(p, c)) !== undefined) return false;
					await laggy.put(p, c, v, ttl);
					return true;
				},
				compareAndSwap: checking(laggy.compareAndSwap.bind(laggy)),
				compareAndDelete: checking(laggy.compareAndDelete.bind(laggy)),
				get: checking(laggy.get.bind(laggy)),
				put: laggy.put.bind(laggy),
				putBatch: laggy.putBatch.bind(laggy),
				read: (p, r) => {
					lag = 1;
					const it = laggy.read(p, r);
					return {
						async *[Symbol.asyncIterator]() {
							lag = 1;
							try {
								yield* it;
							} finally {
								lag = 0;
							}
						},
					};
				},
				queryTTL: checking(laggy.queryTTL.bind(laggy)),
				close: laggy.close.bind(laggy),
			};
		});
		expect(failed).toContain(
			"Expiry boundary: live 1 ms before expireAt, expired exactly at expireAt for every read and condition",
		);
	});

	it("catches a non-atomic insert (read, then write after a pause)", async () => {
		const failed = await failingCases((inner) => ({
			insertIfNotExists: async (p, c, v, ttl) => {
				if ((await inner.get(p, c)) !== undefined) return false;
				await new Promise((r) => setImmediate(r));
				await inner.put(p, c, v, ttl);
				return true;
			},
		}));
		expect(failed).toContain(
			"Concurrency: 20 concurrent InsertIfNotExists on one key, exactly one wins",
		);
	});

	it("catches a compare-and-delete that deletes any value", async () => {
		const failed = await failingCases((inner) => ({
			compareAndDelete: async (p, c) => {
				if ((await inner.get(p, c)) === undefined) return false;
				await inner.put(p, c, new Uint8Array(), 1);
				return true;
			},
		}));
		expect(failed).toContain("CompareAndDelete: does not delete when the value differs");
	});

	it("catches a get that ignores TTL", async () => {
		const failed = await failingCases((inner, clock) => {
			const raw = new Map<string, Bytes>();
			const key = (p: Bytes, c: Bytes) => `${[...p]}|${[...c]}`;
			void clock;
			return {
				put: async (p, c, v, ttl) => {
					raw.set(key(p, c), v);
					return inner.put(p, c, v, ttl);
				},
				insertIfNotExists: async (p, c, v, ttl) => {
					const ok = await inner.insertIfNotExists(p, c, v, ttl);
					if (ok) raw.set(key(p, c), v);
					return ok;
				},
				get: async (p, c) => (await inner.get(p, c)) ?? raw.get(key(p, c)),
			};
		});
		expect(failed).toContain(
			"Get: returns live records, not expired ones, and records put without TTL",
		);
	});

	it("catches an inclusive range end", async () => {
		const failed = await failingCases((inner) => ({
			read: (p, range = {}) => {
				const to = range.to;
				return {
					async *[Symbol.asyncIterator]() {
						for await (const r of inner.read(
							p,
							range.from === undefined ? {} : { from: range.from },
						)) {
							if (to === undefined || bytesEqual(r.cCols, to) || Buffer.compare(r.cCols, to) < 0)
								yield r;
						}
					},
				};
			},
		}));
		expect(failed).toContain(
			"Range: from inclusive, to exclusive, ordered by bytes, one partition only",
		);
	});

	it("catches a TTL of 0 treated as immediate expiry", async () => {
		const failed = await failingCases((inner) => ({
			insertIfNotExists: (p, c, v, ttl) => inner.insertIfNotExists(p, c, v, ttl === 0 ? 1 : ttl),
		}));
		expect(failed).toContain("InsertIfNotExists: ttl 0 keeps the record forever");
	});

	it("catches writes that ignore their fence", async () => {
		const failed = await failingCases((inner) => ({
			put: (p, c, v, ttl) => inner.put(p, c, v, ttl),
			putBatch: (items) => inner.putBatch(items.map(({ fence: _, ...item }) => item)),
		}));
		expect(failed).toContain(
			"Fencing: a write under a superseded epoch never replaces what a newer epoch wrote",
		);
		expect(failed).toContain(
			"Fencing (epoch): a superseded epoch writes nothing anywhere in its scope",
		);
	});

	it("catches a raiseFence that lowers the epoch", async () => {
		const failed = await failingCases((inner) => ({
			raiseFence: async (scope, epoch) => {
				await inner.put(scope, new Uint8Array(0), new Uint8Array(8));
				return inner.raiseFence?.(scope, epoch) ?? 0n;
			},
		}));
		expect(failed).toContain(
			"Fencing: raiseFence raises, refuses a lower epoch, and counts on without one",
		);
	});

	it("catches operations that still work after close", async () => {
		const failed = await failingCases(() => ({ close: async () => {} }));
		expect(failed).toContain(
			"Close: every operation rejects with TTLSTORAGE_CLOSED, close is idempotent",
		);
	});
});
