// Overload shedding at the HTTP layer (README, "Overload"). Under a load the host cannot serve,
// its event loop saturates on HTTP work (reading, routing, answering) before any partition queue
// of @vvm/cp sees the excess, so cp's admission by queue wait cannot bound the latency alone.
// Two bounds answer new API v2 requests at once with cp's own shed answer (503 + Retry-After,
// CP_BUSY, committed "no") before their body is read, so nothing has been handed to cp and
// nothing is written: the API requests in flight (a counter compared on arrival: the cheapest
// refusal there is, and the one that bounds the work the host holds, by Little's law its
// latency), and how late the event loop runs. Probes, /metrics and the operator routes are
// always served. Sheds (both bounds' and cp's own CP_BUSY) are logged at most once per interval,
// with counts.
import { performance } from "node:perf_hooks";
import type { ApiErrorReply } from "./errors.ts";
import { unavailable } from "./errors.ts";
import type { Reply } from "./router.ts";

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

/** Where the host reads how busy its event loop was. */
interface LoopUtilizationSource {
	/**
	 * The share of the time since the previous call (or since the source was made) the event
	 * loop spent running rather than waiting for I/O, 0..1.
	 */
	sample(): number;
}

/**
 * Node's event-loop utilization (`performance.eventLoopUtilization`) since the previous sample:
 * the loop's time outside its wait for I/O. A loop near 1 has no idle turn left, so whatever
 * arrives waits in socket buffers behind the work it already took on (a wait no in-process
 * queue sees). Time the thread is descheduled while running (another thread of the process, or
 * another process, on its core) counts as busy: it delays the loop alike.
 *
 * @example
 * ```ts
 * const loop = eventLoopUtilizationSource();
 * setTimeout(() => console.log(loop.sample()), 250); // e.g. 0.12
 * ```
 */
function eventLoopUtilizationSource(): LoopUtilizationSource {
	let last = performance.eventLoopUtilization();
	return {
		sample: () => {
			const now = performance.eventLoopUtilization();
			const delta = performance.eventLoopUtilization(now, last);
			last = now;
			return delta.utilization;
		},
	};
}

/** Why a request was shed, as counted and logged. */
export type ShedReason = "event_loop" | "cp_busy" | "in_flight";

/** The counts of {@link LoadShedder.stats} since the shedder started. */
interface ShedStats {
	/** API requests refused by the in-flight bound. */
	readonly inFlight: number;
	/** API requests refused by the event-loop bound. */
	readonly eventLoop: number;
	/**
	 * API requests @vvm/cp answered `CP_BUSY` (its queue bounds, a partition still actualizing or
	 * behind on flushes), as the API route counted them.
	 */
	readonly cpBusy: number;
	/** The delay source's current value, ms. */
	readonly delayMs: number;
	/** API requests admitted by {@link LoadShedder.enter} and not yet left: now. */
	readonly requestsInFlight: number;
	/**
	 * The in-flight bound now: {@link LoadShedderOptions.maxInFlight}, or lower while the
	 * event-loop utilization bound holds it down (0: no bound).
	 */
	readonly inFlightLimit: number;
}

/** Where the shed lines go (a pino logger is one). */
interface ShedLogger {
	warn(fields: Record<string, unknown>, message: string): void;
}

/** Options of {@link createLoadShedder}. */
export interface LoadShedderOptions {
	/** The bound, ms: while the delay is over it, API requests are shed; `0`: never shed. */
	readonly maxDelayMs: number;
	/**
	 * API requests in flight at once (see {@link LoadShedder.enter}); one more is shed. `0` or
	 * absent: no bound (they are still counted).
	 */
	readonly maxInFlight?: number;
	/** How late the loop runs (default {@link timerDriftSource}; only made when the bound is on). */
	readonly source?: LoopDelaySource;
	/**
	 * The event-loop utilization bound, percent (1..99; `0` or absent: off; needs `maxInFlight`):
	 * every `adaptIntervalMs`, while the loop was busier than this and the in-flight bound was
	 * refusing requests, the bound is halved (to at least
	 * {@link MIN_ADAPTIVE_IN_FLIGHT}); once the loop has stayed 10 points under it for 4
	 * intervals, raised by an eighth (at least 1) back towards `maxInFlight`. See
	 * {@link createLoadShedder}.
	 */
	readonly maxUtilizationPercent?: number;
	/** The loop's utilization (default {@link eventLoopUtilizationSource}; only made when on). */
	readonly utilization?: LoopUtilizationSource;
	/** How often the in-flight bound is adapted, ms (default 25; it is raised at most every 4th). */
	readonly adaptIntervalMs?: number;
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

/** The host's overload guard: the in-flight and event-loop bounds and the rate-limited shed log. */
export interface LoadShedder {
	/** The bound, ms (0: off). */
	readonly maxDelayMs: number;
	/** The in-flight bound as configured (0: off); {@link ShedStats.inFlightLimit} is the bound now. */
	readonly maxInFlight: number;
	/**
	 * The admission of an API request that arrives now, before anything of it is read: the shed
	 * 503 (counted) when {@link LoadShedderOptions.maxInFlight} requests are in flight or the
	 * loop is over its bound; else `undefined`: it is in flight until {@link LoadShedder.leave},
	 * which its caller must call exactly once, when its answer is settled.
	 */
	enter(): Reply | undefined;
	/** Ends one request admitted by {@link LoadShedder.enter}. */
	leave(): void;
	/**
	 * The answer for an API request that arrives now: the shed 503 while the loop's delay is over
	 * the bound (counted), else `undefined` (serve it). Call before anything of the request is
	 * read or handed on.
	 */
	check(): ApiErrorReply | undefined;
	/** Counts a shed answered elsewhere (cp's `CP_BUSY`: `cp_busy`) for the rate-limited log. */
	count(reason: ShedReason): void;
	stats(): ShedStats;
	/**
	 * The host is stopping: from now on every API request is answered 503 `HOST_UNAVAILABLE`
	 * (`reason: "stopping"`, committed no, `Connection: close`) before anything of it is read, and
	 * the promise resolves once the requests already admitted have been answered, or after
	 * `timeoutMs` (monotonic), with how many were still in flight then.
	 */
	drain(timeoutMs: number): Promise<number>;
	/** Stops the delay source and the log's timer, and writes any pending counts. */
	close(): void;
}

/** The answer to an API request that arrives while the host stops (see {@link LoadShedder.drain}). */
const STOPPING_REPLY: Reply = (() => {
	const refused = unavailable(
		"stopping",
		"this host is stopping; nothing was written: retry, another host serves the partition once it has stopped",
	);
	return Object.freeze({ ...refused, headers: { ...refused.headers, connection: "close" } });
})();

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
 * The 503 of a request refused by the in-flight bound: the body and code of cp's own shed, as
 * {@link loopShedReply}'s, with `Retry-After: 1` (the requests ahead of it take milliseconds, not
 * seconds). `limit` is the bound now, `maxInFlight` the configured one (the same unless the
 * event-loop utilization bound lowered it). Its JSON text is made here, once per bound the
 * shedder moves to, so a refusal costs no serialization.
 *
 * @example
 * ```ts
 * inFlightShedReply(80).status; // 503; its body (JSON text) says code CP_BUSY, committed no
 * ```
 */
export function inFlightShedReply(limit: number, maxInFlight: number = limit): Reply {
	const bound =
		limit === maxInFlight
			? `bound ${limit}, --max-requests-in-flight`
			: `bound ${limit}, lowered from ${maxInFlight} while the event loop is busier than --max-event-loop-utilization`;
	const message = `server is busy: the host has ${limit} API requests in flight (${bound}); nothing was written`;
	const body = { status: 503, code: "CP_BUSY", message, committed: "no", reason: "busy" };
	return Object.freeze({
		status: 503,
		headers: Object.freeze({ "retry-after": "1" }),
		body: `${JSON.stringify(body)}\n`,
		contentType: "application/json; charset=utf-8",
	});
}

/** The least the event-loop utilization bound lowers the in-flight bound to. */
const MIN_ADAPTIVE_IN_FLIGHT = 2;
/** How often the in-flight bound is adapted by default, ms. */
const ADAPT_INTERVAL_MS = 25;
/**
 * The bound is raised at most once per this many intervals (100 ms at the default): it falls
 * fast, at the onset of an overload, when every interval at the old bound is latency added to
 * what it admitted; it rises slowly, so a loop that just got its idle time back is not at once
 * given the work that took it away.
 */
const RAISE_EVERY_INTERVALS = 4;
/** Under the utilization bound by this many points, the in-flight bound is raised again. */
const RAISE_MARGIN_PERCENT = 10;

/** `--max-requests-in-flight`'s default: 8 per partition, at least 64, at most 4 096. */
const IN_FLIGHT_PER_PARTITION = 8;
const MIN_DEFAULT_IN_FLIGHT = 64;
/** The HTTP server's connection bound: a request in flight holds one, so more never binds. */
const MAX_DEFAULT_IN_FLIGHT = 4_096;

/**
 * `--max-requests-in-flight`'s default for an application of `partitions` partitions. A partition
 * runs one command at a time (a few with `--pipeline-depth`): requests beyond the partitions'
 * own only wait in a queue, and by Little's law every request waiting multiplies the latency of
 * all of them. 8 per partition keeps each partition busy with room for uneven spread and
 * pipelining while a command waits for at most about 8 others (README, "Overload"); at least 64
 * so a host of few partitions still serves a few dozen clients at once, at most the connection
 * bound.
 *
 * @example
 * ```ts
 * defaultMaxRequestsInFlight(10); // 80
 * ```
 */
export function defaultMaxRequestsInFlight(partitions: number): number {
	return Math.min(
		MAX_DEFAULT_IN_FLIGHT,
		Math.max(MIN_DEFAULT_IN_FLIGHT, IN_FLIGHT_PER_PARTITION * partitions),
	);
}

/**
 * Creates the host's load shedder. With `maxDelayMs` 0 it never sheds (and measures nothing),
 * but still rate-limits the log of cp's sheds.
 *
 * The event-loop utilization bound (`maxUtilizationPercent`) adapts the in-flight bound, as
 * additive-increase/multiplicative-decrease congestion control does a window: a loop with no
 * idle time left makes everything that arrives wait in socket buffers, refusals included, so the
 * latency of what it accepts grows with what it is offered however few requests it holds.
 * Lowering the bound while the loop is saturated and still refusing trades served commands for
 * idle time, until the loop keeps up with the rest: its refusals and the commands it admits. It
 * is lowered only while the bound refuses requests, so a loop busy with no more clients than the
 * bound (a closed loop at capacity) keeps its bound.
 *
 * The log: the first shed after a quiet interval
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
	const maxInFlight = options.maxInFlight ?? 0;
	if (!Number.isSafeInteger(maxDelayMs) || maxDelayMs < 0)
		throw new RangeError(`maxDelayMs must be an integer >= 0, got ${maxDelayMs}`);
	if (!Number.isSafeInteger(maxInFlight) || maxInFlight < 0)
		throw new RangeError(`maxInFlight must be an integer >= 0, got ${maxInFlight}`);
	const maxUtilizationPercent = options.maxUtilizationPercent ?? 0;
	if (
		!Number.isSafeInteger(maxUtilizationPercent) ||
		maxUtilizationPercent < 0 ||
		maxUtilizationPercent > 99
	)
		throw new RangeError(
			`maxUtilizationPercent must be an integer in 0..99, got ${maxUtilizationPercent}`,
		);
	const adaptIntervalMs = options.adaptIntervalMs ?? ADAPT_INTERVAL_MS;
	if (!Number.isSafeInteger(adaptIntervalMs) || adaptIntervalMs < 1)
		throw new RangeError(`adaptIntervalMs must be an integer >= 1, got ${adaptIntervalMs}`);
	/** The in-flight bound now, and the answer of a request refused by it (made when it moves). */
	let limit = maxInFlight;
	let busy = inFlightShedReply(limit, maxInFlight);
	const setLimit = (next: number): void => {
		if (next === limit) return;
		limit = next;
		busy = inFlightShedReply(limit, maxInFlight);
	};
	let inFlight = 0;
	let stopping = false;
	/** Called when the last admitted request leaves while the host stops. */
	let drained: (() => void) | undefined;
	const timers = options.timers ?? realTimers;
	const logIntervalMs = options.logIntervalMs ?? 1000;
	const source = maxDelayMs === 0 ? undefined : (options.source ?? timerDriftSource());
	const total = { in_flight: 0, event_loop: 0, cp_busy: 0 };
	const since = { in_flight: 0, event_loop: 0, cp_busy: 0 };
	const pending = (): number => since.in_flight + since.event_loop + since.cp_busy;
	let lastLine = Number.NEGATIVE_INFINITY;
	/** When the first count since the last line came. */
	let firstAt = 0;
	/** The largest delay of a shed since the last line. */
	let worstDelayMs = 0;
	let flushTimer: { cancel(): void } | undefined;
	let closed = false;

	const write = (at: number): void => {
		const shed = pending();
		if (shed === 0) return;
		const seconds = Math.max(0, at - firstAt) / 1000;
		const parts: string[] = [];
		if (since.in_flight > 0)
			parts.push(
				limit === maxInFlight
					? `${since.in_flight} by the in-flight bound (${maxInFlight} API requests)`
					: `${since.in_flight} by the in-flight bound (now ${limit} API requests, lowered from ${maxInFlight}: the event loop is busier than ${maxUtilizationPercent}%)`,
			);
		if (since.event_loop > 0)
			parts.push(
				`${since.event_loop} by the event-loop bound (delay up to ${Math.round(worstDelayMs)} ms, bound ${maxDelayMs} ms)`,
			);
		if (since.cp_busy > 0) parts.push(`${since.cp_busy} by the command processor (CP_BUSY)`);
		logger.warn(
			{
				event: "shed",
				shed,
				...(since.in_flight > 0
					? { inFlight: since.in_flight, maxInFlight, inFlightLimit: limit }
					: {}),
				eventLoop: since.event_loop,
				cpBusy: since.cp_busy,
				seconds: Math.round(seconds * 1000) / 1000,
				...(since.event_loop > 0 ? { delayMs: Math.round(worstDelayMs), boundMs: maxDelayMs } : {}),
			},
			`shed ${shed} request(s) with 503, nothing written, in ${seconds.toFixed(1)} s: ${parts.join("; ")}`,
		);
		since.in_flight = 0;
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
		if (!closed && pending() > 0) flushAt(timers.now());
	};
	// The utilization bound: every interval, halve the in-flight bound while the loop was over
	// the bound and the bound refused requests; raise it by an eighth once it stayed well under.
	const utilization =
		maxUtilizationPercent > 0 && maxInFlight > 0
			? (options.utilization ?? eventLoopUtilizationSource())
			: undefined;
	let refusedAtLastAdapt = 0;
	/** Intervals in a row the loop was under the raise mark since the bound last moved. */
	let quietIntervals = 0;
	let adaptTimer: { cancel(): void } | undefined;
	const adapt = (): void => {
		adaptTimer = undefined;
		if (closed || utilization === undefined) return;
		const busyPercent = utilization.sample() * 100;
		const refused = total.in_flight > refusedAtLastAdapt;
		refusedAtLastAdapt = total.in_flight;
		if (busyPercent > maxUtilizationPercent && refused) {
			setLimit(Math.max(Math.min(MIN_ADAPTIVE_IN_FLIGHT, maxInFlight), Math.floor(limit / 2)));
			quietIntervals = 0;
		} else if (busyPercent < maxUtilizationPercent - RAISE_MARGIN_PERCENT) {
			quietIntervals++;
			if (quietIntervals >= RAISE_EVERY_INTERVALS && limit < maxInFlight) {
				setLimit(Math.min(maxInFlight, limit + Math.max(1, Math.floor(limit / 8))));
				quietIntervals = 0;
			}
		} else quietIntervals = 0;
		adaptTimer = timers.schedule(adapt, adaptIntervalMs);
	};
	if (utilization !== undefined) adaptTimer = timers.schedule(adapt, adaptIntervalMs);
	const count = (reason: ShedReason): void => {
		const at = timers.now();
		if (pending() === 0) firstAt = at;
		since[reason]++;
		total[reason]++;
		flushAt(at);
	};
	const check = (): ApiErrorReply | undefined => {
		if (source === undefined) return undefined;
		const delay = source.delayMs();
		if (delay <= maxDelayMs) return undefined;
		if (delay > worstDelayMs) worstDelayMs = delay;
		count("event_loop");
		return loopShedReply(delay, maxDelayMs);
	};
	return {
		maxDelayMs,
		maxInFlight,
		check,
		// The counter first: one comparison, and the constant answer, for most refusals.
		enter: () => {
			if (stopping) return STOPPING_REPLY;
			if (maxInFlight > 0 && inFlight >= limit) {
				count("in_flight");
				return busy;
			}
			const refused = check();
			if (refused === undefined) inFlight++;
			return refused;
		},
		leave: () => {
			if (inFlight > 0) inFlight--;
			if (inFlight === 0) drained?.();
		},
		drain: (timeoutMs) => {
			stopping = true;
			if (inFlight === 0) return Promise.resolve(0);
			return new Promise<number>((resolve) => {
				const timer = timers.schedule(() => finish(), timeoutMs);
				const finish = (): void => {
					timer.cancel();
					drained = undefined;
					resolve(inFlight);
				};
				drained = finish;
			});
		},
		count,
		stats: () => ({
			inFlight: total.in_flight,
			eventLoop: total.event_loop,
			cpBusy: total.cp_busy,
			delayMs: source?.delayMs() ?? 0,
			requestsInFlight: inFlight,
			inFlightLimit: limit,
		}),
		close: () => {
			if (closed) return;
			closed = true;
			source?.close();
			adaptTimer?.cancel();
			adaptTimer = undefined;
			flushTimer?.cancel();
			flushTimer = undefined;
			write(timers.now());
		},
	};
}
