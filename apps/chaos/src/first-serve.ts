/**
 * How long a run waits for its first leaders (every slot, or every partition served once) before
 * it ends as `no-leader`.
 *
 * A fixed deadline was wrong on a loaded machine: with both chaos series and the release
 * rehearsal side by side on CI's 2 cores, a storage round trip took up to 2 s, and the 2 s leases
 * of a commands run lapsed and were granted again several times before every partition had been
 * served once (68 s in a passing run, over 90 s in a failing one; CI now runs the series one after
 * the other). Waiting is right while the cluster makes progress and wrong once it has stopped:
 * the run ends after {@link FIRST_SERVE_QUIET_MS} without progress, or {@link FIRST_SERVE_CAP_MS}
 * in all.
 */

/** The run ends as `no-leader` after this long without progress (no grant, no slot, no partition). */
export const FIRST_SERVE_QUIET_MS = 90_000;
/** ... and after this long in all, progress or not. */
export const FIRST_SERVE_CAP_MS = 300_000;

/** Where the wait stands: for the progress line and a `no-leader` summary. */
export interface FirstServeState {
	/** Slots with a leader, or partitions served at least once, so far. */
	readonly done: number;
	/** How many the run waits for. */
	readonly target: number;
	/** Since the wait began, ms. */
	readonly waitedMs: number;
	/** Since the last progress (or the start), ms. */
	readonly quietMs: number;
}

/**
 * The wait for a run's first leaders, on a monotonic clock the caller passes in.
 *
 * @example
 * ```ts
 * const wait = new FirstServeWait(8, monoMs());
 * wait.progress(monoMs()); // a lease granted, a slot acquired, a partition served
 * if (wait.expired(monoMs())) stopReason = "no-leader";
 * ```
 */
export class FirstServeWait {
	readonly #target: number;
	readonly #started: number;
	#lastProgress: number;
	#done = 0;

	constructor(target: number, nowMs: number) {
		if (!Number.isInteger(target) || target < 1)
			throw new RangeError(`FirstServeWait: target must be an integer >= 1, got ${target}`);
		this.#target = target;
		this.#started = nowMs;
		this.#lastProgress = nowMs;
	}

	/** Something moved: a lease granted, or `done` slots / partitions reached (never counts down). */
	progress(nowMs: number, done?: number): void {
		this.#lastProgress = Math.max(this.#lastProgress, nowMs);
		if (done !== undefined) this.#done = Math.max(this.#done, done);
	}

	/** Every slot has a leader, or every partition was served once. */
	get complete(): boolean {
		return this.#done >= this.#target;
	}

	/** Nothing moved for {@link FIRST_SERVE_QUIET_MS}, or the cap passed, and the wait is not complete. */
	expired(nowMs: number): boolean {
		if (this.complete) return false;
		return (
			nowMs - this.#lastProgress > FIRST_SERVE_QUIET_MS ||
			nowMs - this.#started > FIRST_SERVE_CAP_MS
		);
	}

	state(nowMs: number): FirstServeState {
		return {
			done: this.#done,
			target: this.#target,
			waitedMs: nowMs - this.#started,
			quietMs: nowMs - this.#lastProgress,
		};
	}
}

/** How often a long wait for the first leaders says where it stands. */
export const FIRST_SERVE_PROGRESS_MS = 30_000;

/**
 * Where a wait stands, for a person.
 *
 * @example
 * ```ts
 * firstServeText({ done: 5, target: 8, waitedMs: 62_000, quietMs: 4_000 }, true);
 * // "5 of 8 partitions served at least once after 62 s; the last progress 4 s ago"
 * ```
 */
export function firstServeText(s: FirstServeState, partitions: boolean): string {
	const what = partitions ? "partitions served at least once" : "slots with a leader";
	return `${s.done} of ${s.target} ${what} after ${Math.round(s.waitedMs / 1000)} s; the last progress ${Math.round(s.quietMs / 1000)} s ago`;
}
