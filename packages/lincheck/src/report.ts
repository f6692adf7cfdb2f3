import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FenceRef, HistoryOp } from "./history.ts";
import { ITEM_ID_STEP } from "./model.ts";
import type { LincheckReport, WindowResult } from "./workload.ts";

/**
 * One line of a run's numbers: ops, unknown, not written, errors by code, windows, verdict.
 *
 * @example
 * ```ts
 * console.log(summary("mem", report));
 * ```
 */
export function summary(name: string, report: LincheckReport, faults?: object): string {
	const verdict =
		report.failed.length === 0
			? "linearizable"
			: `NOT linearizable in ${report.failed.length} of ${report.windows.length} windows (${report.failed
					.map((f) => `w${f.window}: ${f.verdict.kind}`)
					.join(", ")})`;
	const steps = report.windows.reduce((n, w) => n + w.verdict.steps, 0);
	const most = Math.max(0, ...report.windows.map((w) => w.verdict.steps));
	return `lincheck ${name}: ${report.ops} ops in ${report.windows.length} windows, ${report.unknown} unknown, ${report.notWritten} not written, errors ${JSON.stringify(report.errors)}${faults === undefined ? "" : `, faults ${JSON.stringify(faults)}`}, ${steps} search steps (at most ${most} in a window), ${report.ms} ms: ${verdict}`;
}

/** One line per operation of a window, in call order: to read a violation. */
export function describeWindow(result: WindowResult): string {
	const fence = (f: FenceRef | undefined): string => (f === undefined ? "" : ` @e${f.epoch}`);
	const show = (op: HistoryOp): string => {
		const i = op.input;
		switch (i.kind) {
			case "get":
				return `get k${i.key}`;
			case "insertIfNotExists":
				return `insert k${i.key}=${i.value}${fence(i.fence)}`;
			case "compareAndSwap":
				return `cas k${i.key} ${i.old}->${i.value}${fence(i.fence)}`;
			case "compareAndDelete":
				return `cad k${i.key} ${i.expected}${fence(i.fence)}`;
			case "put":
				return `put k${i.key}=${i.value}${fence(i.fence)}`;
			case "putBatch":
			case "putBatchIf":
				return `${i.kind} ${i.items
					.map(
						(it) =>
							`k${it.key}=${it.value}${it.expected === undefined ? "" : ` if ${String(it.expected)}`}${fence(it.fence)}`,
					)
					.join(", ")}`;
			case "raiseFence":
				return `raiseFence ${i.epoch ?? "+1"}`;
		}
	};
	const out = (op: HistoryOp): string =>
		"value" in op.output ? `${op.output.kind} ${String(op.output.value)}` : op.output.kind;
	const v = result.verdict;
	const name = (id: number): string =>
		id < ITEM_ID_STEP ? `#${id}` : `#${id % ITEM_ID_STEP}.${Math.floor(id / ITEM_ID_STEP)}`;
	const head =
		v.kind === "not-linearizable"
			? `window ${result.window}: not linearizable; longest linearized prefix ${v.longestPrefix.map(name).join(" ")}; stuck at the answer of ${name(v.stuckAt)}`
			: `window ${result.window}: ${v.kind}`;
	const lines = [...result.ops]
		.sort((a, b) => a.call - b.call)
		.map(
			(op) =>
				`#${op.id} c${op.client} [${op.call}, ${op.ret === Number.POSITIVE_INFINITY ? "∞" : op.ret}] stamp ${op.stamp}: ${show(op)} -> ${out(op)}`,
		);
	return [head, ...lines].join("\n");
}

/**
 * Writes every window that is not linearizable to `<dir>/lincheck-<name>-w<n>.txt`
 * ({@link describeWindow}) and its operations to `.json` beside it; returns the `.txt` paths.
 */
export function writeFailures(name: string, report: LincheckReport, dir = tmpdir()): string[] {
	return report.failed.map((f) => {
		const path = join(dir, `lincheck-${name}-w${f.window}.txt`);
		writeFileSync(path, `${describeWindow(f)}\n`);
		// The operations themselves, to check again (Infinity as null).
		writeFileSync(path.replace(/\.txt$/, ".json"), JSON.stringify(f.ops));
		return path;
	});
}
