import { MockClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createSequencer } from "../src/index.ts";
import { MockSeqStorage, settle, waitForStart } from "./helpers/mock-storage.ts";

afterEach(() => {
	vi.restoreAllMocks();
});

/** A logger that records `warn` calls as [fields, message]. */
function recordingLogger(): Logger & { warns: Array<[Record<string, unknown>, string]> } {
	const warns: Array<[Record<string, unknown>, string]> = [];
	const ignore = (): void => {};
	return {
		warns,
		error: ignore,
		info: ignore,
		debug: ignore,
		warn: (fields, message) => warns.push([fields as Record<string, unknown>, message ?? ""]),
	};
}

describe("storage errors through the logger", () => {
	it("logs them at warn, identical ones once per second per operation", async () => {
		const logger = recordingLogger();
		const logged = {
			get calls() {
				return logger.warns.map(([fields, message]) => [message, fields.err, fields]);
			},
		};
		const times = (): number => logger.warns.length;
		const clock = new MockClock(0);
		const storage = new MockSeqStorage();
		const { sequencer: seq, cleanup } = createSequencer({ seqTypes: { 1: { 1: 1 } } }, storage, {
			clock,
			logger,
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
			expect(times()).toBe(1);
			const [message, error, fields] = logged.calls[0] as [
				string,
				unknown,
				Record<string, unknown>,
			];
			expect(message).toMatch(/^storage readNumbers failed \(attempt 1\)/);
			expect(error).toBe(storage.readNumbersError);
			expect(fields).toMatchObject({
				pkg: "@vvm/isequencer",
				operation: "readNumbers",
				attempt: 1,
			});
			for (let i = 0; i < 60; i++) await clock.advanceAsync(5); // past one second
			expect(times()).toBe(2);
			expect(logged.calls[1]?.[0]).toMatch(/readNumbers failed .*similar errors not logged/);
			// A different error is logged at once.
			storage.readNumbersError = new Error("other");
			await clock.advanceAsync(5);
			expect(times()).toBe(3);
			expect(logged.calls[2]?.[1]).toBe(storage.readNumbersError);
			storage.readNumbersError = undefined;
			await clock.advanceAsync(5);
			expect(await n).toBe(1);
			// Another operation has its own interval.
			storage.writeError = new Error("storage down");
			seq.flush();
			await settle();
			expect(times()).toBe(4);
			expect(logged.calls[3]?.[0]).toMatch(/storage writeValuesAndNextPLogOffset failed/);
			storage.writeError = undefined;
			for (let i = 0; i < 10 && seq.stats().unflushedValues > 0; i++) await clock.advanceAsync(5);
			expect(seq.stats().unflushedValues).toBe(0);
		} finally {
			await cleanup();
		}
	});

	it("logs nothing by default (no console), and feeds options.onStorageError for metrics", async () => {
		const logged = vi.spyOn(console, "error").mockImplementation(() => {});
		const warned = vi.spyOn(console, "warn").mockImplementation(() => {});
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
		expect(warned).not.toHaveBeenCalled();
	});
});
