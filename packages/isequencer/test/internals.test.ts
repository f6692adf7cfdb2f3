// Ports of voedger pkg/isequencer impl_test.go (package-internal), reference §6.6, adapted to the
// per-workspace record: the LRU holds committed numbers, the transaction its own, and records not yet
// durable stay reachable after eviction ("toBeFlushed").
import { describe, expect, it } from "vitest";
import type { SeqValue } from "../src/index.ts";
import { IntrusiveLru } from "../src/intrusive-lru.ts";
import { LruCacheAdapter } from "../src/lru-cache-adapter.ts";
import { gate, MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";
import { describeEachCache, setup } from "./helpers/setup.ts";

const unflushedOf = (s: { stats(): { unflushedValues: number } }) => s.stats().unflushedValues;

describeEachCache((cache) => {
	it("uses the cache named in params", () => {
		const { seq } = setup();
		expect(seq._internals.lru).toBeInstanceOf(cache === "clock" ? IntrusiveLru : LruCacheAdapter);
	});

	describe("Sequencer", () => {
		it("basic flow", async () => {
			const storage = new MockSeqStorage();
			storage.addPLogEntry(1, 1, 1, 100);
			const { seq, cleanup } = setup({}, storage);
			// 100 numbers in one transaction
			expect(await waitForStart(seq, 1, 1)).toBe(2);
			for (let i = 0; i < 100; i++) expect(await seq.next(1)).toBe(101 + i);
			seq.flush();
			// 100 transactions, 1 number in each
			for (let i = 0; i < 100; i++) {
				expect(await waitForStart(seq, 1, 1)).toBe(3 + i);
				expect(seq.next(1)).toBe(201 + i);
				seq.flush();
			}
			for (let i = 0; i < 100 && unflushedOf(seq) > 0; i++) await settle(1);
			await cleanup();
			expect(storage.getNumber(1, 1)).toBe(300);
			expect(storage.nextOffset).toBe(103);
		});
	});

	describe("Batcher", () => {
		it("aggregates max values and sets the offsets", async () => {
			const { seq } = setup({ seqTypes: { 1: { 1: 1, 2: 1, 4: 1 } } });
			await waitForStart(seq, 1, 1);
			seq.flush();
			for (let i = 0; i < 100 && unflushedOf(seq) > 0; i++) await settle(1);
			const batch: SeqValue[] = [
				{ wsid: 1, seqId: 1, value: 100 },
				{ wsid: 1, seqId: 1, value: 104 },
				{ wsid: 1, seqId: 1, value: 102 },
				{ wsid: 1, seqId: 2, value: 200 },
				{ wsid: 1, seqId: 2, value: 201 },
				{ wsid: 1, seqId: 4, value: 400 },
				{ wsid: 1, seqId: 4, value: 402 },
				{ wsid: 2, seqId: 1, value: 50 },
				{ wsid: 2, seqId: 1, value: 52 },
			];
			expect(seq._batcher(batch, 6)).toBeUndefined();
			expect(unflushedOf(seq)).toBe(4);
			const { lru, slotOf, toBeFlushedOffset } = seq._internals;
			const num = (ws: number, s: number) => lru.peek(ws)?.nums[slotOf[s] as number];
			expect([num(1, 1), num(1, 2), num(1, 4), num(2, 1)]).toEqual([104, 201, 402, 52]);
			expect(toBeFlushedOffset).toBe(7);
			expect(seq.stats().nextPLogOffset).toBe(7);
		});

		it("rejects with the cleanup reason when cleaned up while waiting", async () => {
			const storage = new MockSeqStorage();
			const { seq, cleanup } = setup({ maxNumUnflushedValues: 1 }, storage);
			await waitForStart(seq, 1, 1);
			seq.flush();
			await settle();
			const g = gate();
			storage.onWrite = g.enter;
			expect(seq._batcher([{ wsid: 1, seqId: 1, value: 5 }], 1)).toBeUndefined();
			const waiting = seq._batcher([{ wsid: 2, seqId: 1, value: 5 }], 2);
			expect(waiting).toBeInstanceOf(Promise);
			await g.entered;
			const done = cleanup();
			await expect(waiting).rejects.toMatchObject({ code: "SEQUENCER_CLEANED_UP" });
			g.open();
			await done;
		});

		it("continues after toBeFlushed drains", async () => {
			const storage = new MockSeqStorage();
			const { seq, clock } = setup({ maxNumUnflushedValues: 1 }, storage);
			await waitForStart(seq, 1, 1);
			seq.flush();
			await settle();
			const g = gate();
			storage.onWrite = g.enter;
			expect(seq._batcher([{ wsid: 1, seqId: 1, value: 5 }], 1)).toBeUndefined();
			const armed = clock.nextTimerArmed();
			const waiting = seq._batcher([{ wsid: 2, seqId: 1, value: 7 }], 2);
			expect((await armed).delayMs).toBe(5);
			await g.entered;
			// The delay passes while the write is still blocked: the batcher waits again.
			const rearmed = clock.nextTimerArmed();
			clock.advance(5);
			await rearmed;
			g.open();
			await waiting;
			expect(unflushedOf(seq)).toBe(1);
			expect(seq.stats().nextPLogOffset).toBe(3);
		});
	});

	describe("ContextCloseDuringStorageErrors", () => {
		it("flusher", async () => {
			const storage = new MockSeqStorage();
			const { seq, cleanup } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			await seq.next(1);
			storage.writeError = new Error("write failed");
			let cleaned: Promise<void> | undefined;
			storage.onWrite = () => {
				cleaned = cleanup();
			};
			seq.flush();
			for (let i = 0; i < 20 && cleaned === undefined; i++) await settle(1);
			expect(cleaned).toBeDefined();
			await cleaned;
			expect(storage.calls.write).toBe(1);
		});

		it("actualizer on readNextPLogOffset", async () => {
			const storage = new MockSeqStorage();
			storage.readNextOffsetError = new Error("read failed");
			let cleaned: Promise<void> | undefined;
			const { cleanup } = setup({}, storage);
			storage.onReadNextOffset = () => {
				cleaned = cleanup();
			};
			await settle();
			expect(cleaned).toBeDefined();
			await cleaned;
			expect(storage.calls.actualize).toBe(0);
		});

		it("actualizer on actualizeSequencesFromPLog", async () => {
			const storage = new MockSeqStorage();
			storage.actualizeError = new Error("scan failed");
			const g = gate();
			storage.onActualize = g.enter;
			const { seq, cleanup } = setup({}, storage);
			await g.entered;
			const done = cleanup();
			g.open();
			await done;
			expect(seq.stats().actualizing).toBe(false);
			expect(storage.calls.actualize).toBe(1);
		});

		it("next", async () => {
			const storage = new MockSeqStorage();
			const { seq, cleanup, clock } = setup({}, storage);
			storage.readNumbersError = new Error("read failed");
			const armed = clock.nextTimerArmed();
			await waitForStart(seq, 1, 1);
			const n = seq.next(1);
			expect(n).toBeInstanceOf(Promise);
			// Let the read fail once and its retry arm a timer, then clean up.
			await armed;
			await cleanup();
			await expect(n).rejects.toMatchObject({ code: "SEQUENCER_CLEANED_UP" });
			expect(storage.calls.readNumbers).toBe(1);
		});
	});

	describe("NextNumberSourceOrder", () => {
		async function prepared(params = {}) {
			const storage = new MockSeqStorage();
			for (let o = 1; o <= 4; o++) storage.addPLogEvent(o);
			storage.addPLogEntry(5, 1, 1, 100);
			const s = setup(params, storage);
			expect(await waitForStart(s.seq, 1, 1)).toBe(6);
			return s;
		}

		it("the value is cached after next and flush", async () => {
			const { seq } = await prepared();
			expect(await seq.next(1)).toBe(101);
			const slot = seq._internals.slotOf[1] as number;
			expect(seq._internals.txNums[slot]).toBe(101);
			seq.flush();
			expect(seq._internals.lru.peek(1)?.nums[slot]).toBe(101);
		});

		it("next takes the value from the cache", async () => {
			const { seq, storage } = await prepared();
			await seq.next(1);
			seq.flush();
			const reads = storage.calls.readNumbers;
			const rec = seq._internals.lru.peek(1);
			if (rec === undefined) throw new Error("not cached");
			rec.nums[seq._internals.slotOf[1] as number] = 10001;
			await waitForStart(seq, 1, 1);
			expect(seq.next(1)).toBe(10002);
			expect(storage.calls.readNumbers).toBe(reads);
		});

		it("next takes the value from the transaction", async () => {
			const { seq } = await prepared();
			expect(await seq.next(1)).toBe(101);
			seq._internals.txNums[seq._internals.slotOf[1] as number] = 20001;
			expect(seq.next(1)).toBe(20002);
		});

		it("missing in the cache: next takes the value waiting to be flushed, without I/O", async () => {
			const { seq, storage } = await prepared({ lruCacheSize: 1 });
			expect(await seq.next(1)).toBe(101);
			const g = gate();
			storage.onWrite = g.enter;
			seq.flush();
			await g.entered; // the flusher is blocked inside the write
			expect(await waitForStart(seq, 1, 2)).toBe(7);
			await seq.next(1); // reads ws 2, evicting ws 1 from the LRU of size 1
			seq.flush();
			expect(seq._internals.lru.has(1)).toBe(false);
			expect(seq._internals.offCache.has(1)).toBe(true);
			const reads = storage.calls.readNumbers;
			expect(await waitForStart(seq, 1, 1)).toBe(8);
			expect(seq.next(1)).toBe(102);
			expect(storage.calls.readNumbers).toBe(reads);
			g.open();
		});

		it("missing everywhere: next reads all numbers of the workspace from storage", async () => {
			const storage = new MockSeqStorage();
			storage.setNumber(9, 2, 41);
			const readArgs: number[][] = [];
			const read = storage.readNumbers.bind(storage);
			storage.readNumbers = (ws, ids) => {
				readArgs.push([ws, ...ids]);
				return read(ws, ids);
			};
			const { seq } = setup({ seqTypes: { 1: { 1: 1, 2: 1 } } }, storage);
			await waitForStart(seq, 1, 9);
			expect(await seq.next(2)).toBe(42);
			expect(seq.next(1)).toBe(1);
			expect(readArgs).toEqual([[9, 1, 2]]);
		});
	});

	describe("Actualize internals", () => {
		it("clears toBeFlushed and zeroes its offset", async () => {
			const storage = new MockSeqStorage();
			const { seq, clock } = setup({}, storage);
			expect(await waitForStart(seq, 1, 1)).toBe(1);
			await seq.next(1);
			storage.writeError = new Error("write failed");
			seq.flush();
			await clock.nextTimerArmed(); // the flusher failed and waits to retry
			expect(unflushedOf(seq)).toBe(1);
			await waitForStart(seq, 1, 1);
			seq.actualize();
			storage.writeError = undefined;
			await waitForStart(seq, 1, 1, { between: () => clock.advanceAsync(500) });
			expect(unflushedOf(seq)).toBe(0);
			expect(seq._internals.toBeFlushedOffset).toBe(0);
			expect(seq._internals.dirtyList).toHaveLength(0);
		});

		it("evicted records that are durable leave memory", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({ lruCacheSize: 2 }, storage);
			for (let ws = 1; ws <= 10; ws++) {
				await waitForStart(seq, 1, ws);
				await seq.next(1);
				seq.flush();
			}
			for (let i = 0; i < 100 && unflushedOf(seq) > 0; i++) await settle(1);
			expect(seq.stats().cachedWorkspaces).toBe(2);
			expect(seq._internals.offCache.size).toBe(0);
			for (let ws = 1; ws <= 10; ws++) expect(storage.getNumber(ws, 1)).toBe(1);
		});
	});

	describe("Stale storage reads", () => {
		it("a read that replies after a flush and an eviction is read again (lruCacheSize 1)", async () => {
			const W = 7;
			const storage = new MockSeqStorage();
			storage.addPLogEntry(1, W, 1, 10); // seq 1 of W is in the PLog, seq 2 is unknown
			const { seq } = setup({ seqTypes: { 1: { 1: 1, 2: 1 } }, lruCacheSize: 1 }, storage);
			// The prefetch of W takes the stored values (none yet) at once but replies late.
			const late = gate();
			storage.onReadNumbersReply = late.enter;
			expect(await waitForStart(seq, 1, W)).toBe(2);
			await late.entered;
			seq.flush();
			for (let i = 0; i < 100 && storage.nextOffset !== 3; i++) await settle(1);
			expect(storage.getNumber(W, 1)).toBe(10);
			expect(unflushedOf(seq)).toBe(0);
			// A transaction on another workspace evicts W, which is clean, so it leaves memory.
			expect(await waitForStart(seq, 1, 8)).toBe(3);
			expect(await seq.next(1)).toBe(1);
			seq.flush();
			expect(seq._internals.lru.has(W)).toBe(false);
			expect(seq._internals.offCache.has(W)).toBe(false);
			late.open();
			await settle();
			expect(await waitForStart(seq, 1, W)).toBe(4);
			expect(await seq.next(1)).toBe(11);
			expect(await seq.next(2)).toBe(1);
		});
	});

	describe("Back-pressure during a storage outage", () => {
		it("the actualizer's waits for a flush do not pile up while writes fail", async () => {
			const storage = new MockSeqStorage();
			for (let o = 1; o <= 10; o++) storage.addPLogEntry(o, o, 1, 5);
			storage.writeError = new Error("storage down");
			const { seq, clock } = setup({ maxNumUnflushedValues: 2 }, storage);
			for (let i = 0; i < 200; i++) await clock.advanceAsync(5);
			expect(seq.stats().actualizing).toBe(true);
			expect(storage.calls.write).toBeGreaterThan(1);
			expect(seq._internals.flushWaiters).toBeLessThanOrEqual(1);
			storage.writeError = undefined;
			for (let i = 0; i < 200 && seq.stats().actualizing; i++) await clock.advanceAsync(5);
			expect(seq.stats().actualizing).toBe(false);
			expect(seq._internals.flushWaiters).toBe(0);
		});
	});
});
