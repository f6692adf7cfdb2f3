import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { withFaultLayer } from "../src/fault-layer.ts";
import { describeWindow, summary, writeFailures } from "../src/report.ts";
import { runLincheck } from "../src/workload.ts";

describe("lincheck: level (classic-level on disk)", () => {
	let dir: string;
	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), "vvm-lincheck-level-"));
	});
	afterAll(async () => {
		await rm(dir, { recursive: true, force: true });
	});

	it("is linearizable under in-process faults", { timeout: 60_000 }, async () => {
		const level = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true });
		const storage = withFaultLayer(level, { seed: 13 });
		try {
			const report = await runLincheck(storage, {
				fencing: "epoch",
				atomicBatches: true,
				seed: 3,
				prefix: "level",
				windows: 25,
				afterWindow: () => storage.drain(),
			});
			console.log(summary("level", report, storage.counts()));
			for (const path of writeFailures("level", report)) console.log(`violation: ${path}`);
			// The first violation in the log too (CI keeps no temp files).
			if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
			expect(report.ops).toBeGreaterThan(2500);
			expect(report.unknown).toBeGreaterThan(50);
			expect(report.failed.map((f) => ({ window: f.window, verdict: f.verdict }))).toEqual([]);
		} finally {
			await level.close();
		}
	});
});
