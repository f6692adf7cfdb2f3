// The hosts' `leases.slow-loop` warnings over a run: storage too slow for the run's lease
// interval. A run that never serves, or serves late, on an overloaded machine says so in its
// summary instead of leaving it to a reader of every host's log.
import type { HostLine } from "./chaos-host.ts";

/** The longest run of one loop over its interval, across every host of a run. */
export interface SlowLoopWorst {
	readonly durationMs: number;
	readonly intervalMs: number;
}

/** What the hosts warned of: warnings, slow runs they stand for, and the longest per loop. */
export interface SlowLoopsReport {
	readonly warnings: number;
	readonly runs: number;
	readonly worst: Readonly<Record<string, SlowLoopWorst>>;
}

/** Tallies the `leases.slow-loop` lines of every host. */
export class SlowLoops {
	#warnings = 0;
	#runs = 0;
	readonly #worst: Record<string, SlowLoopWorst> = {};

	/** Counts `line` when it is a slow-loop warning; ignores every other line. */
	record(line: HostLine): void {
		if (line.event !== "leases.slow-loop") return;
		const { loop, durationMs, intervalMs, runs } = line;
		if (
			typeof loop !== "string" ||
			typeof durationMs !== "number" ||
			typeof intervalMs !== "number"
		)
			return;
		this.#warnings++;
		this.#runs += typeof runs === "number" ? runs : 1;
		const worst = this.#worst[loop];
		if (worst === undefined || durationMs > worst.durationMs)
			this.#worst[loop] = { durationMs, intervalMs };
	}

	/** `undefined` when no host warned. */
	report(): SlowLoopsReport | undefined {
		return this.#warnings === 0
			? undefined
			: { warnings: this.#warnings, runs: this.#runs, worst: { ...this.#worst } };
	}
}

/** One line for the summary: how many, and the longest run of each loop against its interval. */
export function slowLoopsText(report: SlowLoopsReport): string {
	const worst = Object.entries(report.worst)
		.sort(([a], [b]) => a.localeCompare(b))
		.map(([loop, w]) => `${loop} ${Math.round(w.durationMs)} ms (interval ${w.intervalMs} ms)`)
		.join(", ");
	return `${report.warnings} warning(s) from the hosts, ${report.runs} heartbeat/poll/tick run(s) longer than their interval; longest: ${worst}. Storage this slow lets leases lapse (@vvm/leases README, "Slow storage")`;
}
