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
