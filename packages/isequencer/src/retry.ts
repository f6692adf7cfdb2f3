import type { Clock } from "@vvm/clock";

/**
 * Backoff of the sequencer's storage retries: "full jitter", a uniform delay in
 * `[0, min(maxDelayMs, baseDelayMs * 2^attempt))`; once the cap reaches `maxDelayMs` the attempt
 * counter restarts (voedger's retrier with `ResetDelayAfterMaxDelay`). Defaults 500 / 500 ms, as
 * voedger's sequencer.
 *
 * @example
 * ```ts
 * const retry: RetryOptions = { baseDelayMs: 20, maxDelayMs: 500 };
 * ```
 */
export interface RetryOptions {
	readonly baseDelayMs?: number;
	readonly maxDelayMs?: number;
}

/** @internal */
export interface RetryContext {
	readonly clock: Clock;
	readonly random: () => number;
	readonly baseDelayMs: number;
	readonly maxDelayMs: number;
	readonly onError: (error: unknown, operation: string, attempt: number) => void;
	/** An error no retry can cure: `stop` ends the sequencer and aborts every retry's signal. */
	readonly isTerminal: (error: unknown) => boolean;
	readonly stop: (error: unknown) => void;
}

/**
 * @internal Calls `op` until it resolves; waits a jittered delay on the clock after each failure.
 * Rejects with `signal.reason` once `signal` aborts (checked before each attempt and during waits).
 * A terminal error (`ctx.isTerminal`) is not retried: `ctx.stop` ends the sequencer, whose abort
 * reason `signal` must then carry.
 */
export async function retryUntilAborted<T>(
	ctx: RetryContext,
	operation: string,
	signal: AbortSignal,
	op: () => Promise<T>,
): Promise<T> {
	let attempt = 0;
	for (let failures = 1; ; failures++) {
		signal.throwIfAborted();
		try {
			return await op();
		} catch (error) {
			signal.throwIfAborted();
			ctx.onError(error, operation, failures);
			if (ctx.isTerminal(error)) {
				ctx.stop(error);
				signal.throwIfAborted();
				throw error;
			}
			const cap = Math.min(ctx.maxDelayMs, ctx.baseDelayMs * 2 ** attempt);
			attempt = cap >= ctx.maxDelayMs || attempt >= 30 ? 0 : attempt + 1;
			await ctx.clock.sleep(Math.floor(ctx.random() * cap), signal);
		}
	}
}
