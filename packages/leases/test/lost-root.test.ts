// A lease batch whose root record is missing or unreadable (review 5, F3): a fault that stops
// granting and is reported, never an empty table; only a cluster never created reads as empty;
// repairLeaseRoot is the operator's way back. The suite's LostRootStopsGrantingUntilRepaired
// runs the common case over every driver; these are the edges, over mem with a MockClock.
import { MockClock } from "@vvm/clock";
import { utf8 } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { BatchStore, EMPTY_BATCH, readBatch } from "../src/batch-store.ts";
import { LeasesError, readLeaseTable, repairLeaseRoot } from "../src/index.ts";
import { leaseKeys } from "../src/keys.ts";
import type { Lease } from "../src/model.ts";
import { LeaseCluster } from "../src/testing/index.ts";

const T = 1_700_000_000_000;
const I = 10_000;
const keys = leaseKeys("ns");

const lease = (group: number): Lease => ({
	group,
	holder: { address: "a:1", incarnation: "i" },
	startTime: T,
	expirationTime: T + I,
	accepted: true,
	prolongable: true,
	term: 0,
});

async function rejectsWith(p: Promise<unknown>, code: string): Promise<void> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e,
	);
	expect(LeasesError.is(error) && error.code).toBe(code);
}

function setup() {
	const clock = new MockClock(T);
	const storage = createMemTTLStorage({ clock });
	const cluster = new LeaseCluster({
		storage,
		clock,
		namespace: "ns",
		groups: 8,
		leaseIntervalMs: I,
		maxClockSkewMs: 500,
	});
	return { clock, storage, cluster };
}

describe("a lease batch without its root", () => {
	it("reads as empty only when the cluster was never created", async () => {
		const { storage } = setup();
		expect((await readBatch(storage, keys)).root).toBeUndefined();
		// A creation that died after its (lease-less) shards and before the root: still not created.
		const store = new BatchStore(storage, keys);
		await store.write(EMPTY_BATCH, new Array(8).fill(undefined), {
			writer: "w/1",
			now: T,
			groups: 8,
		});
		await storage.compareAndDelete(
			keys.batch,
			keys.root,
			(await storage.get(keys.batch, keys.root)) as Uint8Array,
		);
		expect((await readBatch(storage, keys)).root).toBeUndefined();
		// Once the marker exists, the same state is a fault; so are shards that hold a lease
		// (a cluster created before the marker existed).
		await store.ensureMarker();
		await rejectsWith(readBatch(storage, keys), "LEASES_BATCH_ROOT_MISSING");
		await rejectsWith(readLeaseTable(storage, { namespace: "ns" }), "LEASES_BATCH_ROOT_MISSING");
		const legacy = createMemTTLStorage({ clock: new MockClock(T) });
		await new BatchStore(legacy, keys).write(EMPTY_BATCH, [lease(0)], {
			writer: "w/1",
			now: T,
			groups: 1,
		});
		await legacy.compareAndDelete(
			keys.batch,
			keys.root,
			(await legacy.get(keys.batch, keys.root)) as Uint8Array,
		);
		await rejectsWith(readBatch(legacy, keys), "LEASES_BATCH_ROOT_MISSING");
	});

	it("grants nothing before the marker is stored, and stores it before the first grant", async () => {
		const { storage, cluster } = setup();
		const a = await cluster.add("a");
		await cluster.step(100);
		// The creating tick wrote the root with no lease; the marker comes with the next tick.
		const first = await readBatch(storage, keys);
		expect(first.root).toBeDefined();
		expect(first.leases.every((l) => l === undefined)).toBe(true);
		await cluster.until("every group served", () => cluster.allServedOnce(), 4 * I);
		expect(await storage.get(keys.marker, keys.root)).toBeDefined();
		expect(a.node.metrics().batchFault).toBeUndefined();
		await cluster.close();
	});

	it("after the batch was wiped (marker left), stops, reports, and repairs to 'unknown': granted again only after I + S", async () => {
		const { storage, cluster, clock } = setup();
		const z = await cluster.add("z");
		await cluster.add("a", { placementDriver: false });
		await cluster.until("every group served", () => cluster.allServedOnce(), 4 * I);
		for await (const r of storage.read(keys.batch))
			await storage.compareAndDelete(keys.batch, r.cCols, r.value);
		await cluster.step(3_000);
		expect(z.node.metrics().batchFault).toBe("LEASES_BATCH_ROOT_MISSING");
		const granted = z.node.metrics().granted;
		const repaired = await repairLeaseRoot(storage, { namespace: "ns", groups: 8 });
		expect(repaired).toMatchObject({ result: "unknown", shards: 0, groups: 8 });
		const at = clock.now();
		// The old holders stop at their deadlines (they cannot read their leases any more) ...
		await cluster.step(I);
		// ... and every group is granted again once what a lost record could hold has expired.
		await cluster.step(500 + 3_000);
		expect(cluster.allServedOnce()).toBe(true);
		// Every group was unknown for a lease interval plus the skew bound after the repair.
		const batch = await readBatch(storage, keys);
		for (const l of batch.leases) expect(l?.startTime).toBeGreaterThanOrEqual(at + I + 500);
		expect(z.node.metrics().granted).toBeGreaterThan(granted);
		expect(cluster.log.overlaps()).toEqual([]);
		expect([...cluster.violations]).toEqual([]);
		await cluster.close();
	});

	it("an unreadable root is a fault too, and is repaired by compare-and-swap of its bytes", async () => {
		const { storage, cluster } = setup();
		const z = await cluster.add("z");
		await cluster.until("every group served", () => cluster.allServedOnce(), 4 * I);
		const before = z.node.table().leases.map((l) => l.startTime);
		const root = (await storage.get(keys.batch, keys.root)) as Uint8Array;
		expect(await storage.compareAndSwap(keys.batch, keys.root, root, utf8("not a root"), 0)).toBe(
			true,
		);
		await cluster.step(2_000);
		expect(z.node.metrics().batchFault).toBe("LEASES_CORRUPT_RECORD");
		expect(z.events.some((e) => e.type === "batch-fault" && e.operation === "read")).toBe(true);
		const repaired = await repairLeaseRoot(storage, { namespace: "ns", groups: 8 });
		expect(repaired.result).toBe("rebuilt");
		expect(await repairLeaseRoot(storage, { namespace: "ns", groups: 8 })).toMatchObject({
			result: "intact",
		});
		await cluster.step(3_000);
		expect(z.node.metrics().batchFault).toBeUndefined();
		expect(z.node.table().leases.map((l) => l.startTime)).toEqual(before);
		expect(cluster.allServedOnce()).toBe(true);
		expect(cluster.log.overlaps()).toEqual([]);
		await cluster.close();
	});

	it("a host that joins while the root is missing starts, serves nothing and reports it", async () => {
		const { storage, cluster } = setup();
		await cluster.add("z");
		await cluster.until("every group served", () => cluster.allServedOnce(), 4 * I);
		const root = (await storage.get(keys.batch, keys.root)) as Uint8Array;
		await storage.compareAndDelete(keys.batch, keys.root, root);
		const late = await cluster.add("late", { placementDriver: false });
		expect(late.node.metrics().batchFault).toBe("LEASES_BATCH_ROOT_MISSING");
		expect(late.node.servedGroups()).toEqual([]);
		await rejectsWith(late.node.refresh(), "LEASES_BATCH_ROOT_MISSING");
		expect(await repairLeaseRoot(storage, { namespace: "ns", groups: 8 })).toMatchObject({
			result: "rebuilt",
		});
		await late.node.refresh();
		expect(late.node.metrics().batchFault).toBeUndefined();
		await cluster.close();
	});

	it("repairLeaseRoot does nothing to a cluster never created, and checks its options", async () => {
		const { storage } = setup();
		expect(await repairLeaseRoot(storage, { namespace: "ns", groups: 8 })).toEqual({
			result: "not-created",
			epoch: 0,
			shards: 0,
			groups: 0,
		});
		expect(await storage.get(keys.marker, keys.root)).toBeUndefined();
		await expect(repairLeaseRoot(storage, { groups: 0 })).rejects.toThrow(RangeError);
	});
});
