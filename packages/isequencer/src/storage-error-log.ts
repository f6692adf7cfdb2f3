import type { Clock } from "@vvm/clock";
import type { Logger } from "@vvm/log";

/** Signature of {@link SequencerOptions.onStorageError}. */
export type StorageErrorHandler = (error: unknown, operation: string, attempt: number) => void;

/** Default of the interval in which identical errors of one operation are logged once. */
const STORAGE_ERROR_LOG_INTERVAL_MS = 1000;

function describeError(error: unknown): string {
	if (error instanceof Error) {
		const code = (error as { code?: unknown }).code;
		return `${error.name}${typeof code === "string" ? ` ${code}` : ""}: ${error.message}`;
	}
	return String(error);
}

/**
 * @internal Logs failed storage calls at `warn` through `logger`. An error identical to the last
 * one of the same operation is logged at most once per `intervalMs` (the next line says how many
 * were left out), so a storage outage, retried about every 250 ms per pending call, does not flood
 * the log.
 *
 * @example
 * ```ts
 * const onError = storageErrorLog(pino(), systemClock);
 * onError(new Error("timeout"), "readNumbers", 1); // {"operation":"readNumbers",…} storage readNumbers failed …
 * ```
 */
export function storageErrorLog(
	logger: Logger,
	clock: Clock,
	intervalMs: number = STORAGE_ERROR_LOG_INTERVAL_MS,
): StorageErrorHandler {
	// One entry per operation (a handful of names): bounded.
	const last = new Map<string, { text: string; at: number; suppressed: number }>();
	return (error, operation, attempt) => {
		const text = describeError(error);
		const now = clock.monotonic(); // a rate limit this process keeps for itself
		const prev = last.get(operation);
		if (prev !== undefined && prev.text === text && now - prev.at < intervalMs) {
			prev.suppressed++;
			return;
		}
		const suppressed = prev?.suppressed ?? 0;
		last.set(operation, { text, at: now, suppressed: 0 });
		logger.warn(
			{ operation, attempt, suppressed, error: text, err: error },
			`storage ${operation} failed (attempt ${attempt}), retrying` +
				(suppressed > 0 ? ` (${suppressed} similar errors not logged)` : ""),
		);
	};
}
