import { describe, expect, it } from "vitest";
import { MockClock } from "../src/index.ts";

describe("MockClock", () => {
	it("keeps time frozen until advanced", async () => {
		const clock = new MockClock(1_000);
		await new Promise((r) => setTimeout(r, 5));
		expect(clock.now()).toBe(1_000);
		clock.advance(60_000);
		expect(clock.now()).toBe(61_000);
	});

	it("steps the wall clock without moving monotonic time or firing timers", () => {
		const clock = new MockClock(1_000);
		expect(clock.monotonic()).toBe(1_000);
		const fired: number[] = [];
		clock.setTimer(500, () => fired.push(clock.monotonic()));
		clock.stepWall(20_000);
		expect({ now: clock.now(), mono: clock.monotonic(), fired }).toEqual({
			now: 21_000,
			mono: 1_000,
			fired: [],
		});
		clock.stepWall(-30_000);
		clock.advance(500);
		expect({ now: clock.now(), mono: clock.monotonic(), fired }).toEqual({
			now: -8_500,
			mono: 1_500,
			fired: [1_500],
		});
		expect(() => clock.stepWall(Number.NaN)).toThrow(RangeError);
	});

	it("fires only timers whose deadline is <= now, in deadline order", () => {
		const clock = new MockClock(0);
		const fired: string[] = [];
		clock.setTimer(125, () => fired.push(`b@${clock.now()}`));
		clock.setTimer(123, () => fired.push(`a@${clock.now()}`));
		clock.setTimer(123, () => fired.push(`a2@${clock.now()}`));
		clock.advance(122);
		expect(fired).toEqual([]);
		clock.advance(1);
		expect(fired).toEqual(["a@123", "a2@123"]);
		clock.advance(1);
		expect(fired).toEqual(["a@123", "a2@123"]);
		clock.advance(1);
		expect(fired).toEqual(["a@123", "a2@123", "b@125"]);
		expect(clock.pendingTimers).toBe(0);
	});

	it("fires a big advance's timers once and in order", () => {
		const clock = new MockClock(0);
		const fired: number[] = [];
		for (const d of [30, 10, 20]) clock.setTimer(d, () => fired.push(d));
		clock.advance(1_000);
		expect(fired).toEqual([10, 20, 30]);
	});

	it("does not fire timers armed during an advance retroactively", () => {
		const clock = new MockClock(0);
		const fired: string[] = [];
		clock.setTimer(10, () => {
			fired.push("outer");
			clock.setTimer(0, () => fired.push("inner"));
		});
		clock.advance(100);
		expect(fired).toEqual(["outer"]);
		expect(clock.pendingTimers).toBe(1);
		clock.advance(0);
		expect(fired).toEqual(["outer", "inner"]);
	});

	it("a zero-delay timer waits for the next advance", () => {
		const clock = new MockClock(0);
		let fired = false;
		clock.setTimer(0, () => {
			fired = true;
		});
		expect(fired).toBe(false);
		clock.advance(0);
		expect(fired).toBe(true);
	});

	it("cancelled timers never fire", () => {
		const clock = new MockClock(0);
		let fired = false;
		const t = clock.setTimer(5, () => {
			fired = true;
		});
		t.cancel();
		t.cancel();
		clock.advance(10);
		expect(fired).toBe(false);
		expect(clock.pendingTimers).toBe(0);
	});

	it("sleep resolves on advance and rejects with the abort reason", async () => {
		const clock = new MockClock(0);
		const done = clock.sleep(50);
		clock.advance(50);
		await expect(done).resolves.toBeUndefined();

		const ac = new AbortController();
		const aborted = clock.sleep(50, ac.signal);
		ac.abort(new Error("stop"));
		await expect(aborted).rejects.toThrow("stop");
		expect(clock.pendingTimers).toBe(0);

		await expect(clock.sleep(1, ac.signal)).rejects.toThrow("stop");
	});

	it("nextTimerArmed resolves with the timer's delay and deadline", async () => {
		const clock = new MockClock(100);
		const armed = clock.nextTimerArmed();
		clock.setTimer(40, () => {});
		await expect(armed).resolves.toEqual({ delayMs: 40, deadline: 140 });
	});

	it("setOnNextTimerArmed is one-shot", () => {
		const clock = new MockClock(0);
		const seen: number[] = [];
		clock.setOnNextTimerArmed((info) => seen.push(info.delayMs));
		clock.setTimer(1, () => {});
		clock.setTimer(2, () => {});
		expect(seen).toEqual([1]);
	});

	it("fireNextTimerImmediately fires only the next timer, without an advance", async () => {
		const clock = new MockClock(0);
		clock.fireNextTimerImmediately();
		const fired: number[] = [];
		clock.setTimer(1_000, () => fired.push(1));
		clock.setTimer(1_000, () => fired.push(2));
		expect(fired).toEqual([]);
		await Promise.resolve();
		expect(fired).toEqual([1]);
		expect(clock.now()).toBe(0);
		expect(clock.pendingTimers).toBe(1);
	});

	it("advanceAsync runs chained sleeps to completion", async () => {
		const clock = new MockClock(0);
		const steps: number[] = [];
		const chain = (async () => {
			await clock.sleep(10);
			steps.push(clock.now());
			await clock.sleep(10);
			steps.push(clock.now());
		})();
		await clock.advanceAsync(25);
		await chain;
		expect(steps).toEqual([10, 20]);
		expect(clock.now()).toBe(25);
	});

	it("waitForTimers resolves once enough timers are armed", async () => {
		const clock = new MockClock(0);
		const waiting = clock.waitForTimers(2);
		clock.setTimer(1, () => {});
		let resolved = false;
		void waiting.then(() => {
			resolved = true;
		});
		await Promise.resolve();
		expect(resolved).toBe(false);
		clock.setTimer(1, () => {});
		await waiting;
		expect(clock.pendingTimers).toBe(2);
	});

	it("rethrows the first callback error after firing every due timer", () => {
		const clock = new MockClock(0);
		const fired: number[] = [];
		clock.setTimer(1, () => {
			throw new Error("first");
		});
		clock.setTimer(2, () => fired.push(2));
		expect(() => clock.advance(5)).toThrow("first");
		expect(fired).toEqual([2]);
	});

	it("instances are independent", () => {
		const a = new MockClock(0);
		const b = new MockClock(0);
		let fired = false;
		b.setTimer(1, () => {
			fired = true;
		});
		a.advance(10);
		expect(fired).toBe(false);
		expect(b.now()).toBe(0);
	});

	it("rejects bad delays before arming anything", () => {
		const clock = new MockClock(0);
		for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
			expect(() => clock.setTimer(bad, () => {})).toThrow(RangeError);
			expect(() => clock.advance(bad)).toThrow(RangeError);
		}
		expect(clock.pendingTimers).toBe(0);
		expect(() => new MockClock(Number.NaN)).toThrow(RangeError);
	});

	it("describes itself", () => {
		const clock = new MockClock(0);
		clock.setTimer(1, () => {});
		expect(String(clock)).toBe(
			"MockClock{now=1970-01-01T00:00:00.000Z, monotonic=0, timers=1, fireNextTimerImmediately=false}",
		);
	});
});
