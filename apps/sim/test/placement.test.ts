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

describe("placement: another holder fences a partition out (a deployment that closes on its own)", () => {
	// Seed 2: another holder takes partition 0's next epoch at 15.4 s and raises its fence; h0's
	// deployment closes on its own. Before @vvm/appparts' grant.release (2026-12-07) h0 went on
	// saying it served partition 0 (leases: its lease prolonged for ever; static: its slot kept):
	// "served-closed" at 15.5 s in both modes, 152 of seeds 1..300 failing.
	for (const mode of ["leases", "static"] as const) {
		it(`2 (${mode}): never said served while closed, and served again`, async () => {
			const r = await runPlacementSeed(2, { mode });
			expect(r.trace.some((l) => l.includes("closed on its own"))).toBe(true);
			expect(r.failures.map((f) => `${f.kind}: ${f.detail}`)).toEqual([]);
			expect(r.recoveredMs).toBeDefined();
		}, 60_000);
	}
});

describe("placement: a deploy refused by a newer fence (static)", () => {
	// Seed 1308: the leader of slot 1 took partition 2's epoch at 67.1 s, another holder took the
	// next one at 67.2 s, and the leader's deploy (slowed by faults) reached the storage at 68.5 s:
	// refused by the newer fence, declined. Before 2026-12-07 a declined static grant stayed dark
	// for the rest of the leadership ("dark" at 150 s, found in 1 308 seeds of the model with
	// another holder); now the leader takes a new epoch after a pause.
	it("1308: a declined partition is taken again under a new epoch", async () => {
		const r = await runPlacementSeed(1308);
		expect(r.trace.some((l) => l.includes("could not be deployed"))).toBe(true);
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
