import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { withFaultLayer } from "../src/fault-layer.ts";
import { mutants } from "../src/mutants.ts";
import { summary } from "../src/report.ts";
import { runLincheck } from "../src/workload.ts";

describe("lincheck catches a broken driver", () => {
	for (const name of ["racySwap", "earlyAckPut", "coalescedGet"] as const) {
		it(`${name}: reported non-linearizable`, async () => {
			const storage = withFaultLayer(mutants[name](createMemTTLStorage()), { seed: 5 });
			const report = await runLincheck(storage, {
				fencing: "epoch",
				atomicBatches: true,
				seed: 3,
				prefix: name,
				windows: 20,
				afterWindow: () => storage.drain(),
			});
			console.log(summary(name, report));
			const violations = report.failed.filter((f) => f.verdict.kind === "not-linearizable");
			expect(violations.length).toBeGreaterThan(0);
			// Never a search that gave up: the verdict is a proof either way. But for coalescedGet:
			// a get answered a value older than its call leaves no order to find, and with the
			// mutant's pauses on real timers some windows hold so many overlapping operations that
			// proving it takes more than maxSteps (a window given up on proves nothing either way;
			// the violations above are proofs).
			if (name !== "coalescedGet")
				expect(report.failed.filter((f) => f.verdict.kind === "too-large")).toEqual([]);
		});
	}

	it("a lost answer reported as UNAVAILABLE (nothing written): reported non-linearizable", async () => {
		const storage = withFaultLayer(createMemTTLStorage(), {
			seed: 6,
			lostAnswerCode: "TTLSTORAGE_UNAVAILABLE",
		});
		const report = await runLincheck(storage, {
			fencing: "epoch",
			atomicBatches: true,
			seed: 4,
			prefix: "lost-as-unavailable",
			windows: 20,
			afterWindow: () => storage.drain(),
		});
		console.log(summary("lost answer as UNAVAILABLE", report));
		expect(
			report.failed.filter((f) => f.verdict.kind === "not-linearizable").length,
		).toBeGreaterThan(0);
		expect(report.failed.filter((f) => f.verdict.kind === "too-large")).toEqual([]);
	});
});
