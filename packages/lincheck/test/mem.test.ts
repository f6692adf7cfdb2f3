import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { withFaultLayer } from "../src/fault-layer.ts";
import { describeWindow, summary, writeFailures } from "../src/report.ts";
import { runLincheck } from "../src/workload.ts";

describe("lincheck: mem", () => {
	it("is linearizable under in-process faults (epoch fencing)", async () => {
		const storage = withFaultLayer(createMemTTLStorage(), { seed: 11 });
		const report = await runLincheck(storage, {
			fencing: "epoch",
			atomicBatches: true,
			seed: 1,
			prefix: "mem",
			windows: 25,
			afterWindow: () => storage.drain(),
		});
		console.log(summary("mem", report, storage.counts()));
		for (const path of writeFailures("mem", report)) console.log(`violation: ${path}`);
		// The first violation in the log too (CI keeps no temp files).
		if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
		expect(report.ops).toBeGreaterThan(2500);
		expect(report.unknown).toBeGreaterThan(50);
		expect(report.failed.map((f) => f.verdict)).toEqual([]);
	});

	it('is linearizable under in-process faults (fencing: "ordered")', async () => {
		const storage = withFaultLayer(createMemTTLStorage({ fencing: "ordered" }), { seed: 12 });
		const report = await runLincheck(storage, {
			fencing: "ordered",
			atomicBatches: false,
			seed: 2,
			prefix: "mem-ordered",
			windows: 25,
			afterWindow: () => storage.drain(),
		});
		console.log(summary("mem (ordered)", report, storage.counts()));
		for (const path of writeFailures("mem-ordered", report)) console.log(`violation: ${path}`);
		// The first violation in the log too (CI keeps no temp files).
		if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
		expect(report.ops).toBeGreaterThan(2500);
		expect(report.failed.map((f) => f.verdict)).toEqual([]);
	});
});
