/** A cancellable one-shot timer. */
export interface TimerHandle {
	/** Cancels the timer; a no-op once it fired or was cancelled. */
	cancel(): void;
}

/**
 * Injectable time: everything in the toolkit that waits or reads the time goes through a `Clock`,
 * so tests drive it with {@link MockClock} instead of sleeping.
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
	/** Current wall time in milliseconds since the Unix epoch. */
	now(): number;
	/** Calls `callback` once after `delayMs` (>= 0). */
	setTimer(delayMs: number, callback: () => void): TimerHandle;
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
