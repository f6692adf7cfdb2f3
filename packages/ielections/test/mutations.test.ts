// The elections suite must be able to fail: run its cases against deliberately mutated elections
// and check that the cases guarding each mutated property fail, and that the unmutated control
// passes.
import type { ElectionsOptions, ITTLStorage } from "@vvm/ielections";
import { electionsCases } from "@vvm/ielections/testing";
import { describe, expect, it } from "vitest";
import type { ElectionsInternals } from "../src/elections.ts";
import { createElectionsWithInternals } from "../src/elections.ts";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

async function failingCases(internals: ElectionsInternals<string, string>): Promise<string[]> {
	const failed: string[] = [];
	const cases = electionsCases({
		createStorage: ({ clock }) => createMiniTTLStorage(clock),
		createElections: (
			storage: ITTLStorage<string, string>,
			options: ElectionsOptions<string, string>,
		) => createElectionsWithInternals(storage, options, internals),
	});
	// Cases are independent (own clock, storage and keys); running them together bounds the time a
	// mutation costs to one wait guard of the suite.
	const results = await Promise.allSettled(cases.map((c) => c.run()));
	results.forEach((r, i) => {
		if (r.status === "rejected") failed.push((cases[i] as (typeof cases)[number]).name);
	});
	return failed;
}

const KILLER =
	"KillerDeadlines: renewal every d/4, killer at exactly 0.8 d and 0.75 d (capped at the record's expiry minus the margin), retries d/20 apart";

describe("electionsTestSuite catches broken elections", () => {
	it("passes on the real implementation (control)", async () => {
		expect(await failingCases({})).toEqual([]);
	});

	it("catches a renewal interval of d/3 instead of d/4", async () => {
		expect(await failingCases({ timings: { renewFraction: 1 / 3 } })).toContain(KILLER);
	});

	it("catches a renewal interval of d/5 instead of d/4", async () => {
		expect(await failingCases({ timings: { renewFraction: 1 / 5 } })).toContain(KILLER);
	});

	it("catches 1 retry instead of 2", async () => {
		expect(await failingCases({ timings: { maxRetries: 1 } })).toEqual(
			expect.arrayContaining([
				"TransientErrorRecovery",
				"AcquireLeadershipFailureAfterCompareAndSwapError",
			]),
		);
	});

	it("catches 3 retries instead of 2", async () => {
		expect(await failingCases({ timings: { maxRetries: 3 } })).toContain(
			"AcquireLeadershipFailureAfterCompareAndSwapError",
		);
	});

	it("catches a retry pause of d/10 instead of d/20", async () => {
		expect(await failingCases({ timings: { retryFraction: 0.1 } })).toEqual(
			expect.arrayContaining(["TransientErrorRecovery", KILLER]),
		);
	});

	it("catches a killer at 0.9 d after renewal instead of 0.8 d", async () => {
		expect(await failingCases({ timings: { killerAfterRenewal: 0.9 } })).toContain(KILLER);
	});

	it("catches a killer at 0.7 d before compare-and-swap instead of 0.75 d", async () => {
		expect(await failingCases({ timings: { killerBeforeCAS: 0.7 } })).toContain(KILLER);
	});

	it("catches a killer at 0.8 d before compare-and-swap instead of 0.75 d", async () => {
		// The cap at the record's expiry hides it on an on-time first attempt; the deadline case
		// sees it on the tick after a late (retried) renewal, where the cap does not bind.
		expect(await failingCases({ timings: { killerBeforeCAS: 0.8 } })).toContain(KILLER);
	});

	it("catches a killer margin of 0 (a hung renewal's killer fires at the record's expiry)", async () => {
		expect(await failingCases({ timings: { killerMargin: 0 } })).toContain(KILLER);
	});

	it("catches a release that deletes whatever value the record holds", async () => {
		const failed = await failingCases({
			deleteOnRelease: async (storage, key) => {
				const current = await storage.get(key);
				return current === undefined ? false : storage.compareAndDelete(key, current);
			},
		});
		expect(failed).toContain("CloseContextOnCompareAndSwapFailure_KeyChanged");
	});
});
