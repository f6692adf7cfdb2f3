import { describe, expect, it } from "vitest";
import { lateTimers, MockClock } from "../src/index.ts";

describe("lateTimers", () => {
	it("reads the base clock, and fires each timer and sleep lateMs() after its deadline", async () => {
		const base = new MockClock(1_000);
		const lates = [30, 5];
		const late = lateTimers(base, () => lates.shift() ?? 0);
		expect([late.now(), late.monotonic()]).toEqual([base.now(), base.monotonic()]);
		const fired: number[] = [];
		late.setTimer(100, () => fired.push(base.monotonic()));
		let slept = false;
		void late.sleep(100).then(() => {
			slept = true;
		});
		base.advance(104);
		await Promise.resolve();
		expect([fired, slept]).toEqual([[], false]);
		base.advance(1); // the sleep, 5 ms late
		await Promise.resolve();
		expect(slept).toBe(true);
		base.advance(25); // the timer, 30 ms late
		expect(fired).toEqual([1_130]);
	});

	it("a sleep still rejects when its signal aborts", async () => {
		const late = lateTimers(new MockClock(), () => 10);
		const controller = new AbortController();
		const sleeping = late.sleep(100, controller.signal);
		controller.abort(new Error("stop"));
		await expect(sleeping).rejects.toThrow("stop");
	});
});
