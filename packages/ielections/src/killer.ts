/**
 * Ends the process when a leadership deadline passes. `schedule` replaces the pending deadline
 * (`delayMs` from now); a deadline is never cancelled while the process lives: code may keep
 * running after a leadership signal aborts, so only the end of the process is a guarantee.
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
}
