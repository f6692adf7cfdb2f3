import { MockClock } from "@vvm/clock";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { createLeaseNode, LeasesError, readLeaseTable } from "../src/index.ts";

const T = 1_700_000_000_000;

describe("LeaseNode", () => {
	it("rejects start() with LEASES_STORAGE_ERROR when storage fails, and is closed afterwards", async () => {
		const clock = new MockClock(T);
		const storage = withFaults(createMemTTLStorage({ clock }), { clock });
		storage.inject({ on: "put", action: faults.fail() });
		const node = createLeaseNode({ storage, address: "a:1", clock });
		await expect(node.start()).rejects.toSatisfy(
			(e: unknown) => LeasesError.is(e) && e.code === "LEASES_STORAGE_ERROR",
		);
		expect(node.signal.aborted).toBe(true);
		await expect(node.start()).rejects.toSatisfy(
			(e: unknown) => LeasesError.is(e) && e.code === "LEASES_CLOSED",
		);
	});

	it("honours an aborted start signal and removes the heartbeat it wrote", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		const node = createLeaseNode({ storage, address: "a:1", clock });
		const stop = new AbortController();
		stop.abort(new Error("shutting down"));
		await expect(node.start({ signal: stop.signal })).rejects.toThrow("shutting down");
		const members = [];
		for await (const m of storage.read(new TextEncoder().encode("vvm/members"))) members.push(m);
		expect(members).toEqual([]);
	});

	it("reads the table once without joining, and disposes with await using", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		expect((await readLeaseTable(storage, { clock })).leases).toEqual([]);
		{
			await using node = createLeaseNode({
				storage,
				address: "a:1",
				clock,
				placementDriver: { groups: 2 },
			});
			await node.start();
			for (let i = 0; i < 30 && node.servedGroups().length < 2; i++) {
				clock.advance(500);
				for (let k = 0; k < 5; k++) await new Promise((r) => setImmediate(r));
			}
			expect(node.servedGroups()).toEqual([0, 1]);
			expect(node.metrics()).toMatchObject({ leasesHeld: 2, placementDriverActive: true });
			expect(node.table().leases.map((l) => l.holder.address)).toEqual(["a:1", "a:1"]);
		}
		const table = await readLeaseTable(storage, { clock });
		expect(table.leases).toHaveLength(2);
		expect(table.writers[0]).toMatch(/^a:1\//);
	});
});
