// A commands run's verdict needs acknowledged operations: every check of the commands checker is
// about acknowledged answers, so a run that acknowledged nothing passed all of them (found by
// review: `requireActs: false` for commands, no minimum in `checkCommandHistory`, `runPassed` or
// the `--mutants` control).
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { CheckReport } from "../src/checker.ts";
import { createChecker } from "../src/checker.ts";
import type { CommandReport } from "../src/command-checker.ts";
import {
	checkCommandHistory,
	MIN_ACKED_SHARE,
	tooLittleAcknowledged,
} from "../src/command-checker.ts";
import type { OpRecord } from "../src/command-load.ts";
import type { MutantOutcome } from "../src/mutants.ts";
import { mutantCaught, mutantsPassed } from "../src/mutants.ts";
import type { ChaosOptions } from "../src/options.ts";
import { checkDeployments } from "../src/partition-epochs.ts";
import type { RunResult } from "../src/run.ts";
import { runPassed } from "../src/run.ts";
import { summaryText } from "../src/summary.ts";

const scope = { appId: 1, partitions: 8 };

/** `n` creates, each refused with 503 on every attempt: a host that never commits anything. */
const refusedOps = (n: number): OpRecord[] =>
	Array.from({ length: n }, (_, i) => ({
		client: 1 + (i % 8),
		op: `c${1 + (i % 8)}o${i}`,
		kind: "create",
		wsid: 1001 + (i % 24),
		outcome: "not-written",
		okAnswers: [],
		attempts: ["503", "503", "503", "refused"],
		replays: 0,
		startMono: i,
		endMono: i + 1,
	}));

/** A commands run's result as `runChaos` returns it, with the given command report. */
function commandsRun(commands: CommandReport | undefined): RunResult {
	const report: CheckReport = createChecker({ requireActs: false }).report();
	return {
		options: { workload: "commands", seed: "t", hosts: 4 } as unknown as ChaosOptions,
		outDir: "/tmp/none",
		build: "dist",
		storage: "mem",
		elapsedMs: 1000,
		stopReason: "duration",
		targetReached: true,
		load: { accepted: 0, refused: 0, failed: 0 },
		hostStarts: 4,
		report,
		...(commands === undefined ? {} : { commands }),
		epochs: checkDeployments([]),
	} as RunResult;
}

describe("a commands run must acknowledge operations to pass", () => {
	it("zero operations: the commands report fails, and so does the run", async () => {
		const commands = await checkCommandHistory([], createMemTTLStorage(), scope);
		expect(commands.anomalies).toEqual([]);
		expect(commands.ok).toBe(false);
		expect(commands.tooLittle).toBe("no client operation at all: nothing was checked");
		const run = commandsRun(commands);
		expect(runPassed(run)).toBe(false);
		expect(summaryText(run)).toContain(
			"commands verdict:    FAIL: 0 anomalies; no client operation at all: nothing was checked",
		);
	});

	it("every command refused with 503 (a host that never commits): FAIL, with the reason", async () => {
		const commands = await checkCommandHistory(refusedOps(500), createMemTTLStorage(), scope);
		expect(commands.anomalies).toEqual([]);
		expect(commands.acknowledged).toBe(0);
		expect(commands.ok).toBe(false);
		expect(commands.tooLittle).toBe(
			"no operation acknowledged (0 of 500): nothing acknowledged was checked",
		);
		expect(runPassed(commandsRun(commands))).toBe(false);
	});

	it("a commands run without a checked history fails", () => {
		const run = commandsRun(undefined);
		expect(runPassed(run)).toBe(false);
		expect(summaryText(run)).toContain("commands verdict:    FAIL: no client history was checked");
	});

	it(`the floor: at least ${MIN_ACKED_SHARE * 100} % of the operations acknowledged`, () => {
		expect(tooLittleAcknowledged(100, 24)).toBe(
			"too few operations acknowledged: 24 of 100 (24.0 %, below 25 %)",
		);
		expect(tooLittleAcknowledged(100, 25)).toBeUndefined();
		expect(tooLittleAcknowledged(1737, 1736)).toBeUndefined();
		expect(tooLittleAcknowledged(68, 58)).toBeUndefined(); // the slowest measured run (README)
	});

	it("--mutants: a control that acknowledged nothing fails the matrix; such a mutant run is not 'caught'", async () => {
		const nothing = commandsRun(await checkCommandHistory([], createMemTTLStorage(), scope));
		const control: MutantOutcome = { mutants: [], caught: false, confirmed: true, result: nothing };
		expect(mutantsPassed([control])).toBe(false);
		expect(mutantCaught(nothing)).toBe(false);
		const unfenced: MutantOutcome = {
			mutants: ["unfenced"],
			caught: mutantCaught(nothing),
			confirmed: true,
			result: nothing,
		};
		expect(mutantsPassed([unfenced])).toBe(false);
	});
});
