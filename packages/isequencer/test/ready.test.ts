import { MockClock } from "@vvm/clock";
import { describe, expect, it } from "vitest";
import { createSequencer, SequencerError } from "../src/index.ts";
import { gate, MockSeqStorage, settle } from "./helpers/mock-storage.ts";

const params = { seqTypes: { 1: { 1: 1 } } };

describe("sequencer.ready()", () => {
	it("resolves when the actualization ends, after which start is ok; at once when none runs", async () => {
		const storage = new MockSeqStorage();
		const blocked = gate();
		storage.onActualize = () => blocked.promise;
		await using handle = createSequencer(params, storage, { clock: new MockClock(0) });
		const seq = handle.sequencer;
		let ready = false;
		const waiting = seq.ready().then(() => {
			ready = true;
		});
		await settle();
		expect({ ready, start: seq.start(1, 1) }).toEqual({ ready: false, start: undefined });
		blocked.open();
		await waiting;
		expect(seq.start(1, 1)).toBe(1);
		seq.flush();
		await expect(seq.ready()).resolves.toBeUndefined(); // nothing runs now
		// A new actualization makes it wait again.
		expect(seq.start(1, 1)).toBe(2);
		seq.actualize();
		const again = seq.ready();
		expect(seq.start(1, 1)).toBeUndefined();
		await again;
		expect(seq.start(1, 1)).toBe(2);
		seq.flush();
	});

	it("rejects with the signal's reason, and with SEQUENCER_CLEANED_UP on cleanup", async () => {
		const storage = new MockSeqStorage();
		const blocked = gate();
		storage.onActualize = () => blocked.promise;
		const handle = createSequencer(params, storage, { clock: new MockClock(0) });
		const ac = new AbortController();
		const aborted = handle.sequencer.ready(ac.signal);
		ac.abort(new Error("gave up"));
		await expect(aborted).rejects.toThrow("gave up");
		const pending = handle.sequencer.ready();
		const cleaned = handle.cleanup();
		const error = await pending.catch((e: unknown) => e);
		expect(SequencerError.is(error) && error.code).toBe("SEQUENCER_CLEANED_UP");
		blocked.open();
		await cleaned;
		await expect(handle.sequencer.ready()).rejects.toThrow(/cleaned up/);
	});
});
