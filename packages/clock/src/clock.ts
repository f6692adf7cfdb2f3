/** A cancellable one-shot timer. */
export interface TimerHandle {
	/** Cancels the timer; a no-op once it fired or was cancelled. */
	cancel(): void;
}

/** Options of {@link Clock.setTimer}. */
export interface TimerOptions {
	/**
	 * `true`: the timer alone does not keep the process alive (Node's `timeout.unref()`), for
	 * background housekeeping such as a TTL cleaner. Mock clocks ignore it.
	 */
	readonly unref?: boolean;
}

/**
 * Injectable time: everything in the toolkit that waits or reads the time goes through a `Clock`,
 * so tests drive it with {@link MockClock} instead of sleeping.
 *
 * Two readings, for two purposes:
 * - {@link Clock.monotonic} for every deadline a process keeps for itself (a lease deadline, a
 *   killer target, a retry cap): it never steps, so NTP, a VM resume or an operator setting the
 *   date cannot move such a deadline;
 * - {@link Clock.now} (wall time) only where a time is compared with another host's, such as a
 *   record's expiry that another process reads, and for humans (logs).
 *
 * Timers run on monotonic time.
 *
 * @see voedger pkg/goutils/timeu ITime
 * @example
 * ```ts
 * import { systemClock } from "@vvm/clock";
 * await systemClock.sleep(100);
 * const t = systemClock.setTimer(1_000, () => console.log("fired"));
 * t.cancel();
 * ```
 */
export interface Clock {
	/** Current wall time in milliseconds since the Unix epoch. It may step (NTP, an operator). */
	now(): number;
	/**
	 * Monotonic milliseconds from an arbitrary origin: never steps, meaningful only as a difference
	 * of two readings of the same clock in the same process.
	 */
	monotonic(): number;
	/** Calls `callback` once after `delayMs` (>= 0) of monotonic time. */
	setTimer(delayMs: number, callback: () => void, options?: TimerOptions): TimerHandle;
	/** Resolves after `delayMs`; rejects with `signal.reason` as soon as `signal` aborts. */
	sleep(delayMs: number, signal?: AbortSignal): Promise<void>;
}

/**
 * The mark of a clock made for tests: a clock whose `[TEST_CLOCK]` is `true` declares that its time
 * is not the host's real time ({@link MockClock} carries it, and so does {@link lateTimers} over a
 * marked clock). APIs whose clock option is for tests only (the Redis and PostgreSQL TTL storage
 * drivers, where production expiry is decided by the server's clock) refuse a clock without it, so
 * `systemClock` or a hand-made wall clock cannot end up deciding expiry by each client's own wall
 * clock. A test clock of your own declares itself with `[TEST_CLOCK]: true`.
 *
 * A registered symbol (`Symbol.for`): two copies of this package mark and recognise the same way.
 */
export const TEST_CLOCK: unique symbol = Symbol.for("@vvm/clock.testClock");

/**
 * `true` when `clock` is marked as made for tests ({@link TEST_CLOCK}): a {@link MockClock}, or a
 * clock that declares `[TEST_CLOCK]: true`. `systemClock` is not.
 *
 * @example
 * ```ts
 * isTestClock(new MockClock()); // true
 * isTestClock(systemClock); // false
 * ```
 */
export function isTestClock(clock: unknown): boolean {
	return (
		typeof clock === "object" &&
		clock !== null &&
		(clock as { [TEST_CLOCK]?: unknown })[TEST_CLOCK] === true
	);
}

/** Throws a `RangeError` unless `delayMs` is a finite number >= 0. */
export function checkDelay(delayMs: number): void {
	if (typeof delayMs !== "number" || !Number.isFinite(delayMs) || delayMs < 0) {
		throw new RangeError(
			`[@vvm/clock] delay must be a finite number of milliseconds >= 0, got ${String(delayMs)}`,
		);
	}
}

/**
 * Builds `sleep` on top of a clock's `setTimer`, so both clocks share the abort handling.
 * @internal
 */
export function sleepWith(
	clock: Pick<Clock, "setTimer">,
	delayMs: number,
	signal?: AbortSignal,
): Promise<void> {
	checkDelay(delayMs);
	if (signal?.aborted) return Promise.reject(signal.reason);
	return new Promise<void>((resolve, reject) => {
		const onAbort = (): void => {
			timer.cancel();
			reject(signal?.reason);
		};
		const timer = clock.setTimer(delayMs, () => {
			signal?.removeEventListener("abort", onAbort);
			resolve();
		});
		signal?.addEventListener("abort", onAbort, { once: true });
	});
}
