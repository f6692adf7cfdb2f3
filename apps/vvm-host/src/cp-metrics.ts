import type { PartitionPlacement } from "@vvm/appparts";
import type { CommandProcessor } from "@vvm/cp";
import type { Registry } from "prom-client";
import { Counter, Gauge, Histogram } from "prom-client";

/** The command processor's metrics, on the host's registry. */
export interface CpMetrics {
	/** One answered API request: `kind` (create, update, read, command, wlog), `outcome` (`ok` or the failure). */
	observe(kind: string, outcome: string, status: number, seconds: number): void;
}

/**
 * Registers the command processor's metrics:
 *
 * - `vvm_cp_requests_total{kind,outcome}` (`outcome`: `ok`, `bad_request`, `not_found`,
 *   `not_allowed`, `conflict`, `busy`, `closed`, `storage`, `internal`, `misdirected` (421),
 *   `unavailable_<reason>`) and `vvm_cp_request_duration_seconds{kind}`;
 * - `vvm_cp_commands_total{outcome}`: the writes (create, update, command) only;
 * - `vvm_cp_conflicts_total`, `vvm_cp_unavailable_total{reason}` (every 503), `vvm_cp_misdirected_total` (421);
 * - from `cp.stats()` at scrape time: `vvm_cp_partitions_served`, `vvm_cp_flush_lag_values`
 *   (sequence values not yet flushed, summed, and `{partition}`), `vvm_cp_queued_commands`,
 *   `vvm_cp_actualizing_partitions`, `vvm_cp_recovery_conflicts` (found while actualizing, since deploy).
 *
 * @example
 * ```ts
 * const cpMetrics = createCpMetrics(registry, () => parts.cp, placement);
 * cpMetrics.observe("create", "ok", 201, 0.002);
 * ```
 */
export function createCpMetrics(
	registry: Registry,
	cp: () => CommandProcessor | undefined,
	placement: () => PartitionPlacement | undefined,
): CpMetrics {
	const registers = [registry];
	const requests = new Counter({
		name: "vvm_cp_requests_total",
		help: "API v2 requests answered, by kind and outcome",
		labelNames: ["kind", "outcome"] as const,
		registers,
	});
	const commands = new Counter({
		name: "vvm_cp_commands_total",
		help: "Commands (create, update, command) answered, by outcome",
		labelNames: ["outcome"] as const,
		registers,
	});
	const conflicts = new Counter({
		name: "vvm_cp_conflicts_total",
		help: "Commands failed with a sequences conflict (409)",
		registers,
	});
	const unavailable = new Counter({
		name: "vvm_cp_unavailable_total",
		help: "503 answers, by reason (busy, closed, storage, not_ready, no_holder)",
		labelNames: ["reason"] as const,
		registers,
	});
	for (const reason of ["busy", "closed", "storage", "not_ready", "no_holder"])
		unavailable.inc({ reason }, 0);
	const misdirected = new Counter({
		name: "vvm_cp_misdirected_total",
		help: "421 answers: the partition is served by another host",
		registers,
	});
	const duration = new Histogram({
		name: "vvm_cp_request_duration_seconds",
		help: "API v2 request latency, by kind",
		labelNames: ["kind"] as const,
		buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1],
		registers,
	});
	const stats = () => cp()?.stats();
	new Gauge({
		name: "vvm_cp_partitions_served",
		help: "Partitions this host serves now",
		registers,
		collect() {
			this.set(placement()?.served().length ?? 0);
		},
	});
	new Gauge({
		name: "vvm_cp_flush_lag_values",
		help: "Flush lag: sequence values not yet written to storage, all partitions or {partition}",
		labelNames: ["partition"] as const,
		registers,
		collect() {
			this.reset();
			const s = stats();
			this.set(s?.totals.unflushedValues ?? 0);
			for (const p of s?.partitions ?? [])
				this.set({ partition: String(p.partitionId) }, p.unflushedValues);
		},
	});
	new Gauge({
		name: "vvm_cp_queued_commands",
		help: "Commands queued or running, all partitions",
		registers,
		collect() {
			this.set(stats()?.totals.queued ?? 0);
		},
	});
	new Gauge({
		name: "vvm_cp_actualizing_partitions",
		help: "Partitions whose sequencer is actualizing (their commands answer 503)",
		registers,
		collect() {
			this.set(stats()?.totals.actualizing ?? 0);
		},
	});
	new Gauge({
		name: "vvm_cp_recovery_conflicts",
		help: "Conflicts of deployed partitions since their deploy (commands and recovery)",
		registers,
		collect() {
			this.set(stats()?.totals.conflicts ?? 0);
		},
	});
	// The labelled children, looked up once per label set: an answered request then costs two
	// increments and one observation, not a label hash each.
	const perRequest = new Map<string, { requests: { inc(): void }; commands?: { inc(): void } }>();
	const perKind = new Map<string, { observe(value: number): void }>();
	return {
		observe(kind, outcome, status, seconds) {
			const key = `${kind} ${outcome}`;
			let children = perRequest.get(key);
			if (children === undefined) {
				const write = kind === "create" || kind === "update" || kind === "command";
				children = {
					requests: requests.labels(kind, outcome),
					...(write ? { commands: commands.labels(outcome) } : {}),
				};
				perRequest.set(key, children);
			}
			children.requests.inc();
			children.commands?.inc();
			let histogram = perKind.get(kind);
			if (histogram === undefined) {
				histogram = duration.labels(kind);
				perKind.set(kind, histogram);
			}
			histogram.observe(seconds);
			if (outcome === "conflict") conflicts.inc();
			if (outcome === "misdirected") misdirected.inc();
			if (status === 503) unavailable.inc({ reason: outcome.replace(/^unavailable_/, "") });
		},
	};
}
