import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mutants } from "../src/mutants.ts";
import { describeWindow, summary, writeFailures } from "../src/report.ts";
import type { ProxiedStorage } from "../src/servers.ts";
import { postgresGate, proxiedPostgres } from "../src/servers.ts";
import { runLincheck } from "../src/workload.ts";
import { untilCaught } from "./until-caught.ts";

const skip = await postgresGate();

describe.skipIf(skip)("lincheck: pg behind the fault proxy", () => {
	let s: ProxiedStorage;
	beforeAll(async () => {
		s = await proxiedPostgres(21);
	});
	afterAll(async () => {
		await s?.close();
	});

	it("is linearizable", { timeout: 600_000 }, async () => {
		const report = await runLincheck(s.storage, {
			fencing: "epoch",
			atomicBatches: true,
			seed: 21,
			prefix: "pg",
			// A longer run (soak): LINCHECK_WINDOWS=200.
			windows: Number(process.env.LINCHECK_WINDOWS ?? 20),
			beforeWindow: () => s.proxy.startFaults(),
			afterWindow: () => s.proxy.stopFaults(),
		});
		console.log(summary("pg", report, s.proxy.counts()));
		for (const path of writeFailures("pg", report)) console.log(`violation: ${path}`);
		// The first violation in the log too (CI keeps no temp files).
		if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
		// Operations refused with UNAVAILABLE (a reconnecting client) are left out of the history.
		expect(report.ops).toBeGreaterThan(1500);
		expect(report.failed.map((f) => ({ window: f.window, verdict: f.verdict }))).toEqual([]);
	});

	it("catches a broken driver on the same path (a racy compareAndSwap over pg)", {
		timeout: 300_000,
	}, async () => {
		// Up to 5 runs of 8 windows, stopping at the first violation (./until-caught.ts).
		const caught = await untilCaught([24, 25, 26, 27, 28], async (seed) => {
			const report = await runLincheck(mutants.racySwap(s.storage), {
				fencing: "epoch",
				atomicBatches: true,
				seed,
				prefix: `pg-racy-${seed}`,
				windows: 8,
				beforeWindow: () => s.proxy.startFaults(),
				afterWindow: () => s.proxy.stopFaults(),
			});
			console.log(summary(`pg racySwap, seed ${seed}`, report, s.proxy.counts()));
			return report;
		});
		expect(caught).toBeGreaterThan(0);
	});
});
