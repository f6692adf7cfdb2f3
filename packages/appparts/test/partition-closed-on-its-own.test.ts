// Noted by the reviews of stop 59 (placement liveness): a deployed @vvm/cp partition closes itself
// when a newer holder's fence refuses its write (deposed), but `deployCpPartitions` was never told,
// so its grant went on: the leases placement kept acknowledging the lease (the driver prolongs it
// for ever), the static slot kept its leadership, and `locate(p)` answered `served` while nothing
// was deployed. Every request for p got 503, also after the other holder was gone: dark for good.
// A newer holder of a partition served here happens in an overlap of a switch between static and
// leases placement (README, "Partition epochs": each side takes epochs above the other's).
//
// Now the partition's `closed` signal makes `deployCpPartitions` give the grant back
// (`grant.release`), and both placements hand the partition out again under a new token.
import { MockClock } from "@vvm/clock";
import type { AppPartition } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { PartitionPlacement, PlacementHandlers } from "../src/index.ts";
import {
	claimPartitionEpoch,
	createLeasesPlacement,
	createStaticPlacement,
	deployCpPartitions,
	readPartitionEpoch,
	takePartitionEpoch,
} from "../src/index.ts";
import { stubLeadership } from "./leadership.ts";

const T = 1_700_000_000_000;
const I = 1_000;
const NS = "closed-on-its-own";

async function settle(): Promise<void> {
	for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
}

function create(part: AppPartition, name: string): Promise<string> {
	return part.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name } }).then(
		() => "ok",
		(e: unknown) => (e as { code?: string }).code ?? String(e),
	);
}

/**
 * Another process deploys partition 0 under `epoch` (above this one's), raises the fence, and is
 * gone again: what an overlap of a placement switch leaves behind.
 */
async function intrude(storage: TTLStorage, epoch: bigint): Promise<void> {
	const other = createCommandProcessor({ storage, appId: 1, partitions: 1 });
	const p = other.deploy(0, { lease: { epoch, valid: () => true } });
	await p.ready();
	await other.close();
}

/**
 * Steps the clock `steps` times by `ms` and returns how many steps ended with `locate(0)` saying
 * `served` while no open partition was deployed here.
 */
async function darkSteps(
	clock: MockClock,
	placement: PartitionPlacement,
	parts: ReturnType<typeof deployCpPartitions>,
	steps: number,
	ms: number,
): Promise<number> {
	let dark = 0;
	for (let k = 0; k < steps; k++) {
		clock.advance(ms);
		await settle();
		const part = parts.partition(0);
		const open = part !== undefined && !part.closed.aborted;
		if (placement.locate(0).kind === "served" && !open) dark++;
	}
	return dark;
}

/** A command processor of one partition on a mem storage, its deployments, and the ends seen. */
function processor() {
	const clock = new MockClock(T);
	const mem = createMemTTLStorage({ clock });
	const parts = deployCpPartitions(
		createCommandProcessor({ storage: mem, appId: 1, partitions: 1 }),
	);
	const ended: string[] = [];
	const handlers: PlacementHandlers = {
		onGranted: (p, g) => parts.handlers.onGranted(p, g),
		onEnded: (p, reason) => {
			ended.push(reason);
			parts.handlers.onEnded(p, reason);
		},
	};
	return { clock, mem, parts, ended, handlers };
}

describe("a cp partition that closes on its own gives its grant back (never served while closed)", () => {
	it("leases: the lease ends here (released) and is granted again under a new startTime, above the newer holder's fence", async () => {
		const { clock, mem, parts, ended, handlers } = processor();
		const placement = createLeasesPlacement({
			storage: mem,
			address: "a:1",
			partitions: 1,
			leaseIntervalMs: I,
			maxClockSkewMs: 100,
			namespace: NS,
			handlers,
			clock,
		});
		await placement.start(AbortSignal.timeout(60_000));
		for (let t = 0; t < 40 * I && placement.served().length === 0; t += I / 10) {
			clock.advance(I / 10);
			await settle();
		}
		const first = parts.partition(0);
		if (first === undefined) throw new Error("partition 0 was never deployed");
		const firstToken = parts.fencingToken(0) ?? 0n;
		expect(await create(first, "before")).toBe("ok");

		// A leases → static switch overlaps: a static leader takes the next epoch and serves p.
		const newer = await takePartitionEpoch(mem, NS, 0, { tag: "static:1:b" });
		expect(newer).toBeGreaterThan(firstToken);
		await intrude(mem, newer);
		// This holder's next write is refused by the newer fence: the partition closes itself.
		expect(await create(first, "deposed")).toBe("CP_CLOSED");
		expect(first.closed.aborted).toBe(true);
		expect(first.closed.reason).toMatchObject({
			code: "CP_CLOSED",
			message: expect.stringContaining("newer holder"),
		});
		expect(first.stats().deposed).toBe(true);

		// The other holder is gone (the switch was rolled back). Within a few lease intervals the
		// partition must be served here again, and never be said served while closed.
		const dark = await darkSteps(clock, placement, parts, 100, I / 10);
		expect(dark, `locate(0) said served while closed in ${dark} of 100 steps of 100 ms`).toBe(0);
		expect(ended).toContain("released");
		const again = parts.partition(0);
		expect(again).toBeDefined();
		expect(again).not.toBe(first);
		expect(placement.locate(0).kind).toBe("served");
		expect(parts.fencingToken(0)).toBeGreaterThan(newer);
		if (again !== undefined) expect(await create(again, "after")).toBe("ok");

		await placement.close();
		await parts.close();
	}, 60_000);

	it("static: the grant ends (released), a new epoch is taken after a pause, and the partition is deployed again", async () => {
		const { clock, mem, parts, ended, handlers } = processor();
		const placement = createStaticPlacement({
			partitions: 1,
			numVVM: 1,
			storage: mem,
			namespace: NS,
			handlers,
			leadership: () => stubLeadership(1, 1, "a:1#n"),
			leaderOf: async () => "a:1#n",
			clock,
		});
		await placement.start(AbortSignal.timeout(60_000));
		const ctl = new AbortController();
		await placement.service.start({ signal: ctl.signal, leaseValid: () => true, fencingToken: 1 });
		await settle();
		const first = parts.partition(0);
		if (first === undefined) throw new Error("partition 0 was never deployed");
		await first.ready();
		expect(await create(first, "before")).toBe("ok");

		// A static → leases switch overlaps: a leases host claims its lease's startTime and serves p.
		const newer = BigInt(T + 5 * I);
		expect(await claimPartitionEpoch(mem, NS, 0, newer, "leases:b")).toBe(true);
		await intrude(mem, newer);
		expect(await create(first, "deposed")).toBe("CP_CLOSED");
		expect(first.closed.aborted).toBe(true);

		const dark = await darkSteps(clock, placement, parts, 50, 50);
		expect(dark, `locate(0) said served while closed in ${dark} of 50 steps of 50 ms`).toBe(0);
		expect(ended).toEqual(["released"]);
		const again = parts.partition(0);
		expect(again).toBeDefined();
		expect(again).not.toBe(first);
		expect(placement.locate(0).kind).toBe("served");
		const token = parts.fencingToken(0) ?? 0n;
		expect(token).toBeGreaterThan(newer);
		expect((await readPartitionEpoch(mem, NS, 0))?.epoch).toBe(token);
		expect(placement.describe()).toMatchObject({
			partitionsOfSlot: [{ partition: 0, releases: 1 }],
		});
		if (again !== undefined) expect(await create(again, "after")).toBe("ok");

		ctl.abort(new Error("leadership ended"));
		await placement.close();
		await parts.close();
	}, 60_000);
});
