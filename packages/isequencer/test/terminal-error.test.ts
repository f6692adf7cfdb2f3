// A storage error no retry can cure (by default a write refused by a newer fence) stops the
// sequencer instead of being retried until cleanup: before, a fenced flush was retried for good and
// `actualize()` of a standalone sequencer never finished (found by review).
import { MockClock } from "@vvm/clock";
import { describe, expect, it } from "vitest";
import { createSequencer, isFencedStorageError, SequencerError } from "../src/index.ts";
import { MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";

/** Shaped as `@vvm/ttlstorage`'s error (its marker is a registered symbol); this package does not depend on it. */
function ttlStorageError(code: string): Error {
	const e = Object.assign(new Error(`[@vvm/ttlstorage-mem] put: ${code}`), { code });
	Object.defineProperty(e, Symbol.for("vvm.error.TTLStorageError"), { value: true });
	return e;
}

function make(
	storage: MockSeqStorage,
	options: { isTerminalError?: (e: unknown) => boolean } = {},
) {
	const clock = new MockClock(0);
	const errors: unknown[] = [];
	const handle = createSequencer({ seqTypes: { 1: { 1: 1 } } }, storage, {
		clock,
		random: () => 0.5,
		retry: { baseDelayMs: 10, maxDelayMs: 10 },
		onStorageError: (e) => errors.push(e),
		...options,
	});
	return { ...handle, clock, errors, seq: handle.sequencer };
}

const codeOf = (fn: () => unknown): string | undefined => {
	try {
		fn();
	} catch (e) {
		return SequencerError.is(e) ? e.code : `not a SequencerError: ${String(e)}`;
	}
	return undefined;
};

describe("a storage error no retry can cure", () => {
	it("a fenced flush stops the sequencer: every call, ready and actualize say SEQUENCER_STOPPED, with the storage's error as cause", async () => {
		const storage = new MockSeqStorage();
		const s = make(storage);
		const offset = await waitForStart(s.seq, 1, 7);
		expect(await s.seq.next(1)).toBe(1);
		const fenced = ttlStorageError("TTLSTORAGE_FENCED");
		storage.writeError = fenced;
		s.seq.flush();
		for (let i = 0; i < 20 && s.errors.length === 0; i++) await settle(1);
		expect(s.errors).toEqual([fenced]); // tried once, reported, not retried
		await s.clock.advanceAsync(1_000);
		await settle();
		expect(s.errors).toHaveLength(1);
		expect(offset).toBe(1);

		const ready = await s.seq.ready().then(
			() => "resolved",
			(e: unknown) => e,
		);
		expect(SequencerError.is(ready) && ready.code).toBe("SEQUENCER_STOPPED");
		expect((ready as Error).cause).toBe(fenced);
		expect(codeOf(() => s.seq.start(1, 7))).toBe("SEQUENCER_STOPPED");
		expect(codeOf(() => s.seq.actualize())).toBe("SEQUENCER_STOPPED");
		expect(codeOf(() => s.seq.flush())).toBe("SEQUENCER_STOPPED");
		await expect(s.cleanup()).resolves.toBeUndefined();
		// cleanup afterwards keeps the reason
		expect(codeOf(() => s.seq.start(1, 7))).toBe("SEQUENCER_STOPPED");
	});

	it("ends a next() still reading storage, and a pending actualization", async () => {
		const storage = new MockSeqStorage();
		const s = make(storage, { isTerminalError: (e) => (e as Error).message === "gone for good" });
		await s.seq.ready();
		storage.readNumbersError = new Error("gone for good");
		expect(s.seq.start(1, 7)).toBe(1);
		const next = Promise.resolve(s.seq.next(1));
		await expect(next).rejects.toMatchObject({ code: "SEQUENCER_STOPPED" });
		await expect(s.seq.ready()).rejects.toMatchObject({ code: "SEQUENCER_STOPPED" });

		const other = new MockSeqStorage();
		other.readNextOffsetError = new Error("gone for good");
		const t = make(other, { isTerminalError: (e) => (e as Error).message === "gone for good" });
		await expect(t.seq.ready()).rejects.toMatchObject({ code: "SEQUENCER_STOPPED" });
		await t.cleanup();
		await s.cleanup();
	});

	it("other errors are retried as before, also when the predicate throws; cleanup still says CLEANED_UP", async () => {
		const storage = new MockSeqStorage();
		const s = make(storage, {
			isTerminalError: () => {
				throw new Error("broken predicate");
			},
		});
		await waitForStart(s.seq, 1, 7);
		await s.seq.next(1);
		storage.writeError = ttlStorageError("TTLSTORAGE_UNAVAILABLE");
		s.seq.flush();
		for (let i = 0; i < 5; i++) {
			await settle();
			await s.clock.advanceAsync(10);
		}
		expect(s.errors.length).toBeGreaterThan(2);
		storage.writeError = undefined;
		for (let i = 0; i < 5 && s.seq.stats().unflushedValues > 0; i++) {
			await s.clock.advanceAsync(10);
			await settle();
		}
		expect(s.seq.stats().unflushedValues).toBe(0);
		await s.cleanup();
		expect(codeOf(() => s.seq.start(1, 7))).toBe("SEQUENCER_CLEANED_UP");
	});

	it("isFencedStorageError knows only the fenced code of a TTL storage error", () => {
		expect(isFencedStorageError(ttlStorageError("TTLSTORAGE_FENCED"))).toBe(true);
		expect(isFencedStorageError(ttlStorageError("TTLSTORAGE_UNAVAILABLE"))).toBe(false);
		expect(isFencedStorageError(Object.assign(new Error("x"), { code: "TTLSTORAGE_FENCED" }))).toBe(
			false,
		);
		expect(isFencedStorageError(undefined)).toBe(false);
	});
});
