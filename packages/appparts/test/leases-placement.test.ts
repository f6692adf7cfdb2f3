// The leases placement on the mem driver with one MockClock: two hosts share the partitions,
// each serves exactly what it holds, redirects to the other for the rest, serves a partition only
// once it is deployed, and hands everything over on close.
import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { LeasesPlacement } from "../src/leases-placement.ts";
import { createLeasesPlacement, isLeasesPlacement } from "../src/leases-placement.ts";
import type { PartitionHolder, PartitionPlacement, PlacementHandlers } from "../src/placement.ts";

const T = 1_700_000_000_000;
const I = 1_000;
const SKEW = 100;

/** Whether `placement` serves `partition` now (its `locate` answer). */
const serving = (placement: PartitionPlacement, partition: number): boolean =>
	placement.locate(partition).kind === "served";

/** The holder `locate` names for `partition`, `undefined` when served here or nobody is known. */
function holderOf(placement: PartitionPlacement, partition: number): PartitionHolder | undefined {
	const where = placement.locate(partition);
	return where.kind === "held" ? where.holder : undefined;
}

interface Recorded {
	readonly granted: Array<{ partition: number; fencingToken: bigint | undefined }>;
	readonly ended: Array<{ partition: number; reason: string }>;
}

function recordingHandlers(deploy?: (partition: number) => Promise<void>): {
	handlers: PlacementHandlers;
	calls: Recorded;
} {
	const calls: Recorded = { granted: [], ended: [] };
	return {
		calls,
		handlers: {
			async onGranted(partition, grant) {
				calls.granted.push({ partition, fencingToken: grant.fencingToken });
				await deploy?.(partition);
			},
			onEnded(partition, reason) {
				calls.ended.push({ partition, reason });
			},
		},
	};
}

async function settle(): Promise<void> {
	for (let k = 0; k < 5; k++) await new Promise((r) => setImmediate(r));
}

/** Advances the mock clock in tick-sized steps until `done()` or `maxMs` of mock time passed. */
async function until(clock: MockClock, done: () => boolean, maxMs = 20 * I): Promise<void> {
	for (let t = 0; t < maxMs && !done(); t += I / 10) {
		clock.advance(I / 10);
		await settle();
	}
	expect(done()).toBe(true);
}

function placement(
	clock: MockClock,
	storage: TTLStorage,
	address: string,
	handlers: PlacementHandlers,
	partitions = 6,
): LeasesPlacement {
	return createLeasesPlacement({
		storage,
		address,
		partitions,
		leaseIntervalMs: I,
		maxClockSkewMs: SKEW,
		namespace: "vvm-test",
		handlers,
		clock,
	});
}

describe("createLeasesPlacement", () => {
	it("two hosts split the partitions; each serves what it holds and names the other for the rest", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		const a = recordingHandlers();
		const b = recordingHandlers();
		const pa = placement(clock, storage, "a:1", a.handlers);
		const pb = placement(clock, storage, "b:1", b.handlers);
		const stop = new AbortController();
		await Promise.all([pa.start(stop.signal), pb.start(stop.signal)]);
		await until(clock, () => pa.served().length === 3 && pb.served().length === 3);

		for (let p = 0; p < 6; p++) {
			const [mine, other, otherAddress] = serving(pa, p) ? [pa, pb, "a:1"] : [pb, pa, "b:1"];
			expect(serving(mine, p)).toBe(true);
			expect(serving(other, p)).toBe(false);
			expect(holderOf(other, p)?.address).toBe(otherAddress);
			expect(holderOf(mine, p)).toBeUndefined(); // its own: nobody to redirect to
		}
		expect([...pa.served(), ...pb.served()].sort()).toEqual([0, 1, 2, 3, 4, 5]);
		// The fencing token handed to the host is the lease's startTime.
		const view = pa.describe();
		expect(view).toMatchObject({
			mode: "leases",
			address: "a:1",
			partitions: 6,
			served: pa.served(),
		});
		expect(view.table.leases).toHaveLength(6);
		for (const g of a.calls.granted) {
			const lease = view.table.leases.find((l) => l.group === g.partition);
			expect(g.fencingToken).toBe(BigInt(lease?.startTime ?? -1));
		}
		const p0 = pa.served()[0] ?? -1;
		expect(pa.servingInfo(p0)).toMatchObject({ address: "a:1", incarnation: view.incarnation });
		expect(pb.servingInfo(p0)).toBeUndefined();
		expect(isLeasesPlacement(pa)).toBe(true);

		// Close A: its partitions end here at once ("closed"), and B gets them after expiry.
		const aServed = pa.served();
		await pa.close();
		expect(a.calls.ended.map((e) => e.partition).sort()).toEqual(aServed);
		expect(a.calls.ended.every((e) => e.reason === "closed")).toBe(true);
		expect(pa.served()).toEqual([]);
		for (const p of aServed) expect(serving(pa, p)).toBe(false);
		await until(clock, () => pb.served().length === 6);
		await pb.close();
	});

	it("serves a partition only once onGranted resolved, and not after a declined grant", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		const pending = new Map<number, { resolve: () => void; reject: (e: Error) => void }>();
		const h = recordingHandlers(
			(partition) =>
				new Promise<void>((resolve, reject) => pending.set(partition, { resolve, reject })),
		);
		const pa = placement(clock, storage, "a:1", h.handlers, 2);
		await pa.start(new AbortController().signal);
		await until(clock, () => pending.size === 2);
		// Granted but still deploying: not served, and no holder to redirect to (503).
		expect(serving(pa, 0)).toBe(false);
		expect(holderOf(pa, 0)).toBeUndefined();
		expect(pa.served()).toEqual([]);
		pending.get(0)?.resolve();
		pending.get(1)?.reject(new Error("cannot actualize"));
		await settle();
		expect(serving(pa, 0)).toBe(true);
		expect(serving(pa, 1)).toBe(false);
		expect(h.calls.ended).toContainEqual({ partition: 1, reason: "declined" });
		await pa.close();
	});

	it("stops serving at expirationTime - maxClockSkew by its own clock when storage is gone", async () => {
		const clock = new MockClock(T);
		const storage = withFaults(createMemTTLStorage({ clock }), { clock });
		const h = recordingHandlers();
		const pa = placement(clock, storage, "a:1", h.handlers, 1);
		await pa.start(new AbortController().signal);
		await until(clock, () => serving(pa, 0));
		storage.inject({ on: "*", action: faults.fail() }); // nothing is read or prolonged any more
		const info = pa.servingInfo(0);
		if (info === undefined) throw new Error("not serving");
		// The mock wall clock equals the driver's: the local deadline is expirationTime - SKEW.
		expect(info.leftMs).toBeLessThanOrEqual(info.expirationTime - SKEW - clock.now());
		const stopAt = info.expirationTime - SKEW; // wall ms; the mock wall clock never steps here
		while (clock.now() < stopAt - 2) {
			clock.advance(Math.min(I / 10, stopAt - 2 - clock.now()));
			await settle();
		}
		expect(serving(pa, 0)).toBe(true);
		clock.advance(2);
		await settle();
		expect(serving(pa, 0)).toBe(false);
		expect(h.calls.ended).toEqual([{ partition: 0, reason: "expired" }]);
		expect(holderOf(pa, 0)).toBeUndefined();
		await pa.close();
	});
});
