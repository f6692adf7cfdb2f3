// `--mutants`: the same chaos run against deliberately broken hosts (vvm-host's test-only
// VVM_UNSAFE_MUTANTS), one run per combination, to show the checker fails when safety is gone.
import { join } from "node:path";
import type { ChaosOptions, MutantName } from "./options.ts";
import { MUTANT_NAMES } from "./options.ts";
import type { RunResult } from "./run.ts";
import { runChaos } from "./run.ts";

/** One combination's outcome. */
export interface MutantOutcome {
	readonly mutants: readonly MutantName[];
	/** The checker found an overlap, a lease overlap or a token regression. */
	readonly caught: boolean;
	/** The hosts announced exactly these mutants (else the run proves nothing about them). */
	readonly confirmed: boolean;
	readonly result: RunResult;
}

/** Whether `combo` removes every mechanism: the combination the checker must catch. */
const removesAll = (combo: readonly MutantName[]): boolean =>
	MUTANT_NAMES.every((m) => combo.includes(m));

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
			caught: r.overlapCount > 0 || r.leaseOverlapCount > 0 || r.tokenRegressionCount > 0,
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
		const name = o.mutants.length === 0 ? "control (none)" : o.mutants.join(" + ");
		return `| ${name} | ${o.caught ? "caught" : "not caught"} | ${r.overlapCount} | ${Math.round(r.maxOverlapMs)} | ${r.leaseOverlapCount} | ${r.tokenRegressionCount} | ${r.changes} | ${r.faults["stop-long"] ?? 0}/${r.faults["proxy-drop"] ?? 0}/${r.faults["storage-pause"] ?? 0} | ${o.confirmed ? "yes" : "NO"} |`;
	});
	return [
		"| mutants | checker | overlaps | longest (ms) | lease overlaps | token regressions | changes | stop-long/proxy-drop/storage-pause | hosts confirmed |",
		"| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
		...rows,
	].join("\n");
}

/** Exit status of `--mutants`: every all-three combination caught and confirmed, the control clean. */
export function mutantsPassed(outcomes: readonly MutantOutcome[]): boolean {
	return outcomes.every((o) => {
		if (!o.confirmed) return false;
		if (o.mutants.length === 0) return o.result.report.ok;
		return removesAll(o.mutants) ? o.caught : true;
	});
}
