export {
	type Clock,
	checkDelay,
	isTestClock,
	TEST_CLOCK,
	type TimerHandle,
	type TimerOptions,
} from "./clock.ts";
export { lateTimers } from "./late-timers.ts";
export { MockClock, type MockTimerInfo } from "./mock-clock.ts";
export { systemClock } from "./system-clock.ts";
