#!/usr/bin/env node
// pnpm chaos: see `pnpm chaos --help` and the README.
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { REPO_ROOT } from "./host-command.ts";
import { mutantsPassed, mutantsTable, runMutants } from "./mutants.ts";
import { ALL_MUTANT_COMBOS, ChaosUsageError, chaosHelp, parseChaosOptions } from "./options.ts";
import { runChaos, runPassed } from "./run.ts";
import { checkRunDir, RUN_FILES } from "./run-files.ts";
import { reportLines, summaryText } from "./summary.ts";

const say = (line: string): void => {
	process.stdout.write(`${line}\n`);
};

async function main(): Promise<number> {
	let options: ReturnType<typeof parseChaosOptions>;
	try {
		options = parseChaosOptions(process.argv.slice(2));
	} catch (error) {
		if (!(error instanceof ChaosUsageError)) throw error;
		process.stderr.write(`chaos: ${error.message}\nRun pnpm chaos --help for the options.\n`);
		return 2;
	}
	if (options === undefined) {
		say(chaosHelp());
		return 0;
	}
	// Paths are the caller's: `pnpm chaos` runs this in apps/chaos, pnpm says where it was called.
	const here = (path: string): string => resolve(process.env.INIT_CWD ?? process.cwd(), path);
	if (options.outDir !== undefined) options = { ...options, outDir: here(options.outDir) };
	if (options.check !== undefined) {
		const report = await checkRunDir(here(options.check));
		say(reportLines(report).join("\n"));
		return report.ok ? 0 : 1;
	}
	// First Ctrl-C: stop the run, undo the faults and check what was collected. Second: leave now
	// (the exit handler SIGKILLs every process the run started).
	const stop = new AbortController();
	process.on("SIGINT", () => {
		if (stop.signal.aborted) process.exit(130);
		say("[chaos] interrupted: stopping and checking what ran (Ctrl-C again to leave at once)");
		stop.abort();
	});
	process.on("SIGTERM", () => stop.abort());

	if (options.mutantCombos !== undefined) {
		const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
		const baseDir =
			options.outDir ?? join(REPO_ROOT, ".chaos", `${stamp}-mutants-seed${options.seed}`);
		mkdirSync(baseDir, { recursive: true });
		const withControl = options.mutantCombos === ALL_MUTANT_COMBOS;
		const outcomes = await runMutants(
			options,
			options.mutantCombos,
			withControl,
			say,
			stop.signal,
			baseDir,
		);
		const table = mutantsTable(outcomes);
		const passed = mutantsPassed(outcomes);
		const verdict = passed
			? "mutants: PASS (every combination that must be caught was caught)"
			: "mutants: FAIL (a combination that must be caught was not, a host did not run its mutants, or the control failed)";
		writeFileSync(join(baseDir, RUN_FILES.summary), `${table}\n${verdict}\n`);
		say(`\n${table}\n${verdict}\nlogs: ${baseDir}`);
		return passed && !stop.signal.aborted ? 0 : 1;
	}

	const result = await runChaos(options, say, stop.signal);
	const text = summaryText(result);
	writeFileSync(join(result.outDir, RUN_FILES.summary), `${text}\n`);
	say(`\n${text}`);
	return runPassed(result) ? 0 : 1;
}

main().then(
	(code) => process.exit(code),
	(error: unknown) => {
		process.stderr.write(
			`chaos: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
		);
		process.exit(1);
	},
);
