/** The leadership timings of seed 001, as fractions of the leadership duration. */
export interface LeadershipTimings {
	/** Renewal tick interval: `duration * 0.25`. */
	readonly renewFraction: number;
	/** Pause between compare-and-swap attempts after a storage error: `duration * 0.05`. */
	readonly retryFraction: number;
	/** Extra attempts after the first failed one in a tick: 2 (3 attempts in all). */
	readonly maxRetries: number;
	/** Killer deadline set on acquisition and after each successful renewal: `duration * 0.8`. */
	readonly killerAfterRenewal: number;
	/** Killer deadline set before each compare-and-swap attempt: `duration * 0.75`. */
	readonly killerBeforeCAS: number;
	/**
	 * Beyond seed 001: no killer deadline falls later than `expiry - duration * killerMargin`, where
	 * expiry is the last written record's send time + `duration`: `duration * 0.025`.
	 */
	readonly killerMargin: number;
}

/**
 * The timings of seed 001 (voedger `arch-vvm-orch`): renew every `d/4`, retry a failed
 * compare-and-swap up to 2 more times `d/20` apart, killer at `0.8 d` on acquisition and after
 * each successful renewal, and at `0.75 d` before each compare-and-swap; plus our margin: no killer
 * deadline later than `0.025 d` before the last written record expires.
 *
 * @example
 * ```ts
 * const renewEveryMs = 20 * 1000 * LEADERSHIP_TIMINGS.renewFraction; // 5000 for 20 s
 * ```
 */
export const LEADERSHIP_TIMINGS: {
	readonly renewFraction: 0.25;
	readonly retryFraction: 0.05;
	readonly maxRetries: 2;
	readonly killerAfterRenewal: 0.8;
	readonly killerBeforeCAS: 0.75;
	readonly killerMargin: 0.025;
} = Object.freeze({
	renewFraction: 0.25,
	retryFraction: 0.05,
	maxRetries: 2,
	killerAfterRenewal: 0.8,
	killerBeforeCAS: 0.75,
	killerMargin: 0.025,
} as const);

/** Longest leadership duration in seconds (365 days, the storage TTL limit). */
export const MAX_LEADERSHIP_SECONDS = 31_536_000;

/** Throws a `RangeError` unless `durationSeconds` is an integer in `1..31_536_000`. */
export function validateDuration(durationSeconds: number): void {
	if (
		typeof durationSeconds !== "number" ||
		!Number.isInteger(durationSeconds) ||
		durationSeconds < 1 ||
		durationSeconds > MAX_LEADERSHIP_SECONDS
	) {
		throw new RangeError(
			`[@vvm/ielections] durationSeconds must be an integer in 1..${MAX_LEADERSHIP_SECONDS}, got ${String(durationSeconds)}`,
		);
	}
}
