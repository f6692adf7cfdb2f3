import type { Clock, TimerHandle, TimerOptions } from "@vvm/clock";

/**
 * One host's view of a shared test clock: the same monotonic time and timers, a wall clock
 * `offsetMs` away (`stepWall` moves it, as NTP or an operator would). Gives each simulated host
 * its own clock skew over one `MockClock`.
 *
 * @example
 * ```ts
 * const base = new MockClock();
 * const behind = new SkewedClock(base, -200); // 200 ms behind
 * behind.stepWall(+100);                       // now 100 ms behind
 * ```
 */
export class SkewedClock implements Clock {
	readonly #base: Clock;
	#offset: number;

	constructor(base: Clock, offsetMs = 0) {
		this.#base = base;
		this.#offset = offsetMs;
	}

	/** Current offset of this wall clock from the base's. */
	get offsetMs(): number {
		return this.#offset;
	}

	/** Steps this wall clock by `deltaMs` (negative = backwards); monotonic time does not move. */
	stepWall(deltaMs: number): void {
		this.#offset += deltaMs;
	}

	now(): number {
		return this.#base.now() + this.#offset;
	}

	monotonic(): number {
		return this.#base.monotonic();
	}

	setTimer(delayMs: number, callback: () => void, options?: TimerOptions): TimerHandle {
		return this.#base.setTimer(delayMs, callback, options);
	}

	sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
		return this.#base.sleep(delayMs, signal);
	}
}
