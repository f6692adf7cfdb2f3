import type { Clock, TimerHandle, TimerOptions } from "./clock.ts";
import { checkDelay, sleepWith } from "./clock.ts";

// Node's setTimeout overflows above 2^31-1 ms (about 24.8 days) and then fires at once; a
// leadership of ten years (as voedger's integration harness uses) renews every 2.5 years.
const MAX_NODE_DELAY = 2_147_483_647;

function setLongTimer(delayMs: number, callback: () => void, options?: TimerOptions): TimerHandle {
	checkDelay(delayMs);
	// The chained deadline is monotonic: a wall-clock step must not shorten or stretch it.
	const deadline = performance.now() + delayMs;
	const unref = options?.unref === true;
	let handle: NodeJS.Timeout;
	const arm = (remaining: number): void => {
		handle = setTimeout(
			() => {
				const left = deadline - performance.now();
				if (remaining > MAX_NODE_DELAY && left > 0) arm(left);
				else callback();
			},
			Math.min(remaining, MAX_NODE_DELAY),
		);
		if (unref) handle.unref();
	};
	arm(delayMs);
	return { cancel: () => clearTimeout(handle) };
}

/**
 * The real clock: `Date.now()` for wall time, `performance.now()` (monotonic, process-relative) for
 * deadlines, and Node timers (delays longer than 24.8 days are supported).
 *
 * @example
 * ```ts
 * const elections = createElections(storage, { clock: systemClock });
 * ```
 */
export const systemClock: Clock = Object.freeze({
	now: (): number => Date.now(),
	monotonic: (): number => performance.now(),
	setTimer: setLongTimer,
	sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
		return sleepWith(systemClock, delayMs, signal);
	},
});
