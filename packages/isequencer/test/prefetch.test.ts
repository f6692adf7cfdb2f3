// prefetch(wsKind, wsid): the numbers of a workspace that waits in the caller's queue are read
// ahead, while another workspace's transaction runs; its start then shares that read (one read,
// the same numbers), and a read of an older generation (before actualize) is never used.
import { describe, expect, it, onTestFinished } from "vitest";
import { MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";
import { describeEachCache, setup } from "./helpers/setup.ts";

/**
 * A storage whose readNumbers wait until released, one gate per call, in call order; all are
 * released when the test ends (so a failed assertion does not leave cleanup waiting).
 */
function heldReads(storage: MockSeqStorage) {
	const read = storage.readNumbers.bind(storage);
	const waiting: Array<{ wsid: number; release(): void }> = [];
	storage.readNumbers = async (wsid, ids) => {
		await new Promise<void>((release) => waiting.push({ wsid, release }));
		return read(wsid, ids);
	};
	onTestFinished(() => {
		for (const w of waiting) w.release();
	});
	return waiting;
}

describeEachCache(() => {
	describe("prefetch", () => {
		it("reads a waiting workspace while another's transaction runs; its start shares the read", async () => {
			const storage = new MockSeqStorage();
			storage.setNumber(7, 1, 41);
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			const first = seq.next(1); // ws 1: not in memory, a read
			const waiting = heldReads(storage);
			seq.prefetch(1, 7); // ws 7 waits behind ws 1: read now
			await settle();
			expect(waiting.map((w) => w.wsid)).toEqual([7]);
			expect(await first).toBe(1);
			seq.flush();
			// ws 7's transaction starts while its read ahead is still in flight: no second read.
			expect(await waitForStart(seq, 1, 7)).toBe(2);
			const n = seq.next(1);
			expect(n).toBeInstanceOf(Promise);
			await settle();
			expect(waiting.length).toBe(1);
			waiting[0]?.release();
			expect(await n).toBe(42);
			seq.flush();
			expect(storage.calls.readNumbers).toBe(2);
		});

		it("a finished read ahead leaves the numbers in memory: start reads nothing", async () => {
			const storage = new MockSeqStorage();
			storage.setNumber(7, 1, 41);
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			seq.prefetch(1, 7);
			await seq.next(1);
			seq.flush();
			await settle();
			const reads = storage.calls.readNumbers;
			await waitForStart(seq, 1, 7);
			expect(seq.next(1)).toBe(42); // synchronous: in memory
			expect(storage.calls.readNumbers).toBe(reads);
		});

		it("does nothing for a workspace in memory, its own transaction's, or one read ahead already", async () => {
			const storage = new MockSeqStorage();
			const { seq } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			await seq.next(1);
			seq.flush();
			const reads = storage.calls.readNumbers;
			seq.prefetch(1, 1); // in memory
			await waitForStart(seq, 1, 2);
			const n = seq.next(1);
			seq.prefetch(1, 2); // its own transaction reads it
			await n;
			seq.flush();
			seq.prefetch(1, 3);
			seq.prefetch(1, 3); // read ahead already
			await settle();
			expect(storage.calls.readNumbers).toBe(reads + 2);
		});

		it("a read ahead from before actualize is not used: start reads again", async () => {
			const storage = new MockSeqStorage();
			storage.setNumber(7, 1, 41);
			const { seq, clock } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			const waiting = heldReads(storage);
			seq.prefetch(1, 7);
			await settle();
			expect(waiting.map((w) => w.wsid)).toEqual([7]);
			seq.actualize(); // the PLog write of ws 1's command failed
			// The workspace's numbers changed meanwhile (as an event re-applied by actualize would).
			storage.setNumber(7, 1, 50);
			await waitForStart(seq, 1, 7, { between: () => clock.advanceAsync(10) });
			const n = seq.next(1);
			await settle();
			expect(waiting.map((w) => w.wsid)).toEqual([7, 7]); // a read of its own
			for (const w of waiting) w.release();
			expect(await n).toBe(51);
		});

		it("refuses an unknown kind and an invalid wsid like start; a no-op after cleanup", async () => {
			const { seq, cleanup, storage } = setup();
			await waitForStart(seq, 1, 1); // actualized (until then a no-op, as start is not ok)
			expect(() => seq.prefetch(9, 1)).toThrow(
				expect.objectContaining({ code: "SEQUENCER_UNKNOWN_WS_KIND" }),
			);
			expect(() => seq.prefetch(1, -1)).toThrow(/prefetch: wsid must be a safe integer/);
			await cleanup();
			const reads = storage.calls.readNumbers;
			seq.prefetch(1, 5);
			await settle();
			expect(storage.calls.readNumbers).toBe(reads);
		});

		it("at most 64 reads ahead at once; cleanup waits for them", async () => {
			const storage = new MockSeqStorage();
			const { seq, cleanup } = setup({}, storage);
			await waitForStart(seq, 1, 1);
			const waiting = heldReads(storage);
			for (let ws = 100; ws < 200; ws++) seq.prefetch(1, ws);
			await settle();
			expect(waiting.length).toBe(64);
			let cleaned = false;
			const done = cleanup().then(() => {
				cleaned = true;
			});
			await settle();
			expect(cleaned).toBe(false);
			for (const w of waiting) w.release();
			await done;
			expect(cleaned).toBe(true);
		});
	});
});
