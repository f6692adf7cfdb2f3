// `--mutants`: the same chaos run against deliberately broken hosts (vvm-host's test-only
// VVM_UNSAFE_MUTANTS), one run per combination, to show the checker fails when safety is gone.
import { join } from "node:path";
import type { ChaosOptions, MutantName } from "./options.ts";
import { LEADERSHIP_MUTANTS } from "./options.ts";
import type { RunResult } from "./run.ts";
import { commandsPassed, runChaos } from "./run.ts";

/** One combination's outcome. */
export interface MutantOutcome {
	readonly mutants: readonly MutantName[];
	/**
	 * The checker failed the run: leadership, an overlap, a lease overlap or a token regression;
	 * commands, an anomaly in the history.
	 */
	readonly caught: boolean;
	/** The hosts announced exactly these mutants (else the run proves nothing about them). */
	readonly confirmed: boolean;
	readonly result: RunResult;
}

/**
 * Whether the checker must catch `combo`: leadership, one that removes all three of its
 * mechanisms (one alone is covered by the others); commands, the unfenced command processor.
 */
const mustCatch = (combo: readonly MutantName[], workload: ChaosOptions["workload"]): boolean =>
	workload === "commands"
		? combo.includes("unfenced")
		: LEADERSHIP_MUTANTS.every((m) => combo.includes(m));

/**
 * Whether the checkers caught a mutant's run: leadership, an overlap, a lease overlap or a token
 * regression; commands, a safety anomaly in the history. A commands run that acknowledged too
 * little to be checked (`CommandReport.tooLittle`) fails as a run but catches nothing: it proves
 * nothing either way, so it leaves a mutant that must be caught uncaught.
 */
export function mutantCaught(result: RunResult): boolean {
	const r = result.report;
	if (result.options.workload === "commands") return (result.commands?.anomalies.length ?? 0) > 0;
	return r.overlapCount > 0 || r.leaseOverlapCount > 0 || r.tokenRegressionCount > 0;
}

/**
 * Runs each combination (and, first, an unmutated control when `withControl`) with the same seed.
 *
 * @example
 * ```ts
 * const outcomes = await runMutants(options, [["killer", "lease-check", "lease-timer"]], false, console.log);
 * ```
 */
export async function runMutants(
	options: ChaosOptions,
	combos: readonly (readonly MutantName[])[],
	withControl: boolean,
	say: (line: string) => void,
	stop: AbortSignal,
	baseDir: string,
): Promise<MutantOutcome[]> {
	const outcomes: MutantOutcome[] = [];
	for (const combo of withControl ? [[], ...combos] : combos) {
		if (stop.aborted) break;
		const name = combo.length === 0 ? "control" : combo.join("+");
		say(`\n[mutants] ${name}`);
		const result = await runChaos(
			{ ...options, unsafeMutants: combo, mutantCombos: undefined, outDir: join(baseDir, name) },
			say,
			stop,
		);
		const r = result.report;
		outcomes.push({
			mutants: combo,
			caught: mutantCaught(result),
			confirmed: combo.every((m) => r.mutants.includes(m)) && r.mutants.length === combo.length,
			result,
		});
	}
	return outcomes;
}

/** The matrix as a table, and the verdict line. */
export function mutantsTable(outcomes: readonly MutantOutcome[]): string {
	const rows = outcomes.map((o) => {
		const r = o.result.report;
		const c = o.result.commands;
		if (c !== undefined) {
			const name = o.mutants.length === 0 ? "control (none)" : o.mutants.join(" + ");
			return `| ${name} | ${o.caught ? "caught" : "not caught"} | ${c.anomalies.length} anomalies (${
				Object.entries(c.anomalyKinds)
					.map(([k, n]) => `${k} ${n}`)
					.join(", ") || "-"
			}) | ops ${c.ops}, acknowledged ${c.acknowledged}, unknown ${c.unknown} | ${o.confirmed ? "yes" : "NO"} |`;
		}
		const name = o.mutants.length === 0 ? "control (none)" : o.mutants.join(" + ");
		return `| ${name} | ${o.caught ? "caught" : "not caught"} | ${r.overlapCount} | ${Math.round(r.maxOverlapMs)} | ${r.leaseOverlapCount} | ${r.tokenRegressionCount} | ${r.changes} | ${r.faults["stop-long"] ?? 0}/${r.faults["proxy-drop"] ?? 0}/${r.faults["storage-pause"] ?? 0} | ${o.confirmed ? "yes" : "NO"} |`;
	});
	const header =
		outcomes[0]?.result.commands !== undefined
			? [
					"| mutants | checker | anomalies | operations | hosts confirmed |",
					"| --- | --- | --- | --- | --- |",
				]
			: [
					"| mutants | checker | overlaps | longest (ms) | lease overlaps | token regressions | changes | stop-long/proxy-drop/storage-pause | hosts confirmed |",
					"| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
				];
	return [...header, ...rows].join("\n");
}

/** Exit status of `--mutants`: every combination that must be caught was, confirmed; the control clean. */
export function mutantsPassed(outcomes: readonly MutantOutcome[]): boolean {
	return outcomes.every((o) => {
		if (!o.confirmed) return false;
		if (o.mutants.length === 0) return o.result.report.ok && commandsPassed(o.result);
		return mustCatch(o.mutants, o.result.options.workload) ? o.caught : true;
	});
}
