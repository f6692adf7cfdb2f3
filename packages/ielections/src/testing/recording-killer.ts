import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Killer } from "../killer.ts";

/** One `schedule` call seen by a {@link RecordingKiller}. */
export interface ScheduledKill {
	/** The delay passed to `schedule`. */
	readonly delayMs: number;
	/** Clock ms when `schedule` was called. */
	readonly at: number;
	readonly reason: string;
}

/**
 * A fake {@link Killer} for tests: records every deadline instead of ending the process, and can
 * tell when a real killer would have fired.
 *
 * @example
 * ```ts
 * const killer = new RecordingKiller(clock);
 * const elections = createElections(storage, { clock, killer });
 * await elections.acquireLeadership("k", "v", 20);
 * killer.scheduled[0]?.delayMs; // 16_000
 * ```
 */
export class RecordingKiller implements Killer {
	readonly #clock: Pick<Clock, "now">;
	readonly #scheduled: ScheduledKill[] = [];

	/** @param clock the clock `at` is read from; default the system clock */
	constructor(clock: Pick<Clock, "now"> = systemClock) {
		this.#clock = clock;
	}

	/** Every `schedule` call, in order. */
	get scheduled(): ReadonlyArray<ScheduledKill> {
		return this.#scheduled;
	}

	/** The pending deadline (clock ms), or `undefined` before the first `schedule`. */
	get deadline(): number | undefined {
		const last = this.#scheduled.at(-1);
		return last === undefined ? undefined : last.at + last.delayMs;
	}

	schedule(delayMs: number, reason: string): void {
		if (typeof delayMs !== "number" || Number.isNaN(delayMs) || delayMs < 0)
			throw new RangeError(`[@vvm/ielections] killer delay must be >= 0, got ${String(delayMs)}`);
		this.#scheduled.push({ delayMs, at: this.#clock.now(), reason });
	}

	/**
	 * When a real killer would have ended the process, in clock ms: the first deadline that was
	 * reached (by a later `schedule` call or by `now`) before being replaced; `undefined` if none.
	 */
	firedAt(now: number = this.#clock.now()): number | undefined {
		for (let i = 0; i < this.#scheduled.length; i++) {
			const s = this.#scheduled[i] as ScheduledKill;
			const deadline = s.at + s.delayMs;
			const replacedAt = this.#scheduled[i + 1]?.at ?? now;
			if (deadline <= replacedAt) return deadline;
		}
		return undefined;
	}

	/** Forgets the recorded calls. */
	clear(): void {
		this.#scheduled.length = 0;
	}
}
