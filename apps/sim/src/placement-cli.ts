// `pnpm --filter @vvm/sim sim --placement …`: the placement part of the simulator (README,
// "Placement"). Runs seeds of `runPlacementSeed`, or replays one with its trace.
import { parseArgs } from "node:util";
import type { PlacementFailure, PlacementFailureKind, PlacementResult } from "./placement-world.ts";
import {
	PLACEMENT_TREE_FIXED,
	placementFailureMatches,
	runPlacementSeed,
} from "./placement-world.ts";

const KINDS: readonly PlacementFailureKind[] = [
	"same-epoch",
	"overlap",
	"dark",
	"revived",
	"served-closed",
	"error",
];

/** Summary of {@link runPlacementSeeds}. */
export interface PlacementSummary {
	readonly seeds: number;
	readonly ms: number;
	readonly cpuMs: number;
	readonly seedsPerSecond: number;
	readonly failed: readonly { readonly seed: number; readonly failure: PlacementFailure }[];
	/** Simulated ms of the slowest recovery after the faults stopped. */
	readonly worstRecoveryMs: number;
}

/**
 * Runs seeds `from, from + 1, …` (`count` of them, or until `budgetMs` of wall time, or the first
 * failure of a `stopOn` kind).
 *
 * @example
 * ```ts
 * const s = await runPlacementSeeds({ from: 1, count: 20 });
 * expect(s.failed).toEqual([]);
 * ```
 */
export async function runPlacementSeeds(o: {
	from: number;
	count: number;
	stopOn?: readonly string[];
	mode?: "static" | "leases";
	budgetMs?: number;
	progress?: (line: string) => void;
}): Promise<PlacementSummary> {
	const t0 = Date.now();
	const cpu0 = process.cpuUsage();
	let lastProgress = t0;
	const failed: { seed: number; failure: PlacementFailure }[] = [];
	let seeds = 0;
	let worst = 0;
	for (let seed = o.from; seed < o.from + o.count; seed++) {
		const r: PlacementResult = await runPlacementSeed(seed, {
			...(o.stopOn === undefined ? {} : { stopOn: o.stopOn }),
			...(o.mode === undefined ? {} : { mode: o.mode }),
		});
		seeds++;
		worst = Math.max(worst, r.recoveredMs ?? 0);
		for (const failure of r.failures) failed.push({ seed, failure });
		if (
			o.stopOn !== undefined &&
			r.failures.some((f) => placementFailureMatches(f, o.stopOn ?? []))
		)
			break;
		if (o.budgetMs !== undefined && Date.now() - t0 > o.budgetMs) break;
		if (o.progress !== undefined && Date.now() - lastProgress > 5_000) {
			lastProgress = Date.now();
			o.progress(`  … ${seeds} seeds, ${failed.length} failures`);
		}
	}
	const ms = Date.now() - t0;
	const cpu = process.cpuUsage(cpu0);
	return {
		seeds,
		ms,
		cpuMs: (cpu.user + cpu.system) / 1000,
		seedsPerSecond: seeds / Math.max(ms / 1000, 0.001),
		failed,
		worstRecoveryMs: worst,
	};
}

/**
 * The `--placement` command line: `--seeds N [--from N] [--stop-on kinds] [--json] [--budget-ms MS]`
 * or `--seed N [--trace]`. Returns the exit code (1 when a seed failed).
 */
export async function placementMain(args: string[]): Promise<number> {
	const { values } = parseArgs({
		args,
		options: {
			placement: { type: "boolean", default: true },
			seeds: { type: "string", default: "200" },
			from: { type: "string", default: "1" },
			seed: { type: "string" },
			trace: { type: "boolean", default: false },
			"stop-on": { type: "string" },
			json: { type: "boolean", default: false },
			"budget-ms": { type: "string" },
			mode: { type: "string" },
		},
	});
	const mode = values.mode as "static" | "leases" | undefined;
	if (mode !== undefined && mode !== "static" && mode !== "leases") {
		console.error("--mode is static or leases");
		return 2;
	}
	const tree = PLACEMENT_TREE_FIXED ? "fixed tree" : "tree without per-partition epochs";
	if (values.seed !== undefined) {
		const seed = Number(values.seed);
		const r = await runPlacementSeed(seed, {
			trace: values.trace,
			...(mode === undefined ? {} : { mode }),
		});
		console.log(
			`placement seed ${seed}: ${r.failures.length === 0 ? "ok" : "FAILED"} (${r.config}; ${tree}) trace ${r.traceHash}, ${r.steps} steps, recovered ${r.recoveredMs ?? "never"} ms after the faults stopped`,
		);
		for (const line of r.trace) console.log(`  ${line}`);
		for (const f of r.failures)
			console.log(`  ${f.kind} at ${(f.atMs / 1000).toFixed(1)} s: ${f.detail}`);
		return r.failures.length === 0 ? 0 : 1;
	}
	const stopOn = values["stop-on"]?.split(",");
	for (const k of stopOn ?? [])
		if (!KINDS.includes(k.split("@")[0] as PlacementFailureKind)) {
			console.error(`unknown kind ${k}; one of ${KINDS.join(", ")}`);
			return 2;
		}
	const s = await runPlacementSeeds({
		from: Number(values.from),
		count: Number(values.seeds),
		...(mode === undefined ? {} : { mode }),
		...(stopOn === undefined ? {} : { stopOn }),
		...(values["budget-ms"] === undefined ? {} : { budgetMs: Number(values["budget-ms"]) }),
		...(values.json ? {} : { progress: (line: string) => console.log(line) }),
	});
	if (values.json) {
		console.log(JSON.stringify(s));
		return s.failed.length === 0 ? 0 : 1;
	}
	const seedsFailed = new Set(s.failed.map((f) => f.seed)).size;
	console.log(
		`${s.seeds} placement seeds (${tree}) in ${(s.ms / 1000).toFixed(1)} s: ${s.seedsPerSecond.toFixed(1)} seeds/s (CPU ${(s.cpuMs / 1000).toFixed(1)} s); ${seedsFailed} failed; slowest recovery ${s.worstRecoveryMs} ms`,
	);
	for (const f of s.failed.slice(0, 20))
		console.log(
			`  FAILED seed ${f.seed} ${f.failure.kind}${f.failure.mode === undefined ? "" : `@${f.failure.mode}`} at ${(f.failure.atMs / 1000).toFixed(1)} s: ${f.failure.detail}`,
		);
	return s.failed.length === 0 ? 0 : 1;
}
