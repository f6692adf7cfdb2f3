// `vvm-host repair-lease-root`: a lease cluster whose batch root was deleted stops granting and
// reports it; the command rebuilds the root and grants resume, with nothing else touched.
import { utf8 } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { repairReport, runRepairLeaseRoot } from "../src/repair-lease-root.ts";
import { hostConfig } from "./support/config.ts";
import { runCli } from "./support/host-process.ts";
import type { LeasesHost } from "./support/leases-host.ts";
import { startLeasesHost } from "./support/leases-host.ts";

const PARTITIONS = 4;
/** The batch record of namespace `vvm` and its root's clustering columns (packages/leases keys.ts). */
const BATCH = utf8("vvm/leases");
const ROOT = Uint8Array.of(0);

async function until(what: string, cond: () => boolean, ms = 20_000): Promise<void> {
	for (const end = Date.now() + ms; !cond(); ) {
		if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
		await new Promise((r) => setTimeout(r, 20));
	}
}

/** Partitions a host's log says it holds now (lease-started not yet followed by lease-ended). */
function held(h: LeasesHost): Set<number> {
	const now = new Set<number>();
	for (const l of h.lines) {
		if (l.event === "leases.lease-started") now.add(l.partition as number);
		if (l.event === "leases.lease-ended") now.delete(l.partition as number);
	}
	return now;
}

const config = (storage: string) =>
	hostConfig([
		...["--storage", storage, "--partitions", String(PARTITIONS)],
		...["--placement", "leases", "--lease-namespace", "vvm"],
	]);

describe("vvm-host repair-lease-root", () => {
	it("a deleted root stops grants (reported); the repair rebuilds it and grants resume", async () => {
		const storage = createMemTTLStorage();
		const a = startLeasesHost(PARTITIONS, storage);
		const b = startLeasesHost(PARTITIONS, storage);
		try {
			await until("every partition held", () => held(a).size + held(b).size === PARTITIONS);
			expect(await storage.get(BATCH, ROOT)).toBeDefined();
			// The fault: the root record is gone (the shard records are intact).
			const root = await storage.get(BATCH, ROOT);
			expect(await storage.compareAndDelete(BATCH, ROOT, root as Uint8Array)).toBe(true);
			await until("both hosts report the fault", () =>
				[a, b].every((h) =>
					h.lines.some(
						(l) =>
							l.event === "leases.batch-fault" &&
							JSON.stringify(l).includes("LEASES_BATCH_ROOT_MISSING"),
					),
				),
			);
			// GET /status shows it (placement.metrics.batchFault), as /metrics does.
			const port = a.lines.find((l) => l.event === "listening")?.port as number;
			const status = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as {
				placement: { metrics: { batchFault?: string } };
			};
			expect(status.placement.metrics.batchFault).toBe("LEASES_BATCH_ROOT_MISSING");
			const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
			expect(metrics).toMatch(/^vvm_leases_batch_fault 1$/m);
			// b leaves: its partitions need a grant, which nobody may make while the root is missing.
			const moved = [...held(b)];
			expect(moved.length).toBeGreaterThan(0);
			const grantsBefore = a.lines.filter((l) => l.event === "leases.granted").length;
			expect(await b.host.stop()).toBe(0);
			const out: string[] = [];
			expect(await runRepairLeaseRoot(config("mem"), { storage, out: (l) => out.push(l) })).toBe(0);
			expect(out).toHaveLength(1);
			expect(out[0]).toMatch(/: rebuilt \(epoch \d+, \d+ shard record\(s\), 4 groups\): /);
			expect(await storage.get(BATCH, ROOT)).toBeDefined();
			// Grants resume: a takes b's partitions.
			await until("a holds every partition", () => held(a).size === PARTITIONS);
			expect(a.lines.filter((l) => l.event === "leases.granted").length).toBeGreaterThan(
				grantsBefore,
			);
			const after = (await (await fetch(`http://127.0.0.1:${port}/status`)).json()) as {
				placement: { metrics: { batchFault?: string } };
			};
			expect(after.placement.metrics.batchFault).toBeUndefined();
			// Run again: nothing to repair, nothing written.
			out.length = 0;
			expect(await runRepairLeaseRoot(config("mem"), { storage, out: (l) => out.push(l) })).toBe(0);
			expect(out[0]).toMatch(/: intact \(/);
		} finally {
			await a.host.stop();
			await b.host.stop();
			await storage.close();
		}
	}, 60_000);

	it("reports not-created on an empty storage, and each result's meaning", async () => {
		const storage = createMemTTLStorage();
		const out: string[] = [];
		expect(await runRepairLeaseRoot(config("mem"), { storage, out: (l) => out.push(l) })).toBe(0);
		expect(out[0]).toMatch(/^lease root of namespace "vvm" \(4 partitions\): not-created /);
		expect(await storage.get(BATCH, ROOT)).toBeUndefined();
		expect(repairReport("vvm", 4, { result: "unknown", epoch: 2, shards: 0, groups: 4 })).toMatch(
			/granted again a lease interval plus the clock-skew bound/,
		);
		await storage.close();
	});

	it("the CLI subcommand runs it and exits 0 (mem: a fresh storage, not-created)", async () => {
		const r = await runCli([
			"repair-lease-root",
			...["--storage", "mem", "--partitions", "3", "--lease-namespace", "ns1"],
		]);
		expect(r.stderr).toBe("");
		expect(r.code).toBe(0);
		expect(r.stdout).toMatch(/^lease root of namespace "ns1" \(3 partitions\): not-created /);
	}, 60_000);

	it("--help names the subcommand", async () => {
		const r = await runCli(["repair-lease-root", "--help"]);
		expect(r.code).toBe(0);
		expect(r.stdout).toContain("vvm-host repair-lease-root [options]");
	}, 60_000);
});
