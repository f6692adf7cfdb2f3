import { MockClock } from "@vvm/clock";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSequencer } from "../src/index.ts";
import { MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";

afterEach(() => {
	vi.restoreAllMocks();
});

describe("onStorageError default", () => {
	it("logs storage errors with console.error, identical ones once per second per operation", async () => {
		const logged = vi.spyOn(console, "error").mockImplementation(() => {});
		const clock = new MockClock(0);
		const storage = new MockSeqStorage();
		const { sequencer: seq, cleanup } = createSequencer({ seqTypes: { 1: { 1: 1 } } }, storage, {
			clock,
			random: () => 0.5,
			retry: { baseDelayMs: 10, maxDelayMs: 10 }, // a retry every 5 ms
		});
		try {
			await waitForStart(seq, 1, 1);
			await seq.next(1);
			seq.flush();
			storage.readNumbersError = new Error("storage down");
			await waitForStart(seq, 1, 2);
			const n = seq.next(1);
			for (let i = 0; i < 150; i++) await clock.advanceAsync(5); // 750 ms, ~150 failures
			expect(storage.calls.readNumbers).toBeGreaterThan(100);
			expect(logged).toHaveBeenCalledTimes(1);
			const [message, error] = logged.mock.calls[0] as [string, unknown];
			expect(message).toMatch(/^\[@vvm\/isequencer\] storage readNumbers failed \(attempt 1\)/);
			expect(error).toBe(storage.readNumbersError);
			for (let i = 0; i < 60; i++) await clock.advanceAsync(5); // past one second
			expect(logged).toHaveBeenCalledTimes(2);
			expect(logged.mock.calls[1]?.[0]).toMatch(/readNumbers failed .*similar errors not logged/);
			// A different error is logged at once.
			storage.readNumbersError = new Error("other");
			await clock.advanceAsync(5);
			expect(logged).toHaveBeenCalledTimes(3);
			expect(logged.mock.calls[2]?.[1]).toBe(storage.readNumbersError);
			storage.readNumbersError = undefined;
			await clock.advanceAsync(5);
			expect(await n).toBe(1);
			// Another operation has its own interval.
			storage.writeError = new Error("storage down");
			seq.flush();
			await settle();
			expect(logged).toHaveBeenCalledTimes(4);
			expect(logged.mock.calls[3]?.[0]).toMatch(/storage writeValuesAndNextPLogOffset failed/);
			storage.writeError = undefined;
			for (let i = 0; i < 10 && seq.stats().unflushedValues > 0; i++) await clock.advanceAsync(5);
			expect(seq.stats().unflushedValues).toBe(0);
		} finally {
			await cleanup();
		}
	});

	it("is replaced by options.onStorageError", async () => {
		const logged = vi.spyOn(console, "error").mockImplementation(() => {});
		const clock = new MockClock(0);
		const storage = new MockSeqStorage();
		const seen: string[] = [];
		storage.readNextOffsetError = new Error("down");
		const { cleanup } = createSequencer({ seqTypes: { 1: { 1: 1 } } }, storage, {
			clock,
			onStorageError: (_e, op, attempt) => seen.push(`${op}#${attempt}`),
		});
		await settle();
		await clock.advanceAsync(500);
		await cleanup();
		expect(seen.slice(0, 2)).toEqual(["readNextPLogOffset#1", "readNextPLogOffset#2"]);
		expect(logged).not.toHaveBeenCalled();
	});
});
