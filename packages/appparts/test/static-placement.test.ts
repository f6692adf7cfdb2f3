import { MockClock } from "@vvm/clock";
import type { VVMLeadership } from "@vvm/orch";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { PartitionHolder, PartitionPlacement, PlacementHandlers } from "../src/placement.ts";
import {
	createStaticPlacement,
	staticPartitionsOf,
	staticSlotOf,
} from "../src/static-placement.ts";
import { stubLeadership } from "./leadership.ts";

/** Whether `placement` serves `partition` now (its `locate` answer). */
const serving = (placement: PartitionPlacement, partition: number): boolean =>
	placement.locate(partition).kind === "served";

/** The holder `locate` names for `partition`, `undefined` when served here or nobody is known. */
function holderOf(placement: PartitionPlacement, partition: number): PartitionHolder | undefined {
	const where = placement.locate(partition);
	return where.kind === "held" ? where.holder : undefined;
}

const leadership = (slot: number): VVMLeadership => stubLeadership(slot, 7);

/** Handlers that record what the placement asked for; grants resolve when the test says. */
function recorder() {
	const granted: { partition: number; signal: AbortSignal; fencingToken: bigint | undefined }[] =
		[];
	const ended: [number, string][] = [];
	const release: (() => void)[] = [];
	const handlers: PlacementHandlers = {
		onGranted(partition, grant) {
			granted.push({ partition, signal: grant.signal, fencingToken: grant.fencingToken });
			return new Promise<void>((r) => release.push(r));
		},
		onEnded(partition, reason) {
			ended.push([partition, reason]);
		},
	};
	return { handlers, granted, ended, release };
}

function setup(options: {
	slot: number;
	numVVM: number;
	partitions: number;
	leaders?: Map<number, string>;
}) {
	const clock = new MockClock(1_000_000);
	const rec = recorder();
	const leaders = options.leaders ?? new Map<number, string>();
	const reads: number[] = [];
	let held: VVMLeadership | undefined = leadership(options.slot);
	const placement = createStaticPlacement({
		partitions: options.partitions,
		numVVM: options.numVVM,
		handlers: rec.handlers,
		leadership: () => held,
		leaderOf: async (slot) => {
			reads.push(slot);
			return leaders.get(slot);
		},
		storage: createMemTTLStorage({ clock }),
		clock,
	});
	const lease = { valid: true };
	const ctl = new AbortController();
	const ctx = { signal: ctl.signal, leaseValid: () => lease.valid, fencingToken: 7 };
	return {
		clock,
		rec,
		leaders,
		reads,
		placement,
		lease,
		ctl,
		ctx,
		drop: () => {
			held = undefined;
		},
	};
}

describe("static placement", () => {
	it("assigns partition p to slot (p mod numVVM) + 1", () => {
		expect([0, 1, 2, 3, 4].map((p) => staticSlotOf(p, 3))).toEqual([1, 2, 3, 1, 2]);
		expect(staticPartitionsOf(2, 3, 10)).toEqual([1, 4, 7]);
		expect(staticPartitionsOf(3, 4, 2)).toEqual([]); // more slots than partitions
		expect(staticPartitionsOf(1, 1, 3)).toEqual([0, 1, 2]);
	});

	it("deploys its slot's partitions when the VVM leads, with the leadership's fencing token", async () => {
		const t = setup({ slot: 2, numVVM: 3, partitions: 8 });
		expect(t.placement.served()).toEqual([]);
		expect(serving(t.placement, 1)).toBe(false);
		await t.placement.service.start(t.ctx);
		expect(t.rec.granted.map((g) => g.partition)).toEqual([1, 4, 7]);
		expect(t.rec.granted.every((g) => g.fencingToken === 7n)).toBe(true);
		expect(t.placement.served()).toEqual([1, 4, 7]);
		expect(serving(t.placement, 4)).toBe(true);
		expect(serving(t.placement, 0)).toBe(false); // slot 1's
		expect(t.placement.describe()).toMatchObject({ mode: "static", slot: 2, fencingToken: 7 });
	});

	it("serves nothing once the lease is not valid, and undeploys everything when the leadership ends", async () => {
		const t = setup({ slot: 1, numVVM: 2, partitions: 4 });
		await t.placement.service.start(t.ctx);
		expect(t.placement.served()).toEqual([0, 2]);
		t.lease.valid = false; // a renewal hangs past the lease deadline: stop at once
		expect(serving(t.placement, 0)).toBe(false);
		expect(t.placement.served()).toEqual([]);
		expect(t.rec.ended).toEqual([]);
		t.ctl.abort(new Error("leadership lost"));
		expect(t.rec.ended).toEqual([
			[0, "Error: leadership lost"],
			[2, "Error: leadership lost"],
		]);
		expect(t.rec.granted.every((g) => g.signal.aborted)).toBe(true);
		await t.placement.service.stop(); // idempotent: nothing ends twice
		expect(t.rec.ended).toHaveLength(2);
	});

	it("undeploys on stop and on close", async () => {
		const t = setup({ slot: 1, numVVM: 1, partitions: 2 });
		await t.placement.service.start(t.ctx);
		await t.placement.service.stop();
		expect(t.rec.ended.map(([p]) => p)).toEqual([0, 1]);
		const ctl = new AbortController();
		await t.placement.service.start({ ...t.ctx, signal: ctl.signal });
		expect(t.placement.served()).toEqual([0, 1]);
		await t.placement.close();
		expect(t.rec.ended.map(([p, r]) => `${p}:${r}`)).toEqual([
			"0:services stopped",
			"1:services stopped",
			"0:placement closed",
			"1:placement closed",
		]);
		expect(serving(t.placement, 0)).toBe(false);
	});

	it("a declined grant is not served, and is deployed again under a new epoch after a pause that doubles", async () => {
		const clock = new MockClock();
		const ended: string[] = [];
		const tokens: bigint[] = [];
		let refusals = 2;
		const placement = createStaticPlacement({
			partitions: 2,
			numVVM: 1,
			handlers: {
				onGranted: async (p, grant) => {
					if (p !== 1) return;
					tokens.push(grant.fencingToken ?? -1n);
					if (refusals-- > 0) throw new Error("cannot deploy");
				},
				onEnded: (p, reason) => ended.push(`${p}:${reason}`),
			},
			leadership: () => leadership(1),
			leaderOf: async () => undefined,
			storage: createMemTTLStorage({ clock }),
			clock,
		});
		await placement.service.start({
			signal: new AbortController().signal,
			leaseValid: () => true,
			fencingToken: 1,
		});
		const settle = async (): Promise<void> => {
			for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
		};
		await settle();
		expect(placement.served()).toEqual([0]);
		expect(serving(placement, 1)).toBe(false);
		expect(ended).toEqual(["1:deploy failed"]);
		// Before, it stayed dark for the rest of the leadership. Now a new epoch after 100 ms…
		await clock.advanceAsync(99);
		await settle();
		expect(tokens).toHaveLength(1);
		await clock.advanceAsync(1);
		await settle();
		expect(tokens).toHaveLength(2);
		expect(ended).toEqual(["1:deploy failed", "1:deploy failed"]);
		// …and after the second refusal 200 ms (doubling), when it deploys.
		await clock.advanceAsync(199);
		await settle();
		expect(tokens).toHaveLength(2);
		await clock.advanceAsync(1);
		await settle();
		expect(tokens).toHaveLength(3);
		expect(tokens[1]).toBeGreaterThan(tokens[0] as bigint);
		expect(tokens[2]).toBeGreaterThan(tokens[1] as bigint);
		expect(placement.served()).toEqual([0, 1]);
		expect(placement.describe()).toMatchObject({
			partitionsOfSlot: [
				{ partition: 0, releases: 0 },
				{ partition: 1, releases: 2 },
			],
		});
	});

	it("a hand-back's pause: no onEnded for the grant never handed over, no take logged as failed while the lease is not valid", async () => {
		const clock = new MockClock();
		const ended: string[] = [];
		const lines: { level: string; event: unknown }[] = [];
		const log = (level: string) => (o: unknown) => {
			lines.push({ level, event: (o as { event?: unknown }).event });
		};
		let release: ((reason: unknown) => void) | undefined;
		const placement = createStaticPlacement({
			partitions: 1,
			numVVM: 1,
			handlers: {
				onGranted: async (_p, grant) => {
					release = grant.release;
				},
				onEnded: (p, reason) => ended.push(`${p}:${reason}`),
			},
			leadership: () => leadership(1),
			leaderOf: async () => undefined,
			storage: createMemTTLStorage({ clock }),
			clock,
			logger: { error: log("error"), warn: log("warn"), info: log("info"), debug: log("debug") },
		});
		const lease = { valid: true };
		const ctl = new AbortController();
		await placement.service.start({
			signal: ctl.signal,
			leaseValid: () => lease.valid,
			fencingToken: 1,
		});
		await new Promise((r) => setImmediate(r));
		release?.(new Error("closed on its own"));
		expect(ended).toEqual(["0:released"]);
		expect(serving(placement, 0)).toBe(false);
		// The lease is not valid when the pause ends: nothing is taken, and no take "failed".
		lease.valid = false;
		await clock.advanceAsync(500);
		await new Promise((r) => setImmediate(r));
		expect(lines.filter((l) => l.event === "partition-epoch-failed")).toEqual([]);
		expect(lines.filter((l) => l.event === "partition-handed-back")).toHaveLength(1);
		// The leadership ends during the wait: the partition's onEnded came already, once.
		ctl.abort(new Error("leadership ended"));
		expect(ended).toEqual(["0:released"]);
		await placement.close();
		expect(ended).toEqual(["0:released"]);
	});

	it("answers the holder of another slot's partition from its leader record, refreshed on the clock", async () => {
		const leaders = new Map([[2, "10.0.0.2:8080#n1"]]);
		const t = setup({ slot: 1, numVVM: 3, partitions: 6, leaders });
		await t.placement.start(t.ctl.signal);
		expect(holderOf(t.placement, 1)).toEqual({ address: "10.0.0.2:8080" }); // nonce stripped
		expect(holderOf(t.placement, 4)).toEqual({ address: "10.0.0.2:8080" });
		expect(holderOf(t.placement, 2)).toBeUndefined(); // slot 3 is free
		leaders.set(3, "10.0.0.3:8080#n2");
		leaders.set(2, "10.0.0.9:8080#n3");
		await t.clock.advanceAsync(1_000);
		await new Promise((r) => setImmediate(r));
		expect(holderOf(t.placement, 2)).toEqual({ address: "10.0.0.3:8080" });
		expect(holderOf(t.placement, 1)).toEqual({ address: "10.0.0.9:8080" });
		await t.placement.close();
		const reads = t.reads.length;
		await t.clock.advanceAsync(5_000);
		expect(t.reads.length).toBe(reads); // closed: no more reads
	});

	it("keeps the last known holder when a leader record read fails", async () => {
		const clock = new MockClock();
		let fail = false;
		const placement = createStaticPlacement({
			partitions: 2,
			numVVM: 2,
			handlers: recorder().handlers,
			leadership: () => leadership(1),
			leaderOf: async (slot) => {
				if (fail) throw new Error("storage down");
				return slot === 2 ? "h2:1#x" : undefined;
			},
			storage: createMemTTLStorage({ clock }),
			clock,
		});
		await placement.start(new AbortController().signal);
		fail = true;
		await clock.advanceAsync(1_000);
		expect(holderOf(placement, 1)).toEqual({ address: "h2:1" });
		await placement.close();
	});
});
