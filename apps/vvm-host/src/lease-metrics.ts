// Prometheus metrics of --placement leases: what this host's lease node counts (`metrics()`,
// read at scrape time) and the duration of each placement-driver tick (from its `tick` events).
import type { LeaseEvent, LeaseMetrics } from "@vvm/leases";
import type { Registry } from "prom-client";
import { Counter, Gauge, Histogram } from "prom-client";

/** Feeds the lease node's events to the tick histograms. */
export interface LeaseHostMetrics {
	onEvent(event: LeaseEvent): void;
}

/** The node's monotonically growing counts, mirrored as Prometheus counters. */
const COUNTERS: ReadonlyArray<readonly [name: string, key: keyof LeaseMetrics, help: string]> = [
	[
		"vvm_leases_granted_total",
		"granted",
		"Leases this host granted as the active placement driver",
	],
	[
		"vvm_leases_prolonged_total",
		"prolonged",
		"Leases this host prolonged as the active placement driver",
	],
	[
		"vvm_leases_expired_total",
		"expired",
		"Leases that expired unprolonged, seen by this host as the active placement driver",
	],
	[
		"vvm_leases_batch_conflicts_total",
		"conflicts",
		"Lease batch writes that lost their compare-and-swap (another placement driver wrote first)",
	],
	["vvm_leases_ticks_total", "ticks", "Placement-driver ticks of this host"],
	["vvm_leases_batch_writes_total", "writes", "Lease batch writes (one per shard that changed)"],
	["vvm_leases_batch_written_bytes_total", "writtenBytes", "Bytes of the lease batch writes"],
	[
		"vvm_leases_storage_errors_total",
		"storageErrors",
		"Failed storage calls of the lease loops (heartbeat, polls, ticks, campaigns)",
	],
	[
		"vvm_leases_slow_runs_total",
		"slowRuns",
		"Heartbeats, polls and ticks of the lease loops that took longer than their interval (storage too slow for the lease interval)",
	],
	[
		"vvm_leases_batch_faults_total",
		"batchFaults",
		"Lease batch reads that found its root missing or corrupt (granting stops; see @vvm/leases, Operator recovery)",
	],
];

const TICK_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1];

/**
 * Registers the leases-mode metrics on the host's registry:
 *
 * - `vvm_leases_held`: partitions whose lease this host holds and serves;
 * - `vvm_leases_{granted,prolonged,expired}_total`, `vvm_leases_batch_conflicts_total`,
 *   `vvm_leases_ticks_total`, `vvm_leases_batch_writes_total`,
 *   `vvm_leases_batch_written_bytes_total`, `vvm_leases_storage_errors_total`,
 *   `vvm_leases_slow_runs_total`, `vvm_leases_batch_faults_total`; `vvm_leases_batch_fault` (1 while the batch's root is missing
 *   or corrupt: nothing is granted);
 * - `vvm_leases_placement_driver_active` (1 on the active placement driver's host) and
 *   `vvm_leases_active_actor{actor="address/incarnation"}` (1, the driver this host last saw);
 * - `vvm_leases_tick_duration_seconds` and `vvm_leases_tick_cpu_seconds` (histograms of this
 *   host's ticks, from its `tick` events).
 *
 * `metrics` is `undefined` until the placement exists: the gauges read 0 and the counters stay.
 *
 * @example
 * ```ts
 * const leaseMetrics = createLeaseMetrics(registry, () => placement?.leaseMetrics());
 * createLeaseNode({ …, onEvent: (event) => leaseMetrics.onEvent(event) });
 * ```
 */
export function createLeaseMetrics(
	registry: Registry,
	metrics: () => LeaseMetrics | undefined,
): LeaseHostMetrics {
	const registers = [registry];
	new Gauge({
		name: "vvm_leases_batch_fault",
		help: "1 while the last read of the lease batch found its root missing or corrupt (nothing is granted then)",
		registers,
		collect() {
			this.set(metrics()?.batchFault === undefined ? 0 : 1);
		},
	});
	new Gauge({
		name: "vvm_leases_held",
		help: "Partitions whose lease this host holds and serves",
		registers,
		collect() {
			this.set(metrics()?.leasesHeld ?? 0);
		},
	});
	for (const [name, key, help] of COUNTERS) {
		new Counter({
			name,
			help,
			registers,
			collect() {
				// The node keeps the count; a counter's value only moves up with it.
				const value = metrics()?.[key];
				if (typeof value !== "number") return;
				this.reset();
				this.inc(value);
			},
		});
	}
	new Gauge({
		name: "vvm_leases_placement_driver_active",
		help: "1 while this host is the active placement driver, else 0",
		registers,
		collect() {
			this.set(metrics()?.placementDriverActive === true ? 1 : 0);
		},
	});
	new Gauge({
		name: "vvm_leases_active_actor",
		help: "1 for the active placement driver (address/incarnation) as this host last saw it",
		labelNames: ["actor"] as const,
		registers,
		collect() {
			this.reset();
			const actor = metrics()?.activeActor;
			if (actor !== undefined) this.set({ actor }, 1);
		},
	});
	const duration = new Histogram({
		name: "vvm_leases_tick_duration_seconds",
		help: "Placement-driver tick duration on this host (read, compute, write; monotonic clock)",
		buckets: TICK_BUCKETS,
		registers,
	});
	const cpu = new Histogram({
		name: "vvm_leases_tick_cpu_seconds",
		help: "CPU time of this process during a placement-driver tick",
		buckets: TICK_BUCKETS,
		registers,
	});
	return {
		onEvent(event) {
			if (event.type !== "tick") return;
			duration.observe(event.durationMs / 1000);
			cpu.observe(event.cpuMs / 1000);
		},
	};
}
