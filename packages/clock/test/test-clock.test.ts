import { describe, expect, it } from "vitest";
import type { Clock } from "../src/index.ts";
import { isTestClock, lateTimers, MockClock, systemClock, TEST_CLOCK } from "../src/index.ts";

describe("the test-clock mark", () => {
	it("marks MockClock, not systemClock nor a hand-made wall clock", () => {
		const wall: Clock = { ...systemClock, now: () => Date.now() + 25_000 };
		expect({
			mock: isTestClock(new MockClock()),
			system: isTestClock(systemClock),
			wall: isTestClock(wall),
			nothing: [undefined, null, 7, "clock", {}].map(isTestClock),
		}).toEqual({
			mock: true,
			system: false,
			wall: false,
			nothing: [false, false, false, false, false],
		});
	});

	it("passes through lateTimers over a test clock, and only over one", () => {
		expect(isTestClock(lateTimers(new MockClock(), () => 5))).toBe(true);
		expect(isTestClock(lateTimers(systemClock, () => 5))).toBe(false);
	});

	it("is a registered symbol: a clock of another copy of the package is recognised", () => {
		expect(TEST_CLOCK).toBe(Symbol.for("@vvm/clock.testClock"));
		const own: Clock & { [TEST_CLOCK]: true } = { ...systemClock, [TEST_CLOCK]: true };
		expect(isTestClock(own)).toBe(true);
		expect(isTestClock({ [TEST_CLOCK]: "yes" })).toBe(false);
	});
});
