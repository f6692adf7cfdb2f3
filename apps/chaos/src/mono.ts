/**
 * `CLOCK_MONOTONIC` in ms, exactly as vvm-host logs it (`mono`): one clock for every process on
 * the machine, never stepped, untouched by libfaketime (FAKETIME_DONT_FAKE_MONOTONIC=1). Every
 * time the chaos tool records is on it, so its faults, the hosts' logs and the load generator's
 * answers share one timeline.
 *
 * @example
 * ```ts
 * const t = monoMs(); // 123456.789
 * ```
 */
export function monoMs(): number {
	return Number(process.hrtime.bigint() / 1_000n) / 1_000;
}

/** Resolves after `ms`; `signal` ends the wait early (resolving, not rejecting). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
	return new Promise((resolve) => {
		if (signal?.aborted) {
			resolve();
			return;
		}
		const done = (): void => {
			clearTimeout(timer);
			signal?.removeEventListener("abort", done);
			resolve();
		};
		const timer = setTimeout(done, Math.max(0, ms));
		signal?.addEventListener("abort", done, { once: true });
	});
}
