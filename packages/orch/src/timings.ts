// The VVM's timings a deployment chooses (a CLI, a config file), with their rules in one place:
// `provideVVM` and `launch` apply them, and a host checks its flags with them before any I/O,
// naming each option as its user wrote it.

/** Longest leadership, seconds (365 days: the storage's TTL limit). */
export const MAX_LEADERSHIP_SECONDS = 31_536_000;
/** Most leader slots: a slot is a u32 key of the leadership storage. */
export const MAX_NUM_VVM = 0xffff_ffff;

/** The timings of a VVM and its launch. */
export interface VVMTimings {
	/** Leader slots `1..numVVM`. Default 1. */
	readonly numVVM: number;
	/** `launch`'s leadership duration, seconds. Default 20. */
	readonly leadershipSeconds: number;
	/** `launch`'s acquisition duration, ms (0: one pass over the slots). Default 120 000. */
	readonly acquisitionDurationMs: number;
	/** Pause between acquisition attempts, ms. Default 1 000. */
	readonly acquireRetryMs: number;
	/** Wall-clock skew between hosts, ms: at most half the leadership. Default 0. */
	readonly maxClockSkewMs: number;
}

/** Defaults of {@link VVMTimings} (voedger's durations). */
export const VVM_TIMING_DEFAULTS: VVMTimings = Object.freeze({
	numVVM: 1,
	leadershipSeconds: 20,
	acquisitionDurationMs: 120_000,
	acquireRetryMs: 1_000,
	maxClockSkewMs: 0,
});

/** Longest timer a Node.js timer keeps (2^31 - 1 ms): longer ones fire at once. */
const MAX_TIMER_MS = 2_147_483_647;

const integerIn = (what: string, v: unknown, min: number, max: number): number => {
	if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max)
		throw new RangeError(
			`[@vvm/orch] ${what} must be an integer in ${min}..${max}, got ${String(v)}`,
		);
	return v;
};

/**
 * The rules of {@link VVMTimings}, for a caller that takes them from elsewhere and wants them
 * checked before it builds anything; `provideVVM` and `launch` apply the same. Missing values
 * take {@link VVM_TIMING_DEFAULTS}. `name` says how the caller calls an option in its messages
 * (default: its own name). Throws a `RangeError` naming it.
 *
 * @example
 * ```ts
 * checkVVMTimings({ leadershipSeconds: 4, maxClockSkewMs: 3_000 }, (o) => `--${o}`);
 * // RangeError: [@vvm/orch] --maxClockSkewMs 3000 is more than half of --leadershipSeconds 4 (at most 2000 ms)
 * ```
 */
export function checkVVMTimings(
	timings: Partial<VVMTimings>,
	name: (option: keyof VVMTimings) => string = (option) => option,
): VVMTimings {
	const d = VVM_TIMING_DEFAULTS;
	const checked: VVMTimings = {
		numVVM: integerIn(name("numVVM"), timings.numVVM ?? d.numVVM, 1, MAX_NUM_VVM),
		leadershipSeconds: integerIn(
			name("leadershipSeconds"),
			timings.leadershipSeconds ?? d.leadershipSeconds,
			1,
			MAX_LEADERSHIP_SECONDS,
		),
		acquisitionDurationMs: integerIn(
			name("acquisitionDurationMs"),
			timings.acquisitionDurationMs ?? d.acquisitionDurationMs,
			0,
			MAX_TIMER_MS,
		),
		acquireRetryMs: integerIn(
			name("acquireRetryMs"),
			timings.acquireRetryMs ?? d.acquireRetryMs,
			1,
			MAX_TIMER_MS,
		),
		maxClockSkewMs: integerIn(
			name("maxClockSkewMs"),
			timings.maxClockSkewMs ?? d.maxClockSkewMs,
			0,
			MAX_TIMER_MS,
		),
	};
	// The lease ends `skew` before the record expires: beyond half, a leader keeps too little.
	const half = checked.leadershipSeconds * 500;
	if (checked.maxClockSkewMs > half)
		throw new RangeError(
			`[@vvm/orch] ${name("maxClockSkewMs")} ${checked.maxClockSkewMs} is more than half of ${name("leadershipSeconds")} ${checked.leadershipSeconds} (at most ${half} ms)`,
		);
	return checked;
}
