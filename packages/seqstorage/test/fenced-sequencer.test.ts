// A standalone sequencer writing through a fenced view of the storage, whose fence a newer holder
// raised: its flush is refused for good. It used to retry that flush until cleanup, so `ready()`
// after `actualize()` never resolved (found by review); now it stops with SEQUENCER_STOPPED.
import { MockClock } from "@vvm/clock";
import { createSequencer, SequencerError } from "@vvm/isequencer";
import { TTLStorageError, withFence } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { expect, it } from "vitest";
import { createMemPLog, createSeqStorage } from "../src/index.ts";

it("a flush a newer fence refused stops the sequencer instead of being retried for good", async () => {
	const clock = new MockClock(0);
	const mem = createMemTTLStorage({ clock });
	const scope = new TextEncoder().encode("partition 0");
	const raise = (epoch: bigint) =>
		(mem.raiseFence as NonNullable<typeof mem.raiseFence>)(scope, epoch);
	await raise(1n);
	const plog = createMemPLog();
	const storage = createSeqStorage({
		storage: withFence(mem, { scope, epoch: 1n }),
		appId: 1,
		partitionId: 0,
		plog,
	});
	const errors: unknown[] = [];
	const { sequencer, cleanup } = createSequencer({ seqTypes: { 1: { 1: 1 } } }, storage, {
		clock,
		retry: { baseDelayMs: 5, maxDelayMs: 5 },
		onStorageError: (e) => errors.push(e),
	});
	await sequencer.ready();
	const offset = sequencer.start(1, 10) as number;
	const n = await sequencer.next(1);
	plog.append(offset, [{ wsid: 10, seqId: 1, value: n }]);
	await raise(2n); // a newer holder takes the partition
	sequencer.flush();
	for (let i = 0; i < 50 && errors.length === 0; i++) {
		await clock.advanceAsync(5);
		await new Promise((r) => setImmediate(r));
	}
	expect(errors).toHaveLength(1);
	// The next command's PLog write fails too (the same fence): the caller actualizes.
	let refused: unknown;
	try {
		sequencer.start(1, 10);
		sequencer.actualize();
	} catch (e) {
		refused = e;
	}
	expect(SequencerError.is(refused) && refused.code).toBe("SEQUENCER_STOPPED");

	let outcome: unknown = "pending";
	sequencer.ready().then(
		() => {
			outcome = "ready";
		},
		(e: unknown) => {
			outcome = e;
		},
	);
	for (let i = 0; i < 50 && outcome === "pending"; i++) {
		await clock.advanceAsync(5);
		await new Promise((r) => setImmediate(r));
	}
	expect(SequencerError.is(outcome) && outcome.code).toBe("SEQUENCER_STOPPED");
	const cause = (outcome as Error).cause;
	expect(TTLStorageError.is(cause) && cause.code).toBe("TTLSTORAGE_FENCED");
	expect(errors).toHaveLength(1); // refused once, not retried
	expect(await storage.readNextPLogOffset()).not.toBe(2); // nothing of the deposed writer landed
	await cleanup();
	await mem.close();
});
