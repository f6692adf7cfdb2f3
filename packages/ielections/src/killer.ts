/**
 * Ends the process when a leadership deadline passes. `schedule` replaces the pending deadline
 * (`delayMs` from now, on monotonic time): the process must be dead by then. A deadline is never
 * cancelled because a leadership was lost: code may keep running after its signal aborts, so only
 * the end of the process is a guarantee. Elections call `disarm` only after a voluntary release
 * (`releaseLeadership`, `cleanup`) of every key they hold, when nothing acts as leader any more.
 *
 * Production code uses {@link processKiller}; tests use `RecordingKiller` from
 * `@vvm/ielections/testing`.
 *
 * @example
 * ```ts
 * const killer: Killer = { schedule: (delayMs, reason) => console.log(delayMs, reason) };
 * const elections = createElections(storage, { killer });
 * ```
 */
export interface Killer {
	/** Sets the deadline to `delayMs` from now, replacing the pending one. */
	schedule(delayMs: number, reason: string): void;
	/**
	 * Cancels the pending deadline, unless it has already passed (a passed deadline is final). A
	 * killer without `disarm` stays armed after a voluntary release.
	 */
	disarm?(): void;
}
