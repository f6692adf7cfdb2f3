import { describe, expect, it, vi } from "vitest";
import { systemClock } from "../src/index.ts";

describe("systemClock", () => {
	it("reads the wall clock", () => {
		const before = Date.now();
		const now = systemClock.now();
		expect(now).toBeGreaterThanOrEqual(before);
		expect(now).toBeLessThanOrEqual(Date.now());
	});

	it("fires a timer once and honours cancel", async () => {
		let count = 0;
		await new Promise<void>((resolve) => {
			systemClock.setTimer(1, () => {
				count++;
				resolve();
			});
		});
		const cancelled = systemClock.setTimer(1, () => count++);
		cancelled.cancel();
		await systemClock.sleep(10);
		expect(count).toBe(1);
	});

	it("sleep rejects with the abort reason", async () => {
		const ac = new AbortController();
		const p = systemClock.sleep(60_000, ac.signal);
		ac.abort(new Error("bye"));
		await expect(p).rejects.toThrow("bye");
	});

	it("supports delays beyond Node's 24.8-day timer limit without firing early", () => {
		vi.useFakeTimers({ now: 0 });
		try {
			let fired = false;
			const year = 365 * 24 * 3600 * 1000;
			systemClock.setTimer(year, () => {
				fired = true;
			});
			vi.advanceTimersByTime(2_147_483_647);
			expect(fired).toBe(false);
			vi.advanceTimersByTime(year - 2_147_483_647 - 1);
			expect(fired).toBe(false);
			vi.advanceTimersByTime(1);
			expect(fired).toBe(true);
		} finally {
			vi.useRealTimers();
		}
	});

	it("rejects bad delays", () => {
		expect(() => systemClock.setTimer(-5, () => {})).toThrow(RangeError);
		expect(() => systemClock.sleep(Number.NaN)).toThrow(RangeError);
	});
});
