import type { Clock, TimerHandle } from "./clock.ts";
import { checkDelay, sleepWith } from "./clock.ts";

// Node's setTimeout overflows above 2^31-1 ms (about 24.8 days) and then fires at once; a
// leadership of ten years (as voedger's integration harness uses) renews every 2.5 years.
const MAX_NODE_DELAY = 2_147_483_647;

function setLongTimer(delayMs: number, callback: () => void): TimerHandle {
	checkDelay(delayMs);
	const deadline = Date.now() + delayMs;
	let handle: NodeJS.Timeout;
	const arm = (remaining: number): void => {
		handle = setTimeout(
			() => {
				const left = deadline - Date.now();
				if (remaining > MAX_NODE_DELAY && left > 0) arm(left);
				else callback();
			},
			Math.min(remaining, MAX_NODE_DELAY),
		);
	};
	arm(delayMs);
	return { cancel: () => clearTimeout(handle) };
}

/**
 * The real clock: `Date.now()` and Node timers (delays longer than 24.8 days are supported).
 *
 * @example
 * ```ts
 * const elections = createElections(storage, { clock: systemClock });
 * ```
 */
export const systemClock: Clock = Object.freeze({
	now: (): number => Date.now(),
	setTimer: setLongTimer,
	sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
		return sleepWith(systemClock, delayMs, signal);
	},
});
