import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeWindow, summary, writeFailures } from "../src/report.ts";
import type { ProxiedStorage } from "../src/servers.ts";
import { dynamoGate, proxiedDynamo } from "../src/servers.ts";
import { runLincheck } from "../src/workload.ts";

const skip = await dynamoGate();

describe.skipIf(skip)("lincheck: dyn behind the fault proxy", () => {
	let s: ProxiedStorage;
	beforeAll(async () => {
		s = await proxiedDynamo(23);
	});
	afterAll(async () => {
		await s?.close();
	});

	it("is linearizable", { timeout: 600_000 }, async () => {
		const report = await runLincheck(s.storage, {
			fencing: "ordered",
			atomicBatches: false,
			seed: 23,
			prefix: "dyn",
			// A longer run (soak): LINCHECK_WINDOWS=200.
			windows: Number(process.env.LINCHECK_WINDOWS ?? 20),
			beforeWindow: () => s.proxy.startFaults(),
			afterWindow: () => s.proxy.stopFaults(),
		});
		console.log(summary("dyn", report, s.proxy.counts()));
		for (const path of writeFailures("dyn", report)) console.log(`violation: ${path}`);
		// The first violation in the log too (CI keeps no temp files).
		if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
		// Operations refused with UNAVAILABLE (a reconnecting client) are left out of the history.
		expect(report.ops).toBeGreaterThan(1500);
		expect(report.failed.map((f) => ({ window: f.window, verdict: f.verdict }))).toEqual([]);
	});
});
