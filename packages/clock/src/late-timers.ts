import type { Clock } from "./clock.ts";
import { isTestClock, TEST_CLOCK } from "./clock.ts";

/**
 * `base` whose timers and sleeps fire late by `lateMs()` more milliseconds each (readings are
 * `base`'s), as a busy event loop or a GC pause makes real timers: for tests and simulators over a
 * {@link MockClock}, which fires every timer exactly at its deadline and so hides what happens
 * between a deadline and the timer that acts on it. Over a test clock ({@link TEST_CLOCK}) the
 * result is marked as one too.
 *
 * @example
 * ```ts
 * import { lateTimers, MockClock } from "@vvm/clock";
 * const mock = new MockClock();
 * const busy = lateTimers(mock, () => 30); // every timer 30 ms late
 * ```
 */
export function lateTimers(base: Clock, lateMs: () => number): Clock {
	const late: Clock = {
		now: () => base.now(),
		monotonic: () => base.monotonic(),
		setTimer: (delayMs, callback, options) => base.setTimer(delayMs + lateMs(), callback, options),
		sleep: (delayMs, signal) => base.sleep(delayMs + lateMs(), signal),
	};
	return isTestClock(base) ? Object.assign(late, { [TEST_CLOCK]: true as const }) : late;
}
