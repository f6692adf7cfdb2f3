import { describe, expect, it } from "vitest";
import {
	FIRST_SERVE_CAP_MS,
	FIRST_SERVE_QUIET_MS,
	FirstServeWait,
	firstServeText,
} from "../src/first-serve.ts";

describe("FirstServeWait", () => {
	it("gives up after the quiet period without progress", () => {
		const wait = new FirstServeWait(8, 1_000);
		expect(wait.expired(1_000 + FIRST_SERVE_QUIET_MS)).toBe(false);
		expect(wait.expired(1_000 + FIRST_SERVE_QUIET_MS + 1)).toBe(true);
	});

	it("keeps waiting while leases are granted or partitions served, up to the cap", () => {
		const wait = new FirstServeWait(8, 0);
		// A grant every 60 s: never quiet for 90 s, so only the cap ends the wait.
		for (let t = 60_000; t < FIRST_SERVE_CAP_MS; t += 60_000) {
			wait.progress(t, t === 60_000 ? 3 : undefined);
			expect(wait.expired(t + 1)).toBe(false);
		}
		expect(wait.expired(FIRST_SERVE_CAP_MS + 1)).toBe(true);
		expect(wait.state(FIRST_SERVE_CAP_MS + 1)).toEqual({
			done: 3,
			target: 8,
			waitedMs: FIRST_SERVE_CAP_MS + 1,
			quietMs: FIRST_SERVE_CAP_MS + 1 - 240_000,
		});
	});

	it("is complete at the target, and never expires then", () => {
		const wait = new FirstServeWait(2, 0);
		wait.progress(10, 2);
		wait.progress(20, 1); // a count never goes down
		expect(wait.complete).toBe(true);
		expect(wait.expired(FIRST_SERVE_CAP_MS * 2)).toBe(false);
	});

	it("rejects a target that is not a positive integer", () => {
		expect(() => new FirstServeWait(0, 0)).toThrow(/target must be an integer >= 1, got 0/);
	});

	it("says where the wait stands", () => {
		expect(firstServeText({ done: 5, target: 8, waitedMs: 62_400, quietMs: 4_000 }, true)).toBe(
			"5 of 8 partitions served at least once after 62 s; the last progress 4 s ago",
		);
		expect(firstServeText({ done: 1, target: 2, waitedMs: 91_000, quietMs: 90_600 }, false)).toBe(
			"1 of 2 slots with a leader after 91 s; the last progress 91 s ago",
		);
	});
});
