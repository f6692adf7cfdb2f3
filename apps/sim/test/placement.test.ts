import { describe, expect, it } from "vitest";
import { runPlacementSeeds } from "../src/placement-cli.ts";
import {
	PLACEMENT_TREE_FIXED,
	placementFailureMatches,
	runPlacementSeed,
} from "../src/placement-world.ts";

/**
 * The placement part's CI budget (issue 33): seeds 1..N of `runPlacementSeed` (10–20 seeds/s on
 * one core of the shared machine, 3–4 at load 18), stopped after CI_BUDGET_MS of wall time; at
 * least MIN_SEEDS must have run (a slow machine checks fewer seeds, it does not fail).
 */
const CI_SEEDS = Number(process.env.SIM_PLACEMENT_CI_SEEDS ?? 200);
const CI_BUDGET_MS = 45_000;
// 59 ran once in 45 s at load 22 (2 cores): the floor says the check ran, not how fast.
const MIN_SEEDS = Math.min(CI_SEEDS, 30);
describe("placement: determinism", () => {
	it("the same seed replays the same run (trace hash); another seed another one", async () => {
		const a = await runPlacementSeed(12);
		const b = await runPlacementSeed(12);
		const c = await runPlacementSeed(13);
		expect(a.traceHash).toBe(b.traceHash);
		expect(a.trace).toEqual(b.trace);
		expect(a.failures).toEqual(b.failures);
		expect(c.traceHash).not.toBe(a.traceHash);
		// The run did something: hosts started, operator actions ran, the faults stopped.
		expect(a.trace.some((l) => l.includes("faults stop"))).toBe(true);
		expect(a.steps).toBeGreaterThan(900);
	}, 30_000);

	it("a failure kind matches by kind or by kind@mode", () => {
		const f = { kind: "overlap" as const, atMs: 0, detail: "", mode: "leases" as const };
		expect(placementFailureMatches(f, ["overlap"])).toBe(true);
		expect(placementFailureMatches(f, ["overlap@leases"])).toBe(true);
		expect(placementFailureMatches(f, ["overlap@static", "same-epoch"])).toBe(false);
	});
});

describe("placement: seeds that found a defect (each failed before its fix)", () => {
	// Timers 0..250 ms late (a busy loop): a lease's same-grant prolongation read after its local
	// deadline, before its late timer fired, made leaseValid() true again ("revived"; before the
	// fix of @vvm/leases' LocalLeases.apply, 2026-12-07).
	it("463 (leases, timers late): no grant valid again after it was not", async () => {
		const r = await runPlacementSeed(463);
		expect(r.config).toContain("ms late");
		expect(r.failures.map((f) => `${f.kind}: ${f.detail}`)).toEqual([]);
	}, 60_000);
});

describe("placement: the CI budget", () => {
	it(`seeds 1..${CI_SEEDS}: never two hosts serving one partition, every partition served within the bound after the faults`, async () => {
		expect(PLACEMENT_TREE_FIXED).toBe(true);
		const s = await runPlacementSeeds({ from: 1, count: CI_SEEDS, budgetMs: CI_BUDGET_MS });
		// Any failure fails: a dark partition too (issue 33 closed the last accepted cause, a
		// partition left without an epoch by one storage error while its VVM kept the slot).
		const failures = s.failed.map(
			(f) => `seed ${f.seed}: ${f.failure.kind} at ${f.failure.atMs} ms: ${f.failure.detail}`,
		);
		console.log(
			`placement: ${s.seeds} seeds in ${(s.ms / 1000).toFixed(1)} s (${s.seedsPerSecond.toFixed(1)} seeds/s, CPU ${(s.cpuMs / 1000).toFixed(1)} s); ${s.failed.length} failed, slowest recovery ${s.worstRecoveryMs} ms`,
		);
		expect(failures).toEqual([]);
		expect(s.seeds).toBeGreaterThanOrEqual(MIN_SEEDS);
	}, 120_000);
});
