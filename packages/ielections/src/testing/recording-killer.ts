import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Killer } from "../killer.ts";

/** One `schedule` call seen by a {@link RecordingKiller}. */
export interface ScheduledKill {
	/** The delay passed to `schedule`; `Infinity` for a `disarm` call. */
	readonly delayMs: number;
	/** `clock.monotonic()` when `schedule` (or `disarm`) was called. */
	readonly at: number;
	/** The reason, or `"disarmed"`. */
	readonly reason: string;
}

/**
 * A fake {@link Killer} for tests: records every deadline (on `clock.monotonic()`) instead of ending
 * the process, and can tell when a real killer would have fired. A `disarm` is recorded as a
 * deadline at infinity, unless the pending deadline had already passed (as the real killer, for
 * which a passed deadline is final).
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
	readonly #clock: Pick<Clock, "monotonic">;
	readonly #scheduled: ScheduledKill[] = [];

	/** @param clock the clock whose `monotonic()` `at` is read from; default the system clock */
	constructor(clock: Pick<Clock, "monotonic"> = systemClock) {
		this.#clock = clock;
	}

	/** Every `schedule` call, in order. */
	get scheduled(): ReadonlyArray<ScheduledKill> {
		return this.#scheduled;
	}

	/**
	 * The pending deadline (monotonic ms), `undefined` before the first `schedule`, `Infinity` once
	 * disarmed.
	 */
	get deadline(): number | undefined {
		const last = this.#scheduled.at(-1);
		return last === undefined ? undefined : last.at + last.delayMs;
	}

	/** `true` when the last call was a `disarm` that took effect. */
	get disarmed(): boolean {
		return this.deadline === Number.POSITIVE_INFINITY;
	}

	schedule(delayMs: number, reason: string): void {
		if (typeof delayMs !== "number" || Number.isNaN(delayMs) || delayMs < 0)
			throw new RangeError(`[@vvm/ielections] killer delay must be >= 0, got ${String(delayMs)}`);
		this.#scheduled.push({ delayMs, at: this.#clock.monotonic(), reason });
	}

	disarm(): void {
		const now = this.#clock.monotonic();
		const pending = this.deadline;
		if (pending !== undefined && pending <= now) return; // passed: final
		this.#scheduled.push({ delayMs: Number.POSITIVE_INFINITY, at: now, reason: "disarmed" });
	}

	/**
	 * When a real killer would have ended the process, in clock ms: the first deadline that was
	 * reached (by a later `schedule` call or by `now`) before being replaced; `undefined` if none.
	 */
	firedAt(now: number = this.#clock.monotonic()): number | undefined {
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
