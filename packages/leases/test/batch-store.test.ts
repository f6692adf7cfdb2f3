import { MockClock } from "@vvm/clock";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { decodeRoot, encodeShard } from "../src/batch-codec.ts";
import { BatchStore, EMPTY_BATCH } from "../src/batch-store.ts";
import { leaseKeys } from "../src/keys.ts";
import type { Lease, LeaseSlots } from "../src/model.ts";

const T = 1_700_000_000_000;
const keys = leaseKeys("store-test");

function fixture() {
	const clock = new MockClock(T);
	const storage = withFaults(createMemTTLStorage({ clock }), { clock });
	return { clock, storage, store: new BatchStore(storage, keys) };
}

function grant(group: number, start = T, host = group % 3, distinct = false): Lease {
	return {
		group,
		holder: { address: `host-${host}:8080`, incarnation: "i" },
		startTime: distinct ? start - group * 1000 : start,
		expirationTime: T + 10_000,
		accepted: false,
		prolongable: true,
		term: 0,
	};
}

const opts = (groups: number, limit?: number) => ({
	writer: "w/1",
	now: T,
	groups,
	...(limit === undefined ? {} : { limit }),
});

describe("BatchStore", () => {
	it("creates the batch (shards, then the root), then writes only the shards that changed", async () => {
		const { store, storage } = fixture();
		const first: LeaseSlots = Array.from({ length: 300 }, (_, g) => grant(g));
		const created = await store.write(EMPTY_BATCH, first, opts(300, 512));
		expect(created.result).toBe("resharded");
		const state = created.state;
		if (state === undefined) throw new Error("no state");
		expect(state.shards.length).toBeGreaterThan(1);
		expect(await store.read()).toMatchObject({ leases: first, missing: [], sealed: false });
		const next = [...state.leases];
		next[0] = { ...(next[0] as Lease), accepted: true };
		const before = storage.count("compareAndSwap");
		const written = await store.write(state, next, opts(300, 512));
		expect(written).toMatchObject({ result: "written", writes: 1 });
		expect(storage.count("compareAndSwap") - before).toBe(1);
		const same = await store.write(written.state ?? EMPTY_BATCH, next, opts(300, 512));
		expect(same).toMatchObject({ result: "unchanged", writes: 0 });
	});

	it("loses a compare-and-swap to a writer that went first, and forgets the batch", async () => {
		const { store } = fixture();
		const base = await store.write(EMPTY_BATCH, [grant(0), grant(1)], opts(2));
		const state = base.state ?? EMPTY_BATCH;
		const other = await store.write(
			state,
			[{ ...grant(0), accepted: true }, state.leases[1]],
			opts(2),
		);
		expect(other.result).toBe("written");
		const stale = await store.write(
			state,
			[state.leases[0], { ...grant(1), accepted: true }],
			opts(2),
		);
		expect(stale).toMatchObject({ result: "conflict", state: undefined, written: [] });
		expect((await store.read()).leases[0]?.accepted).toBe(true);
	});

	it("reports an unknown outcome as failed, with the storage error", async () => {
		const { store, storage } = fixture();
		const base = await store.write(EMPTY_BATCH, [grant(0)], opts(1));
		storage.inject({ on: "compareAndSwap", times: 1, action: faults.unknownOutcome(true) });
		const r = await store.write(
			base.state ?? EMPTY_BATCH,
			[{ ...grant(0), accepted: true }],
			opts(1),
		);
		expect(r.result).toBe("failed");
		expect(r.state).toBeUndefined();
		expect(r.errors).toHaveLength(1);
	});

	it("re-shards into a new epoch when a shard outgrows the limit, and deletes the old epoch", async () => {
		const { store, storage } = fixture();
		const small = Array.from({ length: 200 }, (_, g) => grant(g));
		const one = await store.write(EMPTY_BATCH, small, opts(200, 1024));
		expect(one.state?.shards).toHaveLength(1);
		// Every lease now starts at its own time: the shard no longer fits.
		const big = Array.from({ length: 200 }, (_, g) => grant(g, T, g % 3, true));
		const r = await store.write(one.state ?? EMPTY_BATCH, big, opts(200, 1024));
		expect(r.result).toBe("resharded");
		const read = await store.read();
		expect(read.root?.record.epoch).toBe(2);
		expect(read.shards.length).toBeGreaterThan(1);
		expect(read.leases).toEqual(big);
		expect(read.stale).toEqual([]);
		const all = [];
		for await (const rec of storage.read(keys.batch)) all.push(rec);
		expect(all).toHaveLength(read.shards.length + 1);
	});

	it("shrinks back to fewer shards once the batch fits", async () => {
		const { store } = fixture();
		const big = Array.from({ length: 200 }, (_, g) => grant(g, T, g % 3, true));
		const many = await store.write(EMPTY_BATCH, big, opts(200, 512));
		const shards = many.state?.shards.length ?? 0;
		expect(shards).toBeGreaterThan(2);
		const small = Array.from({ length: 200 }, (_, g) => grant(g));
		const r = await store.write(many.state ?? EMPTY_BATCH, small, opts(200, 512));
		expect(r.result).toBe("resharded");
		expect(r.state?.shards.length).toBeLessThan(shards);
	});

	it("a writer that lands between the seal steps makes the re-sharding fail; readers use sealed shards; the next re-sharding completes", async () => {
		const { store, storage } = fixture();
		const base = await store.write(
			EMPTY_BATCH,
			Array.from({ length: 300 }, (_, g) => grant(g)),
			opts(300, 512),
		);
		const state = base.state ?? EMPTY_BATCH;
		expect(state.shards.length).toBeGreaterThan(1);
		// Another writer's change to the last shard lands while this one seals.
		const theirs = [...state.leases];
		theirs[299] = { ...(theirs[299] as Lease), accepted: true };
		let raced = false;
		storage.inject({
			on: "compareAndSwap",
			times: 1,
			action: faults.hook(async () => {
				raced = true;
				const other = new BatchStore(createMemStorageView(storage), keys);
				expect((await other.write(state, theirs, opts(300, 512))).result).toBe("written");
			}),
		});
		const r = await store.write(state, state.leases, opts(301, 512)); // a new group count re-shards
		expect(raced).toBe(true);
		expect(r.result).toBe("conflict");
		const read = await store.read();
		expect(read.sealed).toBe(true); // some shards were sealed before the conflict
		expect(read.leases[299]?.accepted).toBe(true); // the other writer's change is there
		expect(read.root?.record.epoch).toBe(1);
		// A sealed shard is never written again.
		const sealedWrite = await store.write(read, read.leases, opts(300, 512));
		expect(sealedWrite.result).toBe("resharded"); // it re-shards instead
		const after = await store.read();
		expect(after).toMatchObject({ sealed: false, missing: [] });
		expect(after.root?.record.epoch).toBe(2);
		expect(after.leases[299]?.accepted).toBe(true);
	});

	it("reports a missing shard of the root's epoch as missing groups", async () => {
		const { store, storage } = fixture();
		const base = await store.write(
			EMPTY_BATCH,
			Array.from({ length: 300 }, (_, g) => grant(g)),
			opts(300, 512),
		);
		const victim = base.state?.shards[1];
		if (victim === undefined) throw new Error("no second shard");
		await storage.compareAndDelete(keys.batch, victim.cCols, victim.bytes);
		const read = await store.read();
		expect(read.missing).toEqual([[victim.record.from, victim.record.from + victim.record.count]]);
		expect(read.leases[victim.record.from]).toBeUndefined();
	});

	it("ignores shards of other epochs and reuses decoded shards whose bytes did not change", async () => {
		const { store, storage } = fixture();
		const base = await store.write(EMPTY_BATCH, [grant(0), grant(1)], opts(2));
		const orphan = encodeShard(
			{ epoch: 9, version: 1, sealed: false, from: 0, count: 2, writer: "x", writtenAt: T },
			base.state?.leases ?? [],
		);
		await storage.insertIfNotExists(keys.batch, keys.shard(9, 0), orphan, 0);
		const first = await store.read();
		expect(first.maxEpoch).toBe(9);
		expect(first.stale).toHaveLength(1);
		const second = await store.read(first);
		expect(second.shards[0]).toBe(first.shards[0]);
		expect(decodeRoot(second.root?.bytes ?? new Uint8Array()).epoch).toBe(1);
	});
});

/** The same storage without the fault rules of `storage` (a second writer's own link). */
function createMemStorageView(storage: ReturnType<typeof withFaults>) {
	return {
		...storage,
		compareAndSwap: (p: Uint8Array, c: Uint8Array, o: Uint8Array, n: Uint8Array, t: number) => {
			storage.clear();
			return storage.compareAndSwap(p, c, o, n, t);
		},
	};
}
