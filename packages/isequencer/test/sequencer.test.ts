// Ports of voedger pkg/isequencer isequencer_test.go (public API), reference §6.7, with the names
// of LongRecovery and MultipleActualizes as the design (seed 004) defines them.
import { describe, expect, it } from "vitest";
import { createSequencer, ErrUnknownSeqID, SequencerError } from "../src/index.ts";
import { gate, MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";
import { describeEachCache, setup } from "./helpers/setup.ts";

const code = (fn: () => unknown): string | undefined => {
	try {
		fn();
	} catch (e) {
		return SequencerError.is(e) ? e.code : `not a SequencerError: ${String(e)}`;
	}
	return undefined;
};

async function flushed(s: {
	storage: MockSeqStorage;
	seq: { stats(): { unflushedValues: number } };
}) {
	for (let i = 0; i < 100 && s.seq.stats().unflushedValues > 0; i++) await settle(1);
	expect(s.seq.stats().unflushedValues).toBe(0);
}

function plogWith(values: Array<[offset: number, wsid: number, seqId: number, n: number]>) {
	const storage = new MockSeqStorage();
	for (const [o, ws, seq, n] of values) storage.addPLogEntry(o, ws, seq, n);
	return storage;
}

describeEachCache(() => {
	describe("ComplexEvents", () => {
		const seqIds = [1, 2, 3, 4, 5, 6, 7, 8];
		const wsids = [1, 2, 3, 4, 5];
		const seqTypes = { 1: Object.fromEntries(seqIds.map((s) => [s, 1])) };
		const cases: Array<{
			name: string;
			plog: Record<number, Array<[number, number, number]>>;
			offset: number;
			expected: Record<number, Record<number, number>>;
		}> = [
			{ name: "empty plog", plog: {}, offset: 1, expected: {} },
			{ name: "1 simple event no CUDs", plog: { 1: [] }, offset: 2, expected: {} },
			{
				name: "1 simple event 1 CUD",
				plog: { 1: [[1, 1, 1]] },
				offset: 2,
				expected: { 1: { 1: 2 } },
			},
			{
				name: "few events",
				plog: {
					1: [
						[1, 1, 10],
						[1, 2, 11],
						[2, 3, 12],
						[2, 4, 13],
					],
					2: [],
					3: [
						[3, 5, 14],
						[3, 6, 15],
						[4, 7, 16],
						[4, 8, 17],
					],
				},
				offset: 4,
				expected: {
					1: { 1: 11, 2: 12 },
					2: { 3: 13, 4: 14 },
					3: { 5: 15, 6: 16 },
					4: { 7: 17, 8: 18 },
				},
			},
		];
		for (const c of cases) {
			it(c.name, async () => {
				const storage = new MockSeqStorage();
				for (const [o, vals] of Object.entries(c.plog))
					storage.addPLogEvent(
						Number(o),
						vals.map(([wsid, seqId, value]) => ({ wsid, seqId, value })),
					);
				const { seq } = setup({ seqTypes }, storage);
				let offset = c.offset;
				for (const ws of wsids) {
					const expected = (s: number) => c.expected[ws]?.[s] ?? 1;
					// 1: flushed transaction
					expect(await waitForStart(seq, 1, ws)).toBe(offset);
					for (const s of seqIds) expect(await seq.next(s)).toBe(expected(s));
					seq.flush();
					storage.addPLogEvent(
						offset,
						seqIds.map((s) => ({ wsid: ws, seqId: s, value: expected(s) })),
					);
					// 2: actualized transaction
					expect(await waitForStart(seq, 1, ws)).toBe(offset + 1);
					for (const s of seqIds) expect(await seq.next(s)).toBe(expected(s) + 1);
					seq.actualize();
					// 3: the same offset and numbers again, flushed
					expect(await waitForStart(seq, 1, ws)).toBe(offset + 1);
					for (const s of seqIds) expect(await seq.next(s)).toBe(expected(s) + 1);
					seq.flush();
					storage.addPLogEvent(
						offset + 1,
						seqIds.map((s) => ({ wsid: ws, seqId: s, value: expected(s) + 1 })),
					);
					offset += 2;
				}
			});
		}
	});

	describe("Start", () => {
		it("rejects on too many unflushed values and allows after the flush", async () => {
			const seqTypes = { 1: { 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1 } };
			const storage = new MockSeqStorage();
			const g = gate();
			const { seq } = setup({ seqTypes, maxNumUnflushedValues: 5 }, storage);
			expect(await waitForStart(seq, 1, 1)).toBe(1);
			storage.onWrite = g.enter;
			for (let s = 1; s <= 6; s++) expect(await seq.next(s)).toBe(1);
			seq.flush();
			await g.entered;
			expect(seq.start(1, 1)).toBeUndefined();
			g.open();
			expect(await waitForStart(seq, 1, 1)).toBe(2);
		});

		it("throws after cleanup", async () => {
			const { seq, cleanup } = setup();
			await waitForStart(seq, 1, 1);
			seq.flush();
			await cleanup();
			expect(code(() => seq.start(1, 1))).toBe("SEQUENCER_CLEANED_UP");
		});

		it("throws when a transaction is already started", async () => {
			const { seq } = setup();
			await waitForStart(seq, 1, 1);
			expect(code(() => seq.start(1, 1))).toBe("SEQUENCER_MISUSE");
		});

		it("is not ok while actualization is in progress", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			const g = gate();
			storage.onActualize = g.enter;
			seq.actualize();
			await g.entered;
			expect(seq.start(1, 1)).toBeUndefined();
			expect(seq.stats().actualizing).toBe(true);
			g.open();
			expect(await waitForStart(seq, 1, 1)).toBe(1);
		});

		it("throws on an unknown wsKind", async () => {
			const { seq } = setup();
			await waitForStart(seq, 1, 1);
			seq.flush();
			expect(code(() => seq.start(2, 1))).toBe("SEQUENCER_UNKNOWN_WS_KIND");
		});

		it("throws a RangeError on a wsid that is not a safe integer", async () => {
			const { seq } = setup();
			await waitForStart(seq, 1, 1);
			seq.flush();
			expect(() => seq.start(1, 2 ** 53)).toThrow(RangeError);
			expect(() => seq.start(1, 1.5)).toThrow(RangeError);
		});

		it("starts successfully after the flush completes", async () => {
			const { seq } = setup({ maxNumUnflushedValues: 5 }, plogWith([[1, 1, 1, 100]]));
			expect(await waitForStart(seq, 1, 1)).toBe(2);
			expect(await seq.next(1)).toBe(101);
			expect(seq.next(1)).toBe(102);
			expect(seq.next(1)).toBe(103);
			seq.flush();
			expect(await waitForStart(seq, 1, 1)).toBe(3);
			expect(seq.next(1)).toBe(104);
		});

		it("returns the next offset after a flush without next, and persists it", async () => {
			const s = setup({}, plogWith([[1, 1, 1, 100]]));
			expect(await waitForStart(s.seq, 1, 1)).toBe(2);
			s.seq.flush();
			expect(await waitForStart(s.seq, 1, 1)).toBe(3);
			s.seq.flush();
			for (let i = 0; i < 50 && s.storage.nextOffset !== 4; i++) await settle(1);
			expect(s.storage.nextOffset).toBe(4);
		});

		it("cleanup resolves only after storage reads in flight have ended", async () => {
			const storage = new MockSeqStorage();
			const { seq, cleanup } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			seq.flush();
			const g = gate();
			storage.onReadNumbers = g.enter;
			await waitForStart(seq, 1, 2); // its prefetch is now inside readNumbers
			await g.entered;
			let cleaned = false;
			const done = cleanup().then(() => {
				cleaned = true;
			});
			await settle(5);
			expect(cleaned).toBe(false);
			g.open();
			await done;
			expect(cleaned).toBe(true);
		});

		it("cleanup can be called many times", async () => {
			const { seq, cleanup } = setup();
			await waitForStart(seq, 1, 1);
			const p = cleanup();
			expect(cleanup()).toBe(p);
			await p;
			await expect(cleanup()).resolves.toBeUndefined();
		});
	});

	describe("Flush", () => {
		it("increments sequence values after flush", async () => {
			const { seq, clock } = setup(
				{ seqTypes: { 1: { 1: 1, 2: 1 } } },
				plogWith([
					[1, 1, 1, 100],
					[1, 1, 2, 200],
				]),
			);
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(101);
			expect(seq.next(2)).toBe(201);
			seq.flush();
			clock.advance(1000);
			await waitForStart(seq, 1, 1);
			expect(seq.next(1)).toBe(102);
			expect(seq.next(2)).toBe(202);
		});

		it("throws on wrong usage", async () => {
			const { seq, cleanup } = setup();
			await settle();
			expect(code(() => seq.flush())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.flush();
			expect(code(() => seq.flush())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.actualize();
			expect(code(() => seq.flush())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			await cleanup();
			expect(code(() => seq.flush())).toBe("SEQUENCER_CLEANED_UP");
		});

		it("throws while a next() is still reading storage", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			const g = gate();
			seq.flush();
			storage.onReadNumbers = g.enter;
			await waitForStart(seq, 1, 2);
			const n = seq.next(1);
			expect(n).toBeInstanceOf(Promise);
			expect(code(() => seq.flush())).toBe("SEQUENCER_MISUSE");
			g.open();
			expect(await n).toBe(1);
			seq.flush();
		});

		it("persists values to storage after the flush completes", async () => {
			const s = setup({}, plogWith([[1, 1, 1, 100]]));
			const offset = await waitForStart(s.seq, 1, 1);
			expect(await s.seq.next(1)).toBe(101);
			s.seq.flush();
			await flushed(s);
			expect(s.storage.getNumber(1, 1)).toBe(101);
			// The stored offset is the NEXT one: the event at `offset` is already reflected.
			expect(s.storage.nextOffset).toBe((offset as number) + 1);
		});
	});

	describe("Next", () => {
		it("returns incremented sequence numbers", async () => {
			const { seq } = setup({}, plogWith([[1, 1, 1, 100]]));
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(101);
			expect(seq.next(1)).toBe(102);
		});

		it("uses the initial value when the number is neither in storage nor in the PLog", async () => {
			const { seq } = setup({ seqTypes: { 1: { 1: 50 } } });
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(50);
		});

		it("continues from the number found in the PLog", async () => {
			const { seq } = setup({}, plogWith([[1, 1, 1, 50]]));
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(51);
		});

		it("continues from the number found in storage", async () => {
			const storage = new MockSeqStorage();
			storage.setNumber(1, 1, 70);
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(71);
		});

		it("throws on wrong usage", async () => {
			const { seq, cleanup } = setup();
			await settle();
			expect(code(() => seq.next(1))).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.flush();
			expect(code(() => seq.next(1))).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.actualize();
			expect(code(() => seq.next(1))).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			await cleanup();
			expect(code(() => seq.next(1))).toBe("SEQUENCER_CLEANED_UP");
		});

		it("handles multiple sequence types", async () => {
			const { seq } = setup(
				{ seqTypes: { 1: { 1: 1, 2: 1 } } },
				plogWith([
					[1, 1, 1, 100],
					[1, 1, 2, 200],
				]),
			);
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(101);
			expect(seq.next(2)).toBe(201);
			expect(seq.next(1)).toBe(102);
		});

		it("maintains the sequence across transactions", async () => {
			const { seq } = setup({}, plogWith([[1, 1, 1, 300]]));
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(301);
			seq.flush();
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(302);
		});

		it("handles cache eviction", async () => {
			const { seq } = setup({ lruCacheSize: 1 }, plogWith([[1, 1, 1, 400]]));
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(401);
			seq.flush();
			await waitForStart(seq, 1, 2);
			expect(await seq.next(1)).toBe(1);
			seq.flush();
			await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(402);
		});

		it("throws ErrUnknownSeqID for an unknown sequence", async () => {
			const { seq } = setup({ seqTypes: { 1: { 1: 1 }, 2: { 2: 1 } } });
			await waitForStart(seq, 1, 1);
			expect(code(() => seq.next(10))).toBe(ErrUnknownSeqID);
			// Sequence 2 exists, but not for wsKind 1.
			expect(code(() => seq.next(2))).toBe(ErrUnknownSeqID);
			expect(code(() => seq.next(1.5))).toBe(ErrUnknownSeqID);
			expect(await seq.next(1)).toBe(1);
		});

		it("is synchronous when the workspace is cached and reads all its numbers at once on a miss", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({ seqTypes: { 1: { 1: 1, 2: 10, 3: 100 } } }, storage);
			await waitForStart(seq, 1, 7);
			const first = seq.next(2);
			expect(first).toBeInstanceOf(Promise);
			expect(await first).toBe(10);
			expect(seq.next(1)).toBe(1);
			expect(seq.next(3)).toBe(100);
			expect(storage.calls.readNumbers).toBe(1);
			seq.flush();
			await waitForStart(seq, 1, 7);
			expect(seq.next(2)).toBe(11);
			expect(storage.calls.readNumbers).toBe(1);
		});
	});

	describe("Actualize", () => {
		it("throws on wrong usage", async () => {
			const { seq, cleanup } = setup();
			await settle();
			expect(code(() => seq.actualize())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.actualize();
			expect(code(() => seq.actualize())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			seq.flush();
			expect(code(() => seq.actualize())).toBe("SEQUENCER_MISUSE");
			await waitForStart(seq, 1, 1);
			await cleanup();
			expect(code(() => seq.actualize())).toBe("SEQUENCER_CLEANED_UP");
		});

		it("basic usage", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			expect(await waitForStart(seq, 1, 1)).toBe(1);
			expect(await seq.next(1)).toBe(1);
			seq.flush();
			storage.addPLogEntry(1, 1, 1, 1);
			expect(await waitForStart(seq, 1, 1)).toBe(2);
			expect(seq.next(1)).toBe(2);
			seq.actualize();
			expect(await waitForStart(seq, 1, 1)).toBe(2);
			expect(await seq.next(1)).toBe(2);
		});

		it("empty plog", async () => {
			const { seq } = setup();
			const offset = await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(1);
			seq.actualize();
			expect(await waitForStart(seq, 1, 1)).toBe(offset);
			expect(await seq.next(1)).toBe(1);
			expect(seq.next(1)).toBe(2);
		});

		it("filled plog", async () => {
			const { seq } = setup(
				{ seqTypes: { 1: { 1: 1, 2: 1 } } },
				plogWith([
					[1, 1, 1, 100],
					[1, 1, 2, 200],
				]),
			);
			const offset = await waitForStart(seq, 1, 1);
			expect(await seq.next(1)).toBe(101);
			seq.actualize();
			expect(await waitForStart(seq, 1, 1)).toBe(offset);
			expect(await seq.next(1)).toBe(101);
			expect(await seq.next(2)).toBe(201);
		});

		it("a next() waiting for storage rejects when the transaction is actualized", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			seq.flush();
			const g = gate();
			storage.onReadNumbers = g.enter;
			await waitForStart(seq, 1, 2);
			const n = seq.next(1);
			seq.actualize();
			g.open();
			await expect(n).rejects.toMatchObject({ code: "SEQUENCER_MISUSE" });
		});
	});

	describe("Actualize with a next() still reading storage", () => {
		it("the next transaction's flush does not wait for that read", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			seq.flush();
			const g = gate();
			storage.onReadNumbers = g.enter;
			await waitForStart(seq, 1, 2);
			const n = seq.next(1);
			expect(n).toBeInstanceOf(Promise);
			const rejected = expect(n).rejects.toMatchObject({ code: "SEQUENCER_MISUSE" });
			seq.actualize();
			expect(await waitForStart(seq, 1, 3)).toBe(2);
			expect(code(() => seq.flush())).toBeUndefined();
			g.open();
			await rejected;
			expect(await waitForStart(seq, 1, 2)).toBe(3);
			expect(await seq.next(1)).toBe(1);
			seq.flush();
		});
	});

	describe("LongRecovery", () => {
		// For numOfEvents in [0, 10 * maxNumUnflushedValues]: a new sequencer recovers from the PLog.
		const max = 5;
		for (let n = 0; n <= 10 * max; n++) {
			it(`${n} events`, async () => {
				const storage = new MockSeqStorage();
				const seqTypes = { 1: { 1: 1, 2: 1 } };
				let k = 1;
				for (let o = 1; o <= n; o++, k += 2) {
					storage.addPLogEntry(o, 1, 1, k);
					storage.addPLogEntry(o, 1, 2, k + 1);
				}
				const last1 = n === 0 ? 0 : k - 2;
				const last2 = n === 0 ? 0 : k - 1;
				const { seq, cleanup } = setup({ seqTypes, maxNumUnflushedValues: max }, storage);
				expect(await waitForStart(seq, 1, 1)).toBe(n + 1);
				expect(await seq.next(1)).toBe(last1 + 1);
				expect(seq.next(2)).toBe(last2 + 1);
				seq.flush();
				storage.addPLogEntry(n + 1, 1, 1, last1 + 1);
				storage.addPLogEntry(n + 1, 1, 2, last2 + 1);
				expect(await waitForStart(seq, 1, 1)).toBe(n + 2);
				expect(await seq.next(1)).toBe(last1 + 2);
				expect(seq.next(2)).toBe(last2 + 2);
				seq.actualize();
				expect(await waitForStart(seq, 1, 1)).toBe(n + 2);
				expect(await seq.next(1)).toBe(last1 + 2);
				expect(seq.next(2)).toBe(last2 + 2);
				await cleanup();
			});
		}
	});

	describe("MultipleActualizes", () => {
		it("100 random cycles of start, next, then flush or actualize", async () => {
			const storage = plogWith([[1, 1, 1, 100]]);
			const { seq } = setup({ maxNumUnflushedValues: 10, lruCacheSize: 100 }, storage);
			let offset = 2;
			let number = 101;
			let flushes = 0;
			let seed = 42;
			const rand = () => {
				seed = (seed * 1103515245 + 12345) % 2 ** 31;
				return seed / 2 ** 31;
			};
			for (let i = 0; i < 100; i++) {
				expect(await waitForStart(seq, 1, 1)).toBe(offset);
				expect(await seq.next(1)).toBe(number);
				if (rand() < 0.5) {
					seq.flush();
					storage.addPLogEntry(offset, 1, 1, number);
					offset++;
					number++;
					flushes++;
				} else seq.actualize();
			}
			expect(await waitForStart(seq, 1, 1)).toBe(offset);
			expect(await seq.next(1)).toBe(100 + flushes + 1);
			expect(flushes).toBeGreaterThan(20);
			expect(flushes).toBeLessThan(80);
		});
	});

	describe("FlushPermanentlyFails", () => {
		it("start stays not ok once unflushed values exceed the limit, and recovers when writes work", async () => {
			const seqTypes = { 1: { 1: 1, 2: 1, 3: 1, 4: 1, 5: 1, 6: 1 } };
			const storage = plogWith([[1, 1, 1, 100]]);
			const errors: unknown[] = [];
			const { seq, clock } = setup({ seqTypes, maxNumUnflushedValues: 5 }, storage);
			expect(await waitForStart(seq, 1, 1)).toBe(2);
			storage.writeError = new Error("write failed");
			expect(await seq.next(1)).toBe(101);
			seq.flush();
			for (let s = 2; s <= 6; s++) {
				expect(await waitForStart(seq, 1, 1)).toBe(s + 1);
				expect(await seq.next(s)).toBe(1);
				seq.flush();
			}
			// 6 unflushed values > 5: not ok, however long we wait.
			await waitForStart(seq, 1, 1, {
				shouldBeOk: false,
				tries: 20,
				between: () => clock.advanceAsync(500),
			});
			expect(storage.calls.write).toBeGreaterThan(1);
			errors.push(storage.writeError);
			storage.writeError = undefined;
			expect(await waitForStart(seq, 1, 1, { between: () => clock.advanceAsync(500) })).toBe(8);
			expect(await seq.next(1)).toBe(102);
			for (let s = 2; s <= 6; s++) expect(seq.next(s)).toBe(2);
			expect(errors).toHaveLength(1);
		});
	});

	describe("NewExecutesActualize", () => {
		it("the constructor starts actualization; start is not ok until it ends", async () => {
			const storage = new MockSeqStorage();
			const g = gate();
			storage.onActualize = g.enter;
			const { seq } = setup({}, storage);
			await g.entered;
			expect(storage.calls.readNextPLogOffset).toBe(1);
			expect(seq.start(1, 1)).toBeUndefined();
			g.open();
			expect(await waitForStart(seq, 1, 1)).toBe(1);
		});
	});

	describe("Params", () => {
		it("rejects a wrong cache size, limits and initial numbers", () => {
			expect(() => setup({ lruCacheSize: -1 })).toThrow(RangeError);
			expect(() => setup({ lruCacheSize: 0 })).toThrow(RangeError);
			expect(() => setup({ maxNumUnflushedValues: 0 })).toThrow(RangeError);
			expect(() => setup({ seqTypes: { 1: { 1: 0 } } })).toThrow(/initial numbers can not be < 1/);
			expect(() => setup({ seqTypes: {} })).toThrow(RangeError);
			expect(() => setup({ seqTypes: { 70000: { 1: 1 } } })).toThrow(RangeError);
			expect(() => setup({ cache: "lru" as "clock" })).toThrow(/cache must be one of/);
		});

		it("refuses a zero retry base below a positive cap (retries without pause, then a NaN delay)", () => {
			const make = (retry: { baseDelayMs: number; maxDelayMs: number }) =>
				createSequencer({ seqTypes: { 1: { 1: 1 } } }, new MockSeqStorage(), { retry });
			expect(() => make({ baseDelayMs: 0, maxDelayMs: 500 })).toThrow(/baseDelayMs > 0/);
			expect(() => make({ baseDelayMs: 0, maxDelayMs: 0 }).cleanup()).not.toThrow();
			expect(() => make({ baseDelayMs: 1, maxDelayMs: 500 }).cleanup()).not.toThrow();
		});

		it("accepts Maps as seqTypes", async () => {
			const { seq } = setup({ seqTypes: new Map([[3, new Map([[9, 5]])]]) });
			await waitForStart(seq, 3, 1);
			expect(await seq.next(9)).toBe(5);
		});
	});
});
