// Overload shedding at the HTTP layer (README, "Overload"). Under a load the host cannot serve,
// its event loop saturates on HTTP work (reading, routing, answering) before any partition queue
// of @vvm/cp sees the excess, so cp's admission by queue wait cannot bound the latency alone.
// The host measures how late its event loop runs and, while that delay is over a bound, answers
// new API v2 requests at once with cp's own shed answer (503 + Retry-After, CP_BUSY,
// committed "no") before their body is read: nothing has been handed to cp, so nothing is
// written. Probes, /metrics and the operator routes are always served. Sheds (the loop's and
// cp's own CP_BUSY) are logged at most once per interval, with counts.
import type { ApiErrorReply } from "./errors.ts";

/** Where the host reads how late its event loop runs. */
export interface LoopDelaySource {
	/** The event loop's recent delay, ms (0 when it keeps up). */
	delayMs(): number;
	/** Stops measuring (a no-op for an injected source). */
	close(): void;
}

/** What {@link timerDriftSource} measures with: a monotonic clock and a one-shot timer. */
export interface DriftTimers {
	/** Monotonic ms (default `performance.now`). */
	readonly now: () => number;
	/** Runs `fn` once after `ms` (default `setTimeout`, unref'd: it never keeps the process alive). */
	readonly schedule: (fn: () => void, ms: number) => { cancel(): void };
}

const realTimers: DriftTimers = {
	now: () => performance.now(),
	schedule: (fn, ms) => {
		const timer = setTimeout(fn, ms);
		timer.unref();
		return { cancel: () => clearTimeout(timer) };
	},
};

/** The sampler's tick: short enough that a delay is seen within a few ms, cheap (100 ticks/s). */
const DRIFT_TICK_MS = 10;

/**
 * A timer-drift sampler: a timer due every `tickMs` notes how late it ran. Its readings are the
 * ticks' lateness and, once the next tick is overdue, how overdue it is right now (so a request
 * handled in the middle of a long event-loop turn sees that turn at once; a histogram such as
 * `monitorEventLoopDelay`'s learns of a turn only after it ended). The delay it reports is the
 * smaller of the last two readings: a loop that stays late (saturated) is seen within two
 * readings, while one late tick alone (a garbage collection, the process descheduled once on a
 * busy machine) is not taken for overload. It costs one timer callback per tick and a clock read
 * per {@link LoopDelaySource.delayMs} call.
 *
 * @example
 * ```ts
 * const loop = timerDriftSource();
 * if (loop.delayMs() > 100) console.log("the event loop is behind");
 * loop.close();
 * ```
 */
export function timerDriftSource(
	tickMs: number = DRIFT_TICK_MS,
	timers: DriftTimers = realTimers,
): LoopDelaySource {
	let due = timers.now() + tickMs;
	/** The last tick's lateness, and the one's before it. */
	let lastLateness = 0;
	let previousLateness = 0;
	let closed = false;
	let pending: { cancel(): void } | undefined;
	const tick = (): void => {
		if (closed) return;
		const now = timers.now();
		previousLateness = lastLateness;
		lastLateness = Math.max(0, now - due);
		due = now + tickMs;
		pending = timers.schedule(tick, tickMs);
	};
	pending = timers.schedule(tick, tickMs);
	return {
		delayMs: () => {
			const overdue = timers.now() - due;
			return Math.min(lastLateness, overdue > 0 ? overdue : previousLateness);
		},
		close: () => {
			closed = true;
			pending?.cancel();
		},
	};
}

/** Why a request was shed, as counted and logged. */
export type ShedReason = "event_loop" | "cp_busy";

/** The counts of {@link LoadShedder.stats} since the shedder started. */
interface ShedStats {
	/** API requests refused by the event-loop bound. */
	readonly eventLoop: number;
	/**
	 * API requests @vvm/cp answered `CP_BUSY` (its queue bounds, a partition still actualizing or
	 * behind on flushes), as the API route counted them.
	 */
	readonly cpBusy: number;
	/** The delay source's current value, ms. */
	readonly delayMs: number;
}

/** Where the shed lines go (a pino logger is one). */
interface ShedLogger {
	warn(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link createLoadShedder}. */
export interface LoadShedderOptions {
	/** The bound, ms: while the delay is over it, API requests are shed; `0`: never shed. */
	readonly maxDelayMs: number;
	/** How late the loop runs (default {@link timerDriftSource}; only made when the bound is on). */
	readonly source?: LoopDelaySource;
	/** The shed log goes here, at `warn`. */
	readonly logger: ShedLogger;
	/** At most one shed line per this many ms (default 1000). */
	readonly logIntervalMs?: number;
	/**
	 * Monotonic ms and a one-shot timer for the log (default `performance.now` and an unref'd
	 * `setTimeout`): counts left when sheds stop are written one interval after the last line.
	 */
	readonly timers?: DriftTimers;
}

/** The host's overload guard: the event-loop bound and the rate-limited shed log. */
export interface LoadShedder {
	/** The bound, ms (0: off). */
	readonly maxDelayMs: number;
	/**
	 * The answer for an API request that arrives now: the shed 503 while the loop's delay is over
	 * the bound (counted), else `undefined` (serve it). Call before anything of the request is
	 * read or handed on.
	 */
	check(): ApiErrorReply | undefined;
	/** Counts a shed answered elsewhere (cp's `CP_BUSY`: `cp_busy`) for the rate-limited log. */
	count(reason: ShedReason): void;
	stats(): ShedStats;
	/** Stops the delay source and the log's timer, and writes any pending counts. */
	close(): void;
}

/**
 * The 503 of a request refused by the event-loop bound: the body and code of cp's own shed
 * (`CP_BUSY`, `reason: "busy"`, committed "no") so a client handles both alike; `Retry-After`
 * in seconds, at least 1.
 *
 * @example
 * ```ts
 * loopShedReply(180, 100); // 503, retry-after "1", body.code "CP_BUSY", body.committed "no"
 * ```
 */
export function loopShedReply(delayMs: number, maxDelayMs: number): ApiErrorReply {
	const message = `server is busy: the host's event loop is ${Math.round(delayMs)} ms behind (bound ${maxDelayMs} ms, --max-event-loop-delay-ms); nothing was written`;
	return {
		status: 503,
		headers: { "retry-after": String(Math.max(1, Math.ceil(delayMs / 1000))) },
		body: { status: 503, code: "CP_BUSY", message, committed: "no", reason: "busy" },
		outcome: "busy_event_loop",
	};
}

/**
 * Creates the host's load shedder. With `maxDelayMs` 0 it never sheds (and measures nothing),
 * but still rate-limits the log of cp's sheds. The log: the first shed after a quiet interval
 * is written at once; later ones are counted and written at most once per `logIntervalMs`, as
 * one `warn` line (`event: "shed"`) with the counts by reason since the last line.
 *
 * @example
 * ```ts
 * const shedder = createLoadShedder({ maxDelayMs: 100, logger });
 * const refused = shedder.check(); // before reading an API request's body
 * ```
 */
export function createLoadShedder(options: LoadShedderOptions): LoadShedder {
	const { maxDelayMs, logger } = options;
	if (!Number.isSafeInteger(maxDelayMs) || maxDelayMs < 0)
		throw new RangeError(`maxDelayMs must be an integer >= 0, got ${maxDelayMs}`);
	const timers = options.timers ?? realTimers;
	const logIntervalMs = options.logIntervalMs ?? 1000;
	const source = maxDelayMs === 0 ? undefined : (options.source ?? timerDriftSource());
	const total = { event_loop: 0, cp_busy: 0 };
	const since = { event_loop: 0, cp_busy: 0 };
	let lastLine = Number.NEGATIVE_INFINITY;
	/** When the first count since the last line came. */
	let firstAt = 0;
	/** The largest delay of a shed since the last line. */
	let worstDelayMs = 0;
	let flushTimer: { cancel(): void } | undefined;
	let closed = false;

	const write = (at: number): void => {
		const shed = since.event_loop + since.cp_busy;
		if (shed === 0) return;
		const seconds = Math.max(0, at - firstAt) / 1000;
		const parts: string[] = [];
		if (since.event_loop > 0)
			parts.push(
				`${since.event_loop} by the event-loop bound (delay up to ${Math.round(worstDelayMs)} ms, bound ${maxDelayMs} ms)`,
			);
		if (since.cp_busy > 0) parts.push(`${since.cp_busy} by the command processor (CP_BUSY)`);
		logger.warn(
			{
				event: "shed",
				shed,
				eventLoop: since.event_loop,
				cpBusy: since.cp_busy,
				seconds: Math.round(seconds * 1000) / 1000,
				...(since.event_loop > 0 ? { delayMs: Math.round(worstDelayMs), boundMs: maxDelayMs } : {}),
			},
			`shed ${shed} request(s) with 503, nothing written, in ${seconds.toFixed(1)} s: ${parts.join("; ")}`,
		);
		since.event_loop = 0;
		since.cp_busy = 0;
		worstDelayMs = 0;
		lastLine = at;
	};
	/** Writes the pending counts if a line is allowed at `at`, else makes sure a timer will. */
	const flushAt = (at: number): void => {
		if (at - lastLine >= logIntervalMs) {
			flushTimer?.cancel();
			flushTimer = undefined;
			write(at);
		} else if (flushTimer === undefined && !closed)
			flushTimer = timers.schedule(onTimer, lastLine + logIntervalMs - at);
	};
	const onTimer = (): void => {
		flushTimer = undefined;
		if (!closed && since.event_loop + since.cp_busy > 0) flushAt(timers.now());
	};
	const count = (reason: ShedReason): void => {
		const at = timers.now();
		if (since.event_loop + since.cp_busy === 0) firstAt = at;
		since[reason]++;
		total[reason]++;
		flushAt(at);
	};
	return {
		maxDelayMs,
		check: () => {
			if (source === undefined) return undefined;
			const delay = source.delayMs();
			if (delay <= maxDelayMs) return undefined;
			if (delay > worstDelayMs) worstDelayMs = delay;
			count("event_loop");
			return loopShedReply(delay, maxDelayMs);
		},
		count,
		stats: () => ({
			eventLoop: total.event_loop,
			cpBusy: total.cp_busy,
			delayMs: source?.delayMs() ?? 0,
		}),
		close: () => {
			if (closed) return;
			closed = true;
			source?.close();
			flushTimer?.cancel();
			flushTimer = undefined;
			write(timers.now());
		},
	};
}
