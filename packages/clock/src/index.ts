export { type Clock, checkDelay, type TimerHandle } from "./clock.ts";
export { MockClock, type MockTimerInfo } from "./mock-clock.ts";
export { systemClock } from "./system-clock.ts";
