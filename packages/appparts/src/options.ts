// The placements' options that need more than a one-line check: resolved and checked here, before
// anything runs (a `TypeError`/`RangeError` naming the option), as `@vvm/leases` does its own.

/**
 * How the static placement retries taking a partition's epoch after a storage error, within one
 * leadership of its slot (`StaticPlacementOptions.epochRetry`).
 *
 * @example
 * ```ts
 * const epochRetry: EpochRetryOptions = { firstDelayMs: 100, maxDelayMs: 5_000 };
 * ```
 */
export interface EpochRetryOptions {
	/** The wait after the first failed take, ms of the placement's monotonic clock; default 100. */
	readonly firstDelayMs?: number;
	/** Each wait doubles up to this, ms; default 5 000. At least `firstDelayMs`. */
	readonly maxDelayMs?: number;
	/**
	 * Give the slot up when a partition of it still has no epoch this long (monotonic ms) after
	 * the leadership began: the placement's service `start` then rejects with
	 * `PartitionEpochUnavailableError` (a VVM problem: the VVM shuts down and releases its slot,
	 * so another VVM can take it), and until then it waits for every epoch of the slot.
	 * Default `undefined`: never; retry for as long as the leadership lasts (README, "Partition epochs").
	 */
	readonly giveUpAfterMs?: number;
}

/** {@link EpochRetryOptions} resolved: every default applied, every value checked. */
export interface ResolvedEpochRetry {
	readonly firstDelayMs: number;
	readonly maxDelayMs: number;
	/** `undefined`: never give the slot up. */
	readonly giveUpAfterMs: number | undefined;
}

/**
 * The defaults of {@link EpochRetryOptions}: the first retry 100 ms after a failure, waits
 * doubling to 5 s, never giving the slot up.
 *
 * @example
 * ```ts
 * const cap = options.epochRetry?.maxDelayMs ?? EPOCH_RETRY_DEFAULTS.maxDelayMs; // 5000
 * ```
 */
export const EPOCH_RETRY_DEFAULTS: ResolvedEpochRetry = Object.freeze({
	firstDelayMs: 100,
	maxDelayMs: 5_000,
	giveUpAfterMs: undefined,
});

/** The longest wait or bound accepted: one day. */
const MAX_MS = 86_400_000;

function ms(name: string, value: unknown, min: number): number {
	if (typeof value !== "number" || !Number.isFinite(value) || value < min || value > MAX_MS) {
		throw new RangeError(
			`[@vvm/appparts] ${name} must be a number of ms in ${min}..${MAX_MS}, got ${String(value)}`,
		);
	}
	return value;
}

/**
 * Checks {@link EpochRetryOptions} and applies the defaults: `firstDelayMs` 1..86 400 000,
 * `maxDelayMs` from `firstDelayMs` to 86 400 000, `giveUpAfterMs` (when given) from
 * `firstDelayMs` to 86 400 000, so at least one retry runs before the slot is given up. Throws a
 * `TypeError`/`RangeError` naming the option; `createStaticPlacement` applies it.
 *
 * @example
 * ```ts
 * resolveEpochRetry({ firstDelayMs: 200 }); // { firstDelayMs: 200, maxDelayMs: 5000, giveUpAfterMs: undefined }
 * resolveEpochRetry({ maxDelayMs: 50 }); // RangeError: epochRetry.maxDelayMs must be … in 100..86400000
 * ```
 */
export function resolveEpochRetry(options: EpochRetryOptions | undefined): ResolvedEpochRetry {
	if (options === undefined) return EPOCH_RETRY_DEFAULTS;
	if (options === null || typeof options !== "object") {
		throw new TypeError("[@vvm/appparts] epochRetry must be an object");
	}
	const firstDelayMs = ms(
		"epochRetry.firstDelayMs",
		options.firstDelayMs ?? EPOCH_RETRY_DEFAULTS.firstDelayMs,
		1,
	);
	const maxDelayMs = ms(
		"epochRetry.maxDelayMs",
		options.maxDelayMs ?? Math.max(EPOCH_RETRY_DEFAULTS.maxDelayMs, firstDelayMs),
		firstDelayMs,
	);
	const giveUpAfterMs =
		options.giveUpAfterMs === undefined
			? undefined
			: ms("epochRetry.giveUpAfterMs", options.giveUpAfterMs, firstDelayMs);
	return { firstDelayMs, maxDelayMs, giveUpAfterMs };
}

/**
 * The wait before retry number `failures` (1 after the first failure): `firstDelayMs` doubled
 * per failure, capped at `maxDelayMs`. Deterministic (no jitter): one leader takes a partition's
 * epoch at a time, so there is no herd to spread.
 *
 * @example
 * ```ts
 * epochRetryDelay(EPOCH_RETRY_DEFAULTS, 3); // 400
 * ```
 */
export function epochRetryDelay(retry: ResolvedEpochRetry, failures: number): number {
	const exponent = Math.min(Math.max(failures - 1, 0), 30);
	return Math.min(retry.firstDelayMs * 2 ** exponent, retry.maxDelayMs);
}
