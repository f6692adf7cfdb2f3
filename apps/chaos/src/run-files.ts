// The files of a run directory, and reading them back into the checker.
import { createReadStream, existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import type { AnswerRecord, Checker, CheckReport, EventRecord, HostRecord } from "./checker.ts";
import { createChecker } from "./checker.ts";
import type { OpRecord } from "./command-load.ts";

/** Where a run keeps what the checker reads. */
export const RUN_FILES = {
	/** The chaos tool's own events: faults, host starts and exits. */
	events: "events.jsonl",
	/** Accepted units of work as the load generator received them. */
	answers: "answers.jsonl",
	/** commands: every client operation and the answers it got. */
	history: "history.jsonl",
	/** One file per host, every incarnation's stdout lines unchanged. */
	hostsDir: "hosts",
	/** The options and the host command of the run. */
	run: "run.json",
	report: "report.json",
	summary: "summary.txt",
} as const;

/** The log file of host `name`. */
export const hostLogFile = (dir: string, name: string): string =>
	join(dir, RUN_FILES.hostsDir, `${name}.log`);

/** Calls `onLine` with every JSON line of `path` (none when it does not exist). */
export async function eachJsonLine(path: string, onLine: (value: unknown) => void): Promise<void> {
	if (!existsSync(path)) return;
	const lines = createInterface({
		input: createReadStream(path),
		crlfDelay: Number.POSITIVE_INFINITY,
	});
	for await (const text of lines) {
		if (text.trim() === "") continue;
		try {
			onLine(JSON.parse(text));
		} catch {
			// A line that is not JSON (a host's stray output) is not evidence of anything.
		}
	}
}

/** The clients' operations of a finished commands run (history.jsonl), in the order written. */
export async function readHistory(dir: string): Promise<OpRecord[]> {
	const ops: OpRecord[] = [];
	await eachJsonLine(join(dir, RUN_FILES.history), (v) => ops.push(v as OpRecord));
	return ops;
}

/** The workload a run directory's `run.json` names (`leadership` when it names none). */
function workloadOf(dir: string): string {
	const path = join(dir, RUN_FILES.run);
	if (!existsSync(path)) return "leadership";
	const run = JSON.parse(readFileSync(path, "utf8")) as { options?: { workload?: string } };
	return run.options?.workload ?? "leadership";
}

/**
 * Checks the run in `dir` from its files alone: the hosts' logs, the answers, the run events.
 *
 * @example
 * ```ts
 * const report = await checkRunDir(".chaos/2026-11-23T10-00-00-seed7");
 * ```
 */
export async function checkRunDir(dir: string, checker?: Checker): Promise<CheckReport> {
	const hostsDir = join(dir, RUN_FILES.hostsDir);
	if (!existsSync(hostsDir))
		throw new Error(`${dir} is not a chaos run directory (no ${RUN_FILES.hostsDir}/)`);
	checker ??= createChecker({ requireActs: workloadOf(dir) !== "commands" });
	for (const file of readdirSync(hostsDir).sort()) {
		if (!file.endsWith(".log") || file.endsWith(".stderr.log")) continue;
		const host = file.slice(0, -".log".length);
		await eachJsonLine(join(hostsDir, file), (v) => checker.addHostLine(host, v as HostRecord));
	}
	await eachJsonLine(join(dir, RUN_FILES.answers), (v) => checker.addAnswer(v as AnswerRecord));
	await eachJsonLine(join(dir, RUN_FILES.events), (v) => checker.addEvent(v as EventRecord));
	return checker.report();
}
