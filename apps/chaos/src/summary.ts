// The human summary of a run (also written to summary.txt).
import type { CheckReport, Distribution, Overlap } from "./checker.ts";
import type { CommandReport } from "./command-checker.ts";
import { FAULT_KINDS } from "./faults-catalog.ts";
import type { FinalRecovery } from "./final-recovery.ts";
import { FIRST_SERVE_CAP_MS, FIRST_SERVE_QUIET_MS, firstServeText } from "./first-serve.ts";
import type { RunResult } from "./run.ts";
import { slowLoopsText } from "./slow-loops.ts";

const ms = (v: number | undefined): string => (v === undefined ? "-" : `${Math.round(v)} ms`);
const dist = (d: Distribution): string =>
	d.n === 0
		? "none measured"
		: `median ${ms(d.medianMs)}, max ${ms(d.maxMs)}, min ${ms(d.minMs)} (n = ${d.n})`;
const overlapText = (o: Overlap): string =>
	`slot ${o.slot}: ${o.earlier.host} ${o.earlier.holder} (token ${o.earlier.fencingToken}) still ${Math.round(o.ms)} ms into ${o.later.host} ${o.later.holder} (token ${o.later.fencingToken}, acquired at mono ${o.later.start.toFixed(1)})`;

/**
 * The checker's findings, as lines.
 *
 * @example
 * ```ts
 * console.log(reportLines(report).join("\n"));
 * ```
 */
export function reportLines(r: CheckReport): string[] {
	const faults = FAULT_KINDS.map((k) => `${k} ${r.faults[k] ?? 0}`).join(", ");
	const total = Object.values(r.faults).reduce((a, b) => a + b, 0);
	const exits = Object.entries(r.hostExits)
		.map(([how, n]) => `${how} ${n}`)
		.join(", ");
	const lines = [
		`verdict:             ${r.ok ? "PASS" : "FAIL"}${r.ok ? "" : `: ${r.failures.join("; ")}`}${r.acts.answersWithoutLogLine > 0 ? `${r.ok ? " (" : "; "}note: ${r.acts.answersWithoutLogLine} answer(s) without a work log line, checked from the answer alone${r.ok ? ")" : ""}` : ""}`,
		`leadership changes:  ${r.changes} (${Object.entries(r.changesPerSlot)
			.map(([s, n]) => `slot ${s}: ${n}`)
			.join(", ")}; ${r.tenures} tenures)`,
		`overlaps:            ${r.overlapCount}${r.overlapCount === 0 ? "" : ` (longest ${Math.round(r.maxOverlapMs)} ms)`}; lease overlaps ${r.leaseOverlapCount}; token regressions ${r.tokenRegressionCount}`,
		`faults:              ${total} (${faults})`,
		`failover after kill: ${dist(r.failoverAfterKill)}`,
		`failover after stop-long: ${dist(r.failoverAfterStopLong)}`,
		`smallest gap:        ${ms(r.minGapMs)} from a leader's last act to the next acquisition; ${ms(r.minLeaseGapMs)} from its lease end`,
		`acts checked:        ${r.acts.total} (${r.acts.fromLogs} work log lines, ${r.acts.fromAnswers} answers; ${r.acts.tenuresWithActs}/${r.tenures} tenures acted; ${r.acts.answersWithoutLogLine} answers without a log line)`,
		`host exits:          ${exits || "-"}; ${r.killedByOwnKiller} SIGKILLs not from a kill fault (the host's own killer)`,
	];
	if (r.mutants.length > 0) lines.push(`hosts ran mutants:   ${r.mutants.join(", ")}`);
	for (const o of r.overlaps.slice(0, 5)) lines.push(`  overlap: ${overlapText(o)}`);
	for (const o of r.leaseOverlaps.slice(0, 3)) lines.push(`  lease overlap: ${overlapText(o)}`);
	for (const t of r.tokenRegressions.slice(0, 3)) {
		lines.push(
			`  token regression: slot ${t.slot} ${t.where} ${t.from} -> ${t.to} at mono ${t.mono.toFixed(1)}`,
		);
	}
	return lines;
}

/** The commands checker's findings, as lines. */
function commandLines(
	c: CommandReport,
	partitionMoves: number | undefined,
	recovery: FinalRecovery | undefined,
): string[] {
	const kinds = Object.entries(c.anomalyKinds)
		.map(([k, n]) => `${k} ${n}`)
		.join(", ");
	return [
		`commands verdict:    ${c.ok ? "PASS" : "FAIL"}: ${c.anomalies.length} anomalies${kinds === "" ? "" : ` (${kinds})`}${c.tooLittle === undefined ? "" : `; ${c.tooLittle}`}`,
		`operations:          ${c.ops} (${c.creates} creates, ${c.updates} updates): acknowledged ${c.acknowledged}, unknown ${c.unknown} (${c.unknownApplied} of them applied), nothing written ${c.notWritten}, rejected ${c.rejected}; ${c.retried} retried, ${c.replays} answers replayed by idempotency key`,
		`storage:             ${c.events} events (${c.markedEvents} marked corrupted); checkCpStorage problems ${c.storageProblems.length}${partitionMoves === undefined ? "" : `; partition moves ${partitionMoves}`}`,
		...(recovery === undefined
			? []
			: [
					`final recovery:      ${recovery.partitions} partitions deployed once more before the check: ${recovery.actualizedEvents} PLog events read past the stored offsets, ${recovery.reappliedEvents} of them (re)applied, ${recovery.corruptedOffsets} corrupted offsets; as stored before it: ${recovery.before.length === 0 ? "no problem" : `${recovery.before.length} problems (below)`}`,
					...recovery.before.slice(0, 5).map((l) => `  before recovery: ${l}`),
				]),
		...c.anomalies.slice(0, 10).map((a) => `  anomaly: ${a}`),
	];
}

/** The partition-epoch check and the operator actions, as lines. */
function epochLines(result: RunResult): string[] {
	const e = result.epochs;
	const op = result.operator;
	return [
		...(e === undefined
			? []
			: [
					`partition epochs:    ${e.ok ? "PASS" : "FAIL"}: ${e.deployments} deployments, ${e.epochs} (partition, epoch) pairs, ${e.anomalies.length} served by two incarnations; ${e.outOfOrder} logged out of epoch order`,
					...e.anomalies.slice(0, 10).map((a) => `  anomaly: ${a}`),
				]),
		...(op === undefined
			? []
			: [
					`operator actions:    ${op.ok ? "PASS" : "FAIL"}: ${op.actions.length} (${op.actions.filter((a) => !a.ok).length} failed)`,
					...op.actions.map(
						(a) =>
							`  ${a.action} at ${((a.startMono - op.actions[0]!.startMono) / 1000).toFixed(1)} s, ${((a.endMono - a.startMono) / 1000).toFixed(1)} s: ${a.ok ? "done" : `FAILED: ${a.problem}`} ${JSON.stringify(a.details)}`,
					),
				]),
	];
}

/** What ran: the commands workload's partitions and leases, or the elections' slots. */
function clusterLine(result: RunResult): string {
	const o = result.options;
	return o.workload === "commands"
		? `cluster:             ${o.hosts} hosts (${result.build}), --placement ${o.placement}${o.placement === "static" ? ` (--num-vvm ${o.numVVM})` : ""}, ${o.partitions} partitions, lease ${o.leaseIntervalMs} ms (skew ${o.leaseMaxClockSkewMs} ms), trust level ${o.trustLevel}${o.pipelineDepth === undefined ? "" : `, pipeline depth ${o.pipelineDepth}`}, ${result.hostStarts} host starts; ${result.storage}`
		: `cluster:             ${o.hosts} hosts (${result.build}), ${o.numVVM} slot(s), d = ${o.leadershipSeconds} s, ${result.hostStarts} host starts; ${result.storage}`;
}

/** The hosts' slow-loop warnings, when there were any. */
function slowLine(result: RunResult): string[] {
	return result.slowLoops === undefined
		? []
		: [`slow storage:        ${slowLoopsText(result.slowLoops)}`];
}

/** The summary of a run: what ran, for how long, and the checker's findings. */
export function summaryText(result: RunResult): string {
	const o = result.options;
	if (result.commands !== undefined)
		return [
			`=== chaos summary, commands workload (seed ${o.seed}) ===`,
			`run:                 ${(result.elapsedMs / 1000).toFixed(1)} s, ended by ${result.stopReason}`,
			clusterLine(result),
			...slowLine(result),
			`clients:             ${o.clients} over ${o.workspaces} workspaces`,
			...commandLines(result.commands, result.partitionMoves, result.finalRecovery),
			...epochLines(result),
			...reportLines(result.report).filter((l) => /^(faults|host exits|hosts ran mutants)/.test(l)),
			`logs:                ${result.outDir}`,
		].join("\n");
	return [
		`=== chaos summary (seed ${o.seed}) ===`,
		`run:                 ${(result.elapsedMs / 1000).toFixed(1)} s, ended by ${result.stopReason}${o.changes === undefined ? "" : `; target ${o.changes} changes ${result.targetReached ? "reached" : "NOT reached"}`}`,
		...(result.firstServe === undefined
			? []
			: [
					`first leaders:       ${firstServeText(result.firstServe, o.workload === "commands")} (the run gives up after ${FIRST_SERVE_QUIET_MS / 1000} s without a lease granted or a ${o.workload === "commands" ? "partition" : "slot"} newly served, or ${FIRST_SERVE_CAP_MS / 1000} s in all)`,
				]),
		clusterLine(result),
		...slowLine(result),
		`load:                ${result.load.accepted} accepted, ${result.load.refused} refused, ${result.load.failed} without answer`,
		...(o.workload === "commands"
			? ["commands verdict:    FAIL: no client history was checked (the clients never started)"]
			: []),
		...reportLines(result.report),
		`logs:                ${result.outDir}`,
	].join("\n");
}
