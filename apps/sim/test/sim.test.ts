import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { probeDynProfile } from "../src/dyn-probe.ts";
import { Rng } from "../src/rng.ts";
import type { ManySummary } from "../src/runner.ts";
import {
	livenessProblems,
	loadProfile,
	MIN_ACKED_SHARE,
	runMany,
	runParallel,
	shrinkSeed,
	tallyLine,
} from "../src/runner.ts";
import { runSeed } from "../src/world.ts";

/**
 * The CI budget (issue 32): this many seeds, within this much wall time, no failure but the known
 * open ones. `.ci/run` runs 10 000 in a step of their own (`SIM_CI_SEEDS=10000`, nothing beside);
 * the suite, beside other files, runs the first 1 000.
 */
const CI_SEEDS = Number(process.env.SIM_CI_SEEDS ?? 1_000);
/**
 * Seeds that fail on the current tree for a defect found and not fixed yet: each must still fail
 * (a fix removes it from here), and no other seed may. None open. The last ones, stale reads at
 * seeds 1081, 2300, 6469, 6527, 8365 and 8371 ("ordered"/"dyn", levels 1/2), were reads served by
 * a holder whose lease had ended: `@vvm/cp` now serves record and WLog reads only inside the
 * lease (`packages/cp/test/lease-bounded-reads.test.ts`; README, "Stale reads").
 */
const KNOWN_OPEN: ReadonlyMap<number, string> = new Map<number, string>([]);
const CI_BUDGET_MS = 170_000;
/**
 * Seeds of the "epoch" profile with `@vvm/cp`'s pipelined numbering on (`pipelineDepth` 8, the
 * profile where it takes effect: conditional batches), the same checks (`.ci/run`: 2 000).
 */
const CI_PIPELINE_SEEDS = Number(process.env.SIM_CI_PIPELINE_SEEDS ?? 300);
const CI_PIPELINE_BUDGET_MS = 170_000;
/** Processes the CI budget runs on (the CI machine has 2 cores; 1 on a shared machine). */
const CI_WORKERS = Number(process.env.SIM_WORKERS ?? 2);

describe("the PRNG", () => {
	it("is a function of its seed, and forks independent streams", () => {
		const a = new Rng(42);
		const b = new Rng(42);
		const xs = Array.from({ length: 5 }, () => a.nextU32());
		expect(Array.from({ length: 5 }, () => b.nextU32())).toEqual(xs);
		expect(new Rng(43).nextU32()).not.toBe(xs[0]);
		const r = new Rng(7);
		for (let i = 0; i < 1000; i++) {
			const v = r.int(3, 5);
			expect(v >= 3 && v <= 5 && Number.isInteger(v)).toBe(true);
		}
	});
});

describe("determinism", () => {
	it.each(["epoch", "ordered", "dyn"] as const)(
		"%s: the same seed replays the same run (trace hash), another seed another one",
		async (name) => {
			const profile = await loadProfile(name);
			const first = await runSeed({ seed: 11, profile });
			const again = await runSeed({ seed: 11, profile });
			const other = await runSeed({ seed: 12, profile });
			expect(again.traceHash).toBe(first.traceHash);
			expect(again.anomalies).toEqual(first.anomalies);
			expect(again.faults).toEqual(first.faults);
			expect(other.traceHash).not.toBe(first.traceHash);
			// The run did something: commands answered, faults injected.
			expect(first.stats.ops).toBeGreaterThan(0);
			expect(first.faults.length).toBeGreaterThan(0);
		},
	);
});

describe("the dyn profile", () => {
	it("is measured on the real driver and SDK: a code of the contract and a send count per outcome", async () => {
		const table = await probeDynProfile();
		for (const op of ["conditional", "put", "batch", "get"] as const)
			for (const raw of ["refused", "lost", "late"] as const) {
				const f = table.failures[op][raw];
				expect(f.sends, `${op}/${raw}`).toBeGreaterThanOrEqual(1);
				expect(f.code, `${op}/${raw}`).toMatch(/^TTLSTORAGE_/);
			}
		// A conditional write whose answer was lost may have been applied: never "nothing written".
		expect(table.failures.conditional.lost.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(["true", "false", "unknown"]).toContain(table.resendFoundOurs);
	});
});

describe("seeds that found a defect (each failed before its fix)", () => {
	// A network blip (FaultRates.blip) sent two pipelined PLog writes late; the re-actualization
	// wrote only the first again, the second landed after the PLog read, and at level 2 the next
	// command's put replaced its event: "lost: c3o0 (create ws 1001) was acknowledged, no applied
	// event has it". @vvm/cp now writes every unknown write of the run again, in order
	// (packages/cp/test/pipeline.test.ts, "a run of writes with unknown outcomes").
	it("7224, epoch, level 2, pipelineDepth 8: the second of two late pipelined writes", async () => {
		const profile = await loadProfile("epoch");
		const result = await runSeed({ seed: 7224, profile, trustLevel: 2, pipelineDepth: 8 });
		expect(result.anomalies).toEqual([]);
		expect(result.faults.some((f) => f.what.startsWith("network blip"))).toBe(true);
	}, 60_000);
});

describe("seeds that found a defect (overlapping grants)", () => {
	// Overlapping grants (a --num-vvm change, a placement switch: the old holder serves on until
	// its own deadline): at level 2 over "ordered" fencing the deposed holder's PLog put to a new
	// offset landed without an error, it acknowledged the command, and the new holder's event
	// replaced it: "lost: … was acknowledged, no applied event has it". @vvm/cp now confirms the
	// fence after the write (packages/appparts/test/partition-epochs.test.ts).
	it.each([
		[218, "dyn"],
		[358, "ordered"],
		// The same, through the deposed holder's re-write of its own unknown PLog entry: it landed
		// after the newer holder's raise, and the flush that followed passed an event the newer
		// holder replaced (now the fence is confirmed after the re-write too).
		[25921, "ordered"],
	] as const)(
		"%i, %s: an acknowledgement of a holder a newer grant overlapped",
		async (seed, name) => {
			const profile = await loadProfile(name);
			const result = await runSeed({ seed, profile, overlaps: true });
			expect(result.anomalies).toEqual([]);
			expect(result.faults.some((f) => f.what.startsWith("overlapping grant"))).toBe(true);
		},
		60_000,
	);
});

describe("the mutant: cp built with unsafeUnfenced", () => {
	it("is caught within 300 seeds, and its shrunk schedule still fails", async () => {
		const summary = await runMany({
			from: 1,
			count: 300,
			profiles: ["epoch"],
			unsafeUnfenced: true,
			stopAtFirst: true,
		});
		expect(summary.failures.length).toBe(1);
		const found = summary.failures[0];
		if (found === undefined) return;
		const profile = await loadProfile("epoch");
		const first = await runSeed({ seed: found.seed, profile, unsafeUnfenced: true });
		const shrunk = await shrinkSeed({ seed: found.seed, profile, unsafeUnfenced: true }, first);
		expect(shrunk.result.ok).toBe(false);
		expect(shrunk.result.faults.length).toBeLessThanOrEqual(first.faults.length);
		console.log(
			`mutant caught by seed ${found.seed} after ${summary.seeds} seeds (${(found.atMs / 1000).toFixed(1)} s); shrunk to ${shrunk.result.faults.length} of ${first.faults.length} faults, ${shrunk.ops} ops: ${shrunk.result.anomalies[0]}`,
		);
	}, 300_000);
});

/**
 * What a CI budget requires of a batch beside "no failure": no stuck seed, and each profile's seeds
 * acknowledged something, at least {@link MIN_ACKED_SHARE} of their operations. A build whose
 * partitions never serve passes every safety check (nothing acknowledged, nothing lost).
 */
function expectLive(
	summary: ManySummary,
	profiles: readonly ("epoch" | "ordered" | "dyn")[],
	line: string,
): void {
	expect(summary.stuck, line).toBe(0);
	expect(livenessProblems(summary), line).toEqual([]);
	for (const name of profiles) {
		const t = summary.byProfile[name];
		expect(t?.runs ?? 0, `${name} ran: ${line}`).toBeGreaterThan(0);
		expect(t?.acked ?? 0, `${name} acknowledged something: ${line}`).toBeGreaterThan(0);
		expect(
			(t?.acked ?? 0) / (t?.ops ?? 1),
			`${name} acknowledged share: ${line}`,
		).toBeGreaterThanOrEqual(MIN_ACKED_SHARE);
	}
}

describe("the liveness mutant: a host build whose partition never serves", () => {
	// Found by review: such a seed counted as `stuck` but ok, the batch as passed (the CLI exited
	// 0, the CI budget asserted no failure and the seed count only).
	it("passes every safety check, and the batch's liveness verdict fails it", async () => {
		const summary = await runMany({
			from: 1,
			count: 60,
			profiles: ["epoch", "ordered", "dyn"],
			neverServe: true,
		});
		// The gap: not one seed fails a safety check.
		expect(summary.failures).toEqual([]);
		expect(summary.stuck).toBe(60);
		expect(summary.stuckSeeds.slice(0, 3).map((s) => s.seed)).toEqual([1, 2, 3]);
		for (const name of ["epoch", "ordered", "dyn"] as const)
			expect(summary.byProfile[name]).toMatchObject({ runs: 20, acked: 0, stuck: 20 });
		const problems = livenessProblems(summary);
		expect(problems[0]).toMatch(/^60 stuck seed\(s\): 1 \(ordered\), 2 \(dyn\), 3 \(epoch\)/);
		expect(problems.filter((p) => p.includes("nothing acknowledged in 20 seeds"))).toHaveLength(3);
	});

	it("the CLI exits 1 and says which seeds were stuck", () => {
		const r = spawnSync(
			process.execPath,
			[
				"--import",
				"tsx",
				"--conditions=@vvm/source",
				"src/cli.ts",
				"--seeds",
				"3",
				"--mutant-never-serve",
			],
			{ cwd: fileURLToPath(new URL("..", import.meta.url)), encoding: "utf8" },
		);
		expect(r.status, r.stdout + r.stderr).toBe(1);
		expect(r.stdout).toContain("0 failed, 3 stuck");
		expect(r.stdout).toContain(
			"FAILED (liveness): 3 stuck seed(s): 1 (ordered), 2 (dyn), 3 (epoch)",
		);
	}, 60_000);

	it("nothing or too little acknowledged fails a profile from 20 seeds on; fewer seeds are not judged", () => {
		const base: ManySummary = {
			seeds: 20,
			runs: 20,
			ms: 1,
			runsPerSecond: 1,
			cpuMs: 1,
			failures: [],
			stuck: 0,
			stuckSeeds: [],
			byProfile: { epoch: { runs: 20, ops: 300, acked: 60, stuck: 0 } },
		};
		expect(livenessProblems(base)).toEqual([
			"profile epoch: 60 of 300 operations acknowledged (20.0 %, below 25 %) in 20 seeds",
		]);
		expect(
			livenessProblems({
				...base,
				byProfile: { epoch: { runs: 20, ops: 300, acked: 75, stuck: 0 } },
			}),
		).toEqual([]);
		expect(
			livenessProblems({ ...base, byProfile: { dyn: { runs: 20, ops: 280, acked: 0, stuck: 0 } } }),
		).toEqual(["profile dyn: nothing acknowledged in 20 seeds (280 operations)"]);
		expect(
			livenessProblems({ ...base, byProfile: { dyn: { runs: 19, ops: 260, acked: 0, stuck: 0 } } }),
		).toEqual([]);
		// A stuck seed fails any batch, however small.
		expect(
			livenessProblems({
				...base,
				stuck: 1,
				stuckSeeds: [{ seed: 7, profile: "dyn", config: "" }],
				byProfile: { dyn: { runs: 1, ops: 12, acked: 5, stuck: 1 } },
			}),
		).toEqual(["1 stuck seed(s): 7 (dyn)"]);
	});
});

describe("the CI budget", () => {
	// Before the review4 fixes of @vvm/cp (cases 1, 5) and @vvm/ttlstorage-dyn (cases 2, 3) this
	// failed: the simulator finds those cases (README, "Proof of power").
	it(`${CI_SEEDS} seeds over every profile within ${CI_BUDGET_MS / 1000} s (${CI_WORKERS} processes): no failure but the known open ones`, async () => {
		const summary = await runParallel(
			{ from: 1, count: CI_SEEDS, profiles: ["epoch", "ordered", "dyn"], budgetMs: CI_BUDGET_MS },
			CI_WORKERS,
		);
		const line = `${summary.seeds} seeds on ${CI_WORKERS} process(es) in ${(summary.ms / 1000).toFixed(1)} s (${summary.runsPerSecond.toFixed(1)} seeds/s, CPU ${(summary.cpuMs / 1000).toFixed(1)} s): ${summary.failures.length} failed, ${summary.stuck} stuck; ${tallyLine(summary)}`;
		console.log(line);
		const unexpected = summary.failures
			.filter(
				(f) =>
					!(
						KNOWN_OPEN.get(f.seed) !== undefined &&
						f.anomalies[0]?.startsWith(`${KNOWN_OPEN.get(f.seed)}:`)
					),
			)
			.slice(0, 10)
			.map((f) => `seed ${f.seed} ${f.profile}: ${f.anomalies[0]}`);
		expect(unexpected, line).toEqual([]);
		expect(summary.seeds, line).toBe(CI_SEEDS);
		// A seed that never served is no pass (found by review: stuck seeds were only counted).
		expectLive(summary, ["epoch", "ordered", "dyn"], line);
		// A known open seed that passes was fixed: take it out of KNOWN_OPEN.
		const failed = new Set(summary.failures.map((f) => f.seed));
		const fixed = [...KNOWN_OPEN.keys()].filter((seed) => seed <= CI_SEEDS && !failed.has(seed));
		expect(fixed, "known open seeds that pass now").toEqual([]);
	}, 200_000);
});

describe("the CI budget, pipelined numbering", () => {
	it(`${CI_PIPELINE_SEEDS} seeds of the epoch profile with pipelineDepth 8 within ${CI_PIPELINE_BUDGET_MS / 1000} s: no failure`, async () => {
		const summary = await runParallel(
			{
				from: 1,
				count: CI_PIPELINE_SEEDS,
				profiles: ["epoch"],
				budgetMs: CI_PIPELINE_BUDGET_MS,
				pipelineDepth: 8,
			},
			CI_WORKERS,
		);
		const line = `pipelined: ${summary.seeds} seeds on ${CI_WORKERS} process(es) in ${(summary.ms / 1000).toFixed(1)} s (${summary.runsPerSecond.toFixed(1)} seeds/s): ${summary.failures.length} failed, ${summary.stuck} stuck; ${tallyLine(summary)}`;
		console.log(line);
		const failures = summary.failures
			.slice(0, 10)
			.map((f) => `seed ${f.seed} ${f.profile}: ${f.anomalies[0]}`);
		expect(failures, line).toEqual([]);
		expect(summary.seeds, line).toBe(CI_PIPELINE_SEEDS);
		expectLive(summary, ["epoch"], line);
	}, 200_000);
});
