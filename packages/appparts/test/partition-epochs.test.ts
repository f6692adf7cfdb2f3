// A partition's epoch orders every holder of that partition (review 5, F2): one counter per
// partition, raised by compare-and-swap, whichever slot, numVVM or placement mode a holder came
// through; and the static placement runs only under the cluster's stored numVVM.
import { MockClock } from "@vvm/clock";
import { createCommandProcessor } from "@vvm/cp";
import type { VVMLeadership } from "@vvm/orch";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { PartitionGrant, PlacementHandlers } from "../src/index.ts";
import {
	changeStaticNumVVM,
	checkStaticNumVVM,
	claimPartitionEpoch,
	createLeasesPlacement,
	createStaticPlacement,
	deployCpPartitions,
	NumVVMMismatchError,
	readPartitionEpoch,
	readStaticNumVVM,
	takePartitionEpoch,
} from "../src/index.ts";
import { stubLeadership } from "./leadership.ts";

const NS = "vvm-test";

const leadership = (slot: number, token: number): VVMLeadership =>
	stubLeadership(slot, token, `10.0.0.${slot}:8080#n`);

function recorder() {
	const granted = new Map<number, PartitionGrant>();
	const ended: Array<[number, string]> = [];
	const handlers: PlacementHandlers = {
		onGranted: async (p, grant) => {
			granted.set(p, grant);
		},
		onEnded: (p, reason) => ended.push([p, reason]),
	};
	return { handlers, granted, ended };
}

/** A static VVM leading `slot` of `numVVM` with the slot token `token`, started as @vvm/orch would. */
async function staticVVM(
	storage: ReturnType<typeof createMemTTLStorage>,
	clock: MockClock,
	slot: number,
	numVVM: number,
	token: number,
) {
	const rec = recorder();
	const placement = createStaticPlacement({
		partitions: 4,
		numVVM,
		handlers: rec.handlers,
		leadership: () => leadership(slot, token),
		leaderOf: async () => undefined,
		storage,
		namespace: NS,
		clock,
	});
	const ctl = new AbortController();
	await placement.service.start({
		signal: ctl.signal,
		leaseValid: () => true,
		fencingToken: token,
	});
	await new Promise((r) => setImmediate(r));
	return { placement, rec, ctl };
}

describe("partition epochs", () => {
	it("takePartitionEpoch: concurrent takers get distinct epochs, each above the stored one and the floor", async () => {
		const storage = createMemTTLStorage();
		const epochs = await Promise.all(
			Array.from({ length: 8 }, (_, i) => takePartitionEpoch(storage, NS, 3, { tag: `t${i}` })),
		);
		expect([...epochs].sort((a, b) => Number(a - b))).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
		expect(await takePartitionEpoch(storage, NS, 3, { tag: "f", floor: 20n })).toBe(20n);
		expect(await takePartitionEpoch(storage, NS, 3, { tag: "g", floor: 20n })).toBe(21n);
		expect(await readPartitionEpoch(storage, NS, 3)).toEqual({ epoch: 21n, tag: "g" });
		expect(await readPartitionEpoch(storage, NS, 2)).toBeUndefined(); // per partition
	});

	it("claimPartitionEpoch: only above the stored epoch, or again by the same holder", async () => {
		const storage = createMemTTLStorage();
		expect(await claimPartitionEpoch(storage, NS, 0, 100n, "leases:a")).toBe(true);
		expect(await claimPartitionEpoch(storage, NS, 0, 100n, "leases:a")).toBe(true); // redeploy
		expect(await claimPartitionEpoch(storage, NS, 0, 100n, "leases:b")).toBe(false); // taken
		expect(await claimPartitionEpoch(storage, NS, 0, 99n, "leases:b")).toBe(false); // passed
		expect(await takePartitionEpoch(storage, NS, 0, { tag: "static:1:x" })).toBe(101n);
		expect(await claimPartitionEpoch(storage, NS, 0, 101n, "leases:a")).toBe(false); // static's
		expect(await claimPartitionEpoch(storage, NS, 0, 150n, "leases:a")).toBe(true);
	});

	it("static: after a numVVM change the new slot's holder gets an epoch above the old slot's, whatever their tokens", async () => {
		const clock = new MockClock(1_000_000);
		const storage = createMemTTLStorage({ clock });
		const before = await staticVVM(storage, clock, 1, 2, 5); // slot 1 led five times
		expect(before.rec.granted.get(2)?.fencingToken).toBe(5n); // the slot token as a floor
		before.ctl.abort(new Error("stopped"));
		await before.placement.close();
		expect(await changeStaticNumVVM(storage, { from: 2, to: 3 }, NS)).toBe(true);
		const after = await staticVVM(storage, clock, 3, 3, 1); // slot 3 led for the first time
		expect(after.rec.granted.get(2)?.fencingToken).toBe(6n);
		expect(after.placement.locate(2).kind).toBe("served");
		// The same slot led again (a failover): above its own earlier epoch too.
		after.ctl.abort(new Error("lost"));
		const again = await staticVVM(storage, clock, 3, 3, 2);
		expect(again.rec.granted.get(2)?.fencingToken).toBe(7n);
		await after.placement.close();
		await again.placement.close();
	});

	it("numVVM: stored by the first VVM; another value is refused at start, at each leadership, and while running", async () => {
		const clock = new MockClock(1_000_000);
		const storage = createMemTTLStorage({ clock });
		expect(await readStaticNumVVM(storage, NS)).toBeUndefined();
		const first = await staticVVM(storage, clock, 1, 2, 1);
		expect(await readStaticNumVVM(storage, NS)).toBe(2);
		await first.placement.start(AbortSignal.timeout(60_000));
		expect(first.placement.served()).toEqual([0, 2]);

		const other = createStaticPlacement({
			partitions: 4,
			numVVM: 3,
			handlers: recorder().handlers,
			leadership: () => leadership(3, 1),
			leaderOf: async () => undefined,
			storage,
			namespace: NS,
			clock,
		});
		const refused = await other.start(new AbortController().signal).catch((e: unknown) => e);
		expect(refused).toBeInstanceOf(NumVVMMismatchError);
		expect(refused).toMatchObject({ code: "APPPARTS_NUM_VVM_MISMATCH", configured: 3, stored: 2 });
		await expect(
			other.service.start({
				signal: new AbortController().signal,
				leaseValid: () => true,
				fencingToken: 1,
			}),
		).rejects.toThrow(/numVVM 3 disagrees with the cluster's stored numVVM 2/);
		expect(other.served()).toEqual([]);
		await expect(checkStaticNumVVM(storage, 3, NS)).rejects.toBeInstanceOf(NumVVMMismatchError);

		// A change that does not start from the stored value is refused; the right one is seen by
		// the running VVM at its next holder refresh: it stops serving.
		expect(await changeStaticNumVVM(storage, { from: 4, to: 3 }, NS)).toBe(false);
		expect(await changeStaticNumVVM(storage, { from: 2, to: 3 }, NS)).toBe(true);
		await clock.advanceAsync(1_000);
		await new Promise((r) => setImmediate(r));
		expect(first.placement.served()).toEqual([]);
		expect(first.placement.locate(0).kind).not.toBe("served");
		expect(first.rec.ended.map(([p]) => p)).toEqual([0, 2]);
		expect(first.rec.granted.get(0)?.leaseValid()).toBe(false);
		await first.placement.close();
		await other.close();
	});

	it("leases: a grant's startTime is claimed in the partition's counter; a grant below a static epoch is declined; static after leases is above the lease", async () => {
		const T = 1_700_000_000_000;
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		// Partition 1 was served under static placement with an epoch far above any lease's.
		const high = await takePartitionEpoch(storage, NS, 1, {
			tag: "static:2:x",
			floor: 10n * BigInt(T),
		});
		const rec = recorder();
		const leases = createLeasesPlacement({
			storage,
			address: "10.0.0.9:8080",
			partitions: 2,
			leaseIntervalMs: 1_000,
			maxClockSkewMs: 100,
			namespace: NS,
			handlers: rec.handlers,
			clock,
		});
		await leases.start(AbortSignal.timeout(60_000));
		for (let i = 0; i < 60 && leases.served().length === 0; i++) {
			clock.advance(100);
			for (let k = 0; k < 5; k++) await new Promise((r) => setImmediate(r));
		}
		expect(leases.served()).toEqual([0]); // partition 1's grant declined: its epoch is taken
		expect(rec.granted.has(1)).toBe(false);
		const token0 = rec.granted.get(0)?.fencingToken;
		expect(token0).toBeGreaterThan(0n);
		expect(await readPartitionEpoch(storage, NS, 0)).toMatchObject({ epoch: token0 });
		expect(await readPartitionEpoch(storage, NS, 1)).toMatchObject({ epoch: high });
		await leases.close();
		// Switch to static placement: its epoch for partition 0 is above the lease's.
		const after = await staticVVM(storage, clock, 1, 1, 1);
		expect(after.rec.granted.get(0)?.fencingToken).toBe((token0 as bigint) + 1n);
		await after.placement.close();
	});

	it("start(signal) is the start deadline in both placements: an aborted signal rejects the start", async () => {
		const storage = createMemTTLStorage();
		const staticOne = createStaticPlacement({
			partitions: 2,
			numVVM: 1,
			handlers: recorder().handlers,
			leadership: () => undefined,
			leaderOf: async () => undefined,
			storage,
		});
		const gone = AbortSignal.abort(new Error("start deadline passed"));
		await expect(staticOne.start(gone)).rejects.toThrow("start deadline passed");
		const leasesOne = createLeasesPlacement({
			storage,
			address: "10.0.0.9:8080",
			partitions: 2,
			leaseIntervalMs: 1_000,
			maxClockSkewMs: 100,
			namespace: NS,
			handlers: recorder().handlers,
		});
		await expect(leasesOne.start(gone)).rejects.toThrow("start deadline passed");
		await staticOne.close();
		await leasesOne.close();
	});

	it("numVVM reads that fail: start() tries again within its deadline; a leadership after a good check goes on", async () => {
		const clock = new MockClock(1_000_000);
		const storage = withFaults(createMemTTLStorage({ clock }), { clock });
		const rec = recorder();
		const placement = createStaticPlacement({
			partitions: 2,
			numVVM: 1,
			handlers: rec.handlers,
			leadership: () => leadership(1, 1),
			leaderOf: async () => undefined,
			storage,
			namespace: NS,
			clock,
		});
		const failing = storage.inject({ on: "get", action: faults.fail(), times: 2 });
		const started = placement.start(new AbortController().signal);
		for (let i = 0; i < 4; i++) {
			await new Promise((r) => setImmediate(r));
			await clock.advanceAsync(1_000);
		}
		await started; // the third read answered
		failing();
		expect(await readStaticNumVVM(storage, NS)).toBe(1);
		// The storage fails the numVVM read at the leadership's start: the grants go on (the epochs
		// are taken by their own reads, which answer).
		storage.inject({ on: "get", action: faults.fail(), times: 1 });
		await placement.service.start({
			signal: new AbortController().signal,
			leaseValid: () => true,
			fencingToken: 1,
		});
		await new Promise((r) => setImmediate(r));
		expect(placement.served()).toEqual([0, 1]);
		expect([...rec.granted.keys()].sort()).toEqual([0, 1]);
		await placement.close();

		// Never checked and the storage down: start() gives up after 5 reads with the storage error.
		const fresh = withFaults(createMemTTLStorage({ clock }), { clock });
		const other = createStaticPlacement({
			partitions: 2,
			numVVM: 1,
			handlers: recorder().handlers,
			leadership: () => leadership(1, 1),
			leaderOf: async () => undefined,
			storage: fresh,
			namespace: NS,
			clock,
		});
		fresh.inject({ on: "*", action: faults.fail() });
		const failed = other.start(new AbortController().signal).catch((e: unknown) => e);
		for (let i = 0; i < 6; i++) {
			await new Promise((r) => setImmediate(r));
			await clock.advanceAsync(1_000);
		}
		expect(await failed).toMatchObject({ code: "TTLSTORAGE_UNAVAILABLE" });
		expect(fresh.count("get")).toBe(5);
		await expect(
			other.service.start({
				signal: new AbortController().signal,
				leaseValid: () => true,
				fencingToken: 1,
			}),
		).rejects.toMatchObject({ code: "TTLSTORAGE_UNAVAILABLE" });
		await other.close();
	});

	/**
	 * The numVVM change made while an old VVM still serves: slot 1 of 2 serves partition 2 under
	 * epoch 1; the operator changes numVVM without stopping it, and a VVM with 3 starts at once
	 * (slot 3 of 3: partition 2 under epoch 2), before the old one's refresh saw the change. Four
	 * creates alternate between them; what each answered, and the WLog the newer holder reads.
	 */
	async function numVVMOverlap(fencing: "epoch" | "ordered") {
		const storage = createMemTTLStorage({ fencing });
		const vvm = async (slot: number, numVVM: number, token: number) => {
			const cp = createCommandProcessor({ storage, appId: 1, partitions: 4, trustLevel: 2 });
			const parts = deployCpPartitions(cp);
			const placement = createStaticPlacement({
				partitions: 4,
				numVVM,
				handlers: parts.handlers,
				leadership: () => leadership(slot, token),
				leaderOf: async () => undefined,
				storage,
				namespace: NS,
			});
			const ctl = new AbortController();
			await placement.service.start({
				signal: ctl.signal,
				leaseValid: () => true,
				fencingToken: token,
			});
			await parts.partition(2)?.ready();
			return { placement, parts, ctl };
		};
		const old = await vvm(1, 2, 1);
		expect(await changeStaticNumVVM(storage, { from: 2, to: 3 }, NS)).toBe(true);
		const added = await vvm(3, 3, 1);
		expect(old.parts.fencingToken(2)).toBe(1n);
		expect(added.parts.fencingToken(2)).toBe(2n);
		const outcomes: string[] = [];
		const acked = new Map<number, string[]>();
		for (const [v, name] of [
			[old, "A1"],
			[added, "C1"],
			[old, "A2"],
			[added, "C2"],
		] as const) {
			const deployed = v.parts.partition(2);
			if (deployed === undefined) {
				outcomes.push(`${name}: not deployed`);
				continue;
			}
			await deployed.createRecord({ wsid: 1002, table: "app1pkg.Customer", fields: { name } }).then(
				(a) => {
					outcomes.push(`${name}: acknowledged at ${a.plogOffset}`);
					acked.set(a.plogOffset, [...(acked.get(a.plogOffset) ?? []), name]);
				},
				(e: unknown) => outcomes.push(`${name}: refused: ${(e as Error).message}`),
			);
		}
		const wlog =
			(await added.parts.partition(2)?.readWLog({ wsid: 1002, from: 1, limit: 10 })) ?? [];
		for (const v of [old, added]) {
			v.ctl.abort(new Error("stopped"));
			await v.placement.close();
			await v.parts.close();
		}
		return { outcomes, acked, wlog: wlog.map((e) => JSON.stringify(e.event)) };
	}

	it("epochs alone keep a numVVM change made while an old VVM still serves safe: the old holder's writes are refused, no PLog offset is acknowledged twice (trust level 2)", async () => {
		const { outcomes } = await numVVMOverlap("epoch");
		// The old holder is fenced out: refused (nothing written), then no longer deployed (or
		// refused again, should its undeploy still be under way).
		const fenced =
			"refused: [@vvm/cp] partition 2 was taken over by a newer holder; nothing was written";
		expect(outcomes).toEqual([
			`A1: ${fenced}`,
			"C1: acknowledged at 1",
			outcomes[2] === `A2: ${fenced}` ? `A2: ${fenced}` : "A2: not deployed",
			"C2: acknowledged at 2",
		]);
	}, 20_000);

	it('the same on "ordered" fencing (Cassandra, DynamoDB): the old holder acknowledges nothing, and every acknowledged create is in the WLog once (trust level 2)', async () => {
		// A deposed holder's put to a PLog offset nobody wrote yet lands without an error there:
		// both holders acknowledged creates at offsets 1 and 2, and the newer holder's replaced
		// the older's (found by review). @vvm/cp now confirms the fence after the write.
		const { outcomes, acked, wlog } = await numVVMOverlap("ordered");
		expect([...acked.values()].filter((names) => names.length > 1)).toEqual([]);
		expect(outcomes.filter((o) => /^A\d: acknowledged/.test(o))).toEqual([]);
		for (const [name] of [...acked.values()])
			expect(
				wlog.filter((e) => e.includes(`"${name}"`)),
				name,
			).toHaveLength(1);
		expect(acked.size).toBe(2);
	}, 20_000);
});
