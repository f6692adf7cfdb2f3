import type { Clock } from "@vvm/clock";
import type { LeaseEvent, SlowLoop } from "./events.ts";

/**
 * Turns the slow runs of one background loop (a run longer than the loop's interval) into at
 * most one `slow-loop` event per lease interval: the first at once, then the longest run and the
 * count since the last event. A storage that is slow stays slow for a while; one warning per
 * lease interval says so without flooding a log.
 * @internal
 */
export class SlowRuns {
	readonly #loop: SlowLoop;
	readonly #intervalMs: number;
	readonly #leaseIntervalMs: number;
	readonly #clock: Clock;
	readonly #emit: (event: LeaseEvent) => void;
	readonly #count: () => void;
	#runs = 0;
	#longestMs = 0;
	#lastReport: number | undefined;

	constructor(options: {
		readonly loop: SlowLoop;
		readonly intervalMs: number;
		readonly leaseIntervalMs: number;
		readonly clock: Clock;
		readonly emit: (event: LeaseEvent) => void;
		/** Counts every slow run (the node's metrics). */
		readonly count: () => void;
	}) {
		this.#loop = options.loop;
		this.#intervalMs = options.intervalMs;
		this.#leaseIntervalMs = options.leaseIntervalMs;
		this.#clock = options.clock;
		this.#emit = options.emit;
		this.#count = options.count;
	}

	/** One run of the loop took `durationMs` (monotonic); reports it when it was slow. */
	record(durationMs: number): void {
		if (durationMs <= this.#intervalMs) return;
		this.#count();
		this.#runs++;
		this.#longestMs = Math.max(this.#longestMs, durationMs);
		const now = this.#clock.monotonic();
		if (this.#lastReport !== undefined && now - this.#lastReport < this.#leaseIntervalMs) return;
		this.#lastReport = now;
		this.#emit({
			type: "slow-loop",
			at: this.#clock.now(),
			loop: this.#loop,
			durationMs: this.#longestMs,
			runs: this.#runs,
			intervalMs: this.#intervalMs,
			leaseIntervalMs: this.#leaseIntervalMs,
		});
		this.#runs = 0;
		this.#longestMs = 0;
	}
}
