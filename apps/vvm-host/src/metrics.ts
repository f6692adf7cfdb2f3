import { performance } from "node:perf_hooks";
import type { VVMEvent, VVMLeadership } from "@vvm/orch";
import { Counter, Gauge, Histogram, Registry } from "prom-client";

/** The host's Prometheus metrics, on their own registry (never the global one). */
export interface HostMetrics {
	readonly registry: Registry;
	/** Feed every VVM event here. */
	onEvent(event: VVMEvent): void;
}

/**
 * Creates the metrics: leader status and slot, renewals, renewal failures and latency,
 * acquisition attempts, transitions, time since the last renewal and lease time left.
 * `vvm_leader` follows `leaseValid()` (held and before the local lease deadline);
 * `vvm_leadership_held` is the raw state (held, possibly past the deadline while a renewal hangs).
 *
 * @example
 * ```ts
 * const metrics = createHostMetrics({
 *   leadership: () => vvm.leadership(),
 *   leaseValid: () => vvm.leaseValid(),
 *   monotonic: () => systemClock.monotonic(),
 * });
 * ```
 */
export function createHostMetrics(options: {
	readonly leadership: () => VVMLeadership | undefined;
	readonly leaseValid: () => boolean;
	/** The VVM clock's `monotonic()`: the leadership's times are on it. */
	readonly monotonic: () => number;
}): HostMetrics {
	const registry = new Registry();
	const registers = [registry];
	new Gauge({
		name: "vvm_leader",
		help: "1 while this VVM holds a leader slot with a valid lease (before its local lease deadline), else 0",
		registers,
		collect() {
			this.set(options.leaseValid() ? 1 : 0);
		},
	});
	new Gauge({
		name: "vvm_leader_slot",
		help: "The slot led (1..numVVM) while the lease is valid, else 0",
		registers,
		collect() {
			this.set(options.leaseValid() ? (options.leadership()?.slot ?? 0) : 0);
		},
	});
	new Gauge({
		name: "vvm_leadership_held",
		help: "1 while a leader slot is held locally, even past the lease deadline (a renewal hangs), else 0",
		registers,
		collect() {
			this.set(options.leadership() === undefined ? 0 : 1);
		},
	});
	new Gauge({
		name: "vvm_leadership_seconds_since_last_renewal",
		help: "Seconds since the last successful renewal (or acquisition) was sent; NaN when not leader",
		registers,
		collect() {
			const l = options.leadership();
			this.set(l === undefined ? Number.NaN : (options.monotonic() - l.lastRenewedAt) / 1000);
		},
	});
	new Gauge({
		name: "vvm_leadership_lease_seconds_remaining",
		help: "Seconds until the local lease deadline; NaN when not leader",
		registers,
		collect() {
			const l = options.leadership();
			this.set(l === undefined ? Number.NaN : (l.leaseDeadline - options.monotonic()) / 1000);
		},
	});
	const renewals = new Counter({
		name: "vvm_leadership_renewals_total",
		help: "Successful leadership renewals",
		registers,
	});
	const failures = new Counter({
		name: "vvm_leadership_renewal_failures_total",
		help: "Failed renewal attempts (storage errors)",
		registers,
	});
	const transitions = new Counter({
		name: "vvm_leadership_transitions_total",
		help: "Leadership changes of this VVM, by direction",
		labelNames: ["to"] as const,
		registers,
	});
	const attempts = new Counter({
		name: "vvm_leadership_acquire_attempts_total",
		help: "Acquisition attempts, by result",
		labelNames: ["result"] as const,
		registers,
	});
	const latency = new Histogram({
		name: "vvm_leadership_renewal_latency_seconds",
		help: "Latency of successful renewals",
		buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
		registers,
	});
	for (const to of ["leader", "follower"]) transitions.inc({ to }, 0);
	// A leadership ends once: `lost` (then `released`/`release-failed` follow for the same slot),
	// or a voluntary `released`/`release-failed` alone. Slots whose end was counted at `lost`:
	const lostSlots = new Set<number>();
	const ended = (slot: number): void => {
		if (lostSlots.delete(slot)) return;
		transitions.inc({ to: "follower" });
	};
	return {
		registry,
		onEvent(event) {
			switch (event.type) {
				case "acquired":
					attempts.inc({ result: "acquired" });
					transitions.inc({ to: "leader" });
					return;
				case "acquire-failed":
					attempts.inc({ result: event.reason });
					return;
				case "renewed":
					renewals.inc();
					latency.observe(event.latencyMs / 1000);
					return;
				case "renewal-failed":
					failures.inc();
					return;
				case "lost":
					transitions.inc({ to: "follower" });
					lostSlots.add(event.key);
					return;
				case "released":
				case "release-failed":
					ended(event.key);
					return;
				default:
					return;
			}
		},
	};
}

/**
 * Registers the overload metrics, read from the shedder at scrape time (nothing on a request's
 * path): `vvm_http_shed_total{reason}` (`in_flight`: API requests refused by
 * `--max-requests-in-flight`; `event_loop`: by `--max-event-loop-delay-ms`; `cp_busy`: API
 * requests @vvm/cp answered CP_BUSY), `vvm_http_requests_in_flight` (the API requests the
 * in-flight bound counts now), `vvm_http_in_flight_limit` (that bound now: lower than
 * configured while `--max-event-loop-utilization` holds it down) and
 * `vvm_http_event_loop_delay_seconds` (the delay the shedder compares with its bound; 0 when
 * off) and `vvm_http_event_loop_active_seconds_total` (the seconds the event loop was busy: its
 * rate is the loop's utilization).
 *
 * @example
 * ```ts
 * registerShedMetrics(metrics.registry, shedder);
 * ```
 */
export function registerShedMetrics(
	registry: Registry,
	shedder: {
		stats(): {
			inFlight: number;
			eventLoop: number;
			cpBusy: number;
			delayMs: number;
			requestsInFlight: number;
			inFlightLimit: number;
		};
	},
): void {
	const registers = [registry];
	new Counter({
		name: "vvm_http_shed_total",
		help: "Requests answered 503 + Retry-After, committed no, because the host was overloaded: by the bound on API requests in flight (in_flight), by the event-loop bound (event_loop) or by the command processor (cp_busy: CP_BUSY, e.g. a partition queue's bound)",
		labelNames: ["reason"] as const,
		registers,
		collect() {
			const stats = shedder.stats();
			this.reset();
			this.inc({ reason: "in_flight" }, stats.inFlight);
			this.inc({ reason: "event_loop" }, stats.eventLoop);
			this.inc({ reason: "cp_busy" }, stats.cpBusy);
		},
	});
	new Gauge({
		name: "vvm_http_requests_in_flight",
		help: "API v2 requests the host serves now (what --max-requests-in-flight bounds)",
		registers,
		collect() {
			this.set(shedder.stats().requestsInFlight);
		},
	});
	new Gauge({
		name: "vvm_http_in_flight_limit",
		help: "The bound on API v2 requests in flight now: --max-requests-in-flight, or lower while --max-event-loop-utilization holds it down (0: no bound)",
		registers,
		collect() {
			this.set(shedder.stats().inFlightLimit);
		},
	});
	new Counter({
		name: "vvm_http_event_loop_active_seconds_total",
		help: "Seconds the host's event loop has been busy since the process started: its rate is the loop's utilization (what --max-event-loop-utilization compares); a loop busy most of the time delays every answer it reads, the storage's included",
		registers,
		collect() {
			// Node's own count (performance.eventLoopUtilization().active, ms): a counter, so
			// any scraper takes its own rate, unlike a utilization since the previous scrape.
			this.reset();
			this.inc(performance.eventLoopUtilization().active / 1000);
		},
	});
	new Gauge({
		name: "vvm_http_event_loop_delay_seconds",
		help: "How late the host's event loop runs (what --max-event-loop-delay-ms bounds; 0 when the bound is off)",
		registers,
		collect() {
			this.set(shedder.stats().delayMs / 1000);
		},
	});
}
