// checkCpAdmission: the rules of the admission bounds that a host checks before any I/O and the
// constructor applies (README, "Admission").

import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import {
	checkCpAdmission,
	createCommandProcessor,
	DEFAULT_QUEUE_WAIT_TARGET_MS,
} from "../src/index.ts";

describe("checkCpAdmission", () => {
	it("fills the defaults: 5 s bound, 500 ms standing-queue target, 1 s read wait", () => {
		expect(checkCpAdmission({})).toEqual({
			maxQueueWaitMs: 5000,
			queueWaitTargetMs: DEFAULT_QUEUE_WAIT_TARGET_MS,
			readWaitMs: 1000,
		});
		expect(DEFAULT_QUEUE_WAIT_TARGET_MS).toBe(500);
	});

	it("lowers the default target to a lower maxQueueWaitMs; a given target stays as given", () => {
		expect(checkCpAdmission({ maxQueueWaitMs: 100 }).queueWaitTargetMs).toBe(100);
		expect(checkCpAdmission({ queueWaitTargetMs: 5000 }).queueWaitTargetMs).toBe(5000);
		expect(checkCpAdmission({ queueWaitTargetMs: 0 }).queueWaitTargetMs).toBe(0);
	});

	it.each([
		[{ maxQueueWaitMs: 0 }, "--max must be an integer in 1..2147483647, got 0"],
		[{ readWaitMs: -1 }, "--read must be an integer in 0..2147483647, got -1"],
		[{ readWaitMs: 2 ** 31 }, "--read must be an integer in 0..2147483647, got 2147483648"],
		[{ queueWaitTargetMs: 1.5 }, "--target must be an integer in 0..2147483647, got 1.5"],
		[{ maxQueueWaitMs: 40, queueWaitTargetMs: 50 }, "--target 50 must be at most --max (40)"],
	])("refuses %j naming the setting as the caller calls it", (admission, message) => {
		const names = { maxQueueWaitMs: "--max", queueWaitTargetMs: "--target", readWaitMs: "--read" };
		expect(() => checkCpAdmission(admission, (s) => names[s])).toThrow(RangeError);
		expect(() => checkCpAdmission(admission, (s) => names[s])).toThrow(message);
	});

	it("is what the constructor applies", () => {
		const storage = createMemTTLStorage();
		expect(() =>
			createCommandProcessor({ storage, appId: 1, partitions: 1, readWaitMs: 2 ** 31 }),
		).toThrow("readWaitMs must be an integer in 0..2147483647");
	});
});
