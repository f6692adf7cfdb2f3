import type { Clock, TimerHandle, TimerOptions } from "./clock.ts";
import { checkDelay, sleepWith, TEST_CLOCK } from "./clock.ts";

/** What a test learns about a timer when it is armed. */
export interface MockTimerInfo {
	/** Delay the timer was created with, in ms. */
	readonly delayMs: number;
	/** Mock monotonic time at which it fires. */
	readonly deadline: number;
}

interface MockTimer extends MockTimerInfo {
	readonly seq: number;
	readonly callback: () => void;
	active: boolean;
}

/**
 * A deterministic clock for tests, a port of voedger's MockTime: time moves only on
 * {@link MockClock.advance}, which fires every timer whose deadline is `<= now` in deadline order
 * (ties in creation order). Timers armed while an advance is firing are not fired by that advance,
 * even when already due. One-shot hooks let a test wait for a background loop to arm its next
 * timer instead of sleeping. Instances are independent.
 *
 * Both readings start at `startMs` and move together on `advance`; {@link MockClock.stepWall}
 * steps the wall clock alone (as NTP or an operator would), leaving monotonic time and every timer
 * where they are.
 *
 * @see voedger pkg/goutils/testingu MockTime
 * @example
 * ```ts
 * const clock = new MockClock();
 * const armed = clock.nextTimerArmed();
 * startRenewalLoop(clock);
 * await armed;            // the loop is now waiting on its timer
 * clock.advance(5_000);   // fire it
 * ```
 */
export class MockClock implements Clock {
	static {
		// Marks every MockClock as made for tests (see TEST_CLOCK, isTestClock): on the prototype,
		// not enumerable, so it adds nothing to an instance's own keys.
		Object.defineProperty(MockClock.prototype, TEST_CLOCK, { value: true });
	}

	/** Monotonic time; timers run on it. */
	#now: number;
	/** Wall time minus monotonic time: changed only by {@link MockClock.stepWall}. */
	#wallOffset = 0;
	#seq = 0;
	#timers: MockTimer[] = [];
	#fireNextImmediately = false;
	#armedHooks: Array<(info: MockTimerInfo) => void> = [];

	/** @param startMs initial time in ms since the epoch; defaults to the real current time */
	constructor(startMs: number = Date.now()) {
		if (!Number.isFinite(startMs))
			throw new RangeError(`[@vvm/clock] startMs must be finite, got ${startMs}`);
		this.#now = startMs;
	}

	now(): number {
		return this.#now + this.#wallOffset;
	}

	monotonic(): number {
		return this.#now;
	}

	/**
	 * Steps the wall clock by `deltaMs` (negative = backwards) without moving monotonic time or
	 * firing any timer: what an NTP step or `date -s` does to a real host.
	 */
	stepWall(deltaMs: number): void {
		if (!Number.isFinite(deltaMs))
			throw new RangeError(`[@vvm/clock] stepWall needs a finite number of ms, got ${deltaMs}`);
		this.#wallOffset += deltaMs;
	}

	setTimer(delayMs: number, callback: () => void, _options?: TimerOptions): TimerHandle {
		checkDelay(delayMs);
		const timer: MockTimer = {
			delayMs,
			deadline: this.#now + delayMs,
			seq: this.#seq++,
			callback,
			active: true,
		};
		const handle: TimerHandle = {
			cancel: () => {
				timer.active = false;
				this.#timers = this.#timers.filter((t) => t !== timer);
			},
		};
		const hooks = this.#armedHooks;
		this.#armedHooks = [];
		for (const hook of hooks) hook({ delayMs, deadline: timer.deadline });
		if (this.#fireNextImmediately) {
			// Fired asynchronously so the caller finishes arming before its callback runs.
			this.#fireNextImmediately = false;
			queueMicrotask(() => {
				if (timer.active) {
					timer.active = false;
					callback();
				}
			});
			return handle;
		}
		this.#timers.push(timer);
		return handle;
	}

	sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
		return sleepWith(this, delayMs, signal);
	}

	/**
	 * Moves time forward by `ms` and synchronously fires, in deadline order, every timer that is
	 * due at the new time. `advance(0)` fires timers armed with a zero delay.
	 * If callbacks throw, all due timers still fire and the first error is rethrown.
	 */
	advance(ms: number): void {
		checkDelay(ms);
		this.#now += ms;
		const due = this.#timers
			.filter((t) => t.deadline <= this.#now)
			.sort((a, b) => a.deadline - b.deadline || a.seq - b.seq);
		this.#timers = this.#timers.filter((t) => t.deadline > this.#now);
		let firstError: unknown;
		let failed = false;
		for (const timer of due) {
			if (!timer.active) continue;
			timer.active = false;
			try {
				timer.callback();
			} catch (error) {
				if (!failed) firstError = error;
				failed = true;
			}
		}
		if (failed) throw firstError;
	}

	/**
	 * Advances to each pending deadline up to `now + ms` in turn, letting promise continuations
	 * run between timers, so chains such as `await sleep(a); await sleep(b)` complete within one
	 * call. Work that waits on real I/O still needs a hook such as {@link MockClock.nextTimerArmed}.
	 */
	async advanceAsync(ms: number): Promise<void> {
		checkDelay(ms);
		const target = this.#now + ms;
		await settle();
		for (;;) {
			const next = this.nextDeadline();
			if (next === undefined || next > target) break;
			this.advance(next - this.#now);
			await settle();
		}
		this.advance(target - this.#now);
		await settle();
	}

	/** Number of armed timers that have not fired or been cancelled. */
	get pendingTimers(): number {
		return this.#timers.length;
	}

	/** Deadline of the earliest armed timer, or `undefined` when none. */
	nextDeadline(): number | undefined {
		let min: number | undefined;
		for (const t of this.#timers) if (min === undefined || t.deadline < min) min = t.deadline;
		return min;
	}

	/** One-shot: the next timer armed fires right away (on the next microtask) instead of waiting. */
	fireNextTimerImmediately(): void {
		this.#fireNextImmediately = true;
	}

	/**
	 * One-shot hook: `hook` runs synchronously when the next timer is armed, before it is
	 * registered. It must not arm timers itself.
	 */
	setOnNextTimerArmed(hook: (info: MockTimerInfo) => void): void {
		this.#armedHooks.push(hook);
	}

	/** Resolves when the next timer is armed: the point where a background loop starts waiting. */
	nextTimerArmed(): Promise<MockTimerInfo> {
		return new Promise((resolve) => this.setOnNextTimerArmed(resolve));
	}

	/**
	 * Resolves once at least `count` timers are pending, checking after each armed timer.
	 */
	async waitForTimers(count: number): Promise<void> {
		while (this.pendingTimers < count) await this.nextTimerArmed();
	}

	toString(): string {
		return `MockClock{now=${new Date(this.now()).toISOString()}, monotonic=${this.#now}, timers=${this.#timers.length}, fireNextTimerImmediately=${this.#fireNextImmediately}}`;
	}
}

/** Lets pending promise continuations and immediates run. */
async function settle(): Promise<void> {
	for (let i = 0; i < 3; i++) await new Promise<void>((resolve) => setImmediate(resolve));
}
