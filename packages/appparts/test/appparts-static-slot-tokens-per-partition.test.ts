// Review 5, defect F2: the static placement fences partition p with the fencing token of p's
// *slot* (`ctx.fencingToken`, one elections counter per slot), but the fence the token is checked
// against is the *partition's* (`@vvm/cp` raises scope (app, p) to it). Tokens of different slots
// are unrelated counters, so as soon as p is served by another slot than before, which is what
// changing numVVM does (slot = p mod numVVM + 1), the fence no longer orders the holders:
//
//  (a) High, during a rolling --num-vvm change (some VVMs still run the old value): partition 2
//      belongs to slot 1 for a VVM with numVVM 2 and to slot 3 for one with numVVM 3; on a young
//      cluster both slots are at token 1, both VVMs deploy partition 2 under epoch 1, both answer
//      `served`, and the storage fence accepts both. At SequencesTrustLevel 2 both acknowledge
//      commands at the same PLog offsets (one overwrites the other's acknowledged event).
//  (b) Medium, after a clean change: slot 1 had been led 5 times (token 5, the partition's fence
//      is 5), slot 3 is new (token 1): its leader's deployment of partition 2 is refused by the
//      fence ("held by a newer holder") and the partition stays dark until slot 3 has been
//      acquired five more times.
//
// Copy into packages/appparts/test/ and run from the repository root:
//   pnpm vitest run --project appparts test/appparts-static-slot-tokens-per-partition.test.ts
//
// Adapted to the fix (assertions kept): the placement takes the storage where it keeps the
// partitions' epochs and the cluster's numVVM; a VVM whose numVVM disagrees with the stored one is
// refused at its service start (recorded here instead of thrown), and (b) changes the stored
// numVVM the documented way (`changeStaticNumVVM`, every VVM stopped) before the restart.
import { createCommandProcessor, partitionOf } from "@vvm/cp";
import { createElections, vvmLeadershipStorage } from "@vvm/ielections";
import type { VVMLeadership } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { changeStaticNumVVM, createStaticPlacement, deployCpPartitions } from "../src/index.ts";

const PARTITIONS = 4;
const P = 2; // slot 1 of 2, slot 3 of 3
const WSID = 1002;

const noKiller = { schedule() {}, disarm() {} };

/** A VVM that leads `slot` of `numVVM` with `token`: its static placement and cp partitions. */
async function staticVVM(
	storage: TTLStorage,
	slot: number,
	numVVM: number,
	token: number,
	trustLevel: 0 | 2 = 0,
) {
	const cp = createCommandProcessor({ storage, appId: 1, partitions: PARTITIONS, trustLevel });
	const parts = deployCpPartitions(cp);
	const leadership: VVMLeadership = {
		slot,
		address: `10.0.0.${slot}:8080#n`,
		durationSeconds: 20,
		acquiredAt: 0,
		renewals: 0,
		lastRenewedAt: 0,
		leaseDeadline: Number.MAX_SAFE_INTEGER,
		leaseTimeLeftMs: Number.MAX_SAFE_INTEGER,
		fencingToken: token,
	};
	const placement = createStaticPlacement({
		partitions: PARTITIONS,
		numVVM,
		handlers: parts.handlers,
		leadership: () => leadership,
		leaderOf: async () => undefined,
		storage,
	});
	const ctl = new AbortController();
	// What @vvm/orch hands the partitions service: the slot leadership's token and lease check.
	// A refused start is a VVM problem in @vvm/orch (the VVM stops): recorded, not thrown, here.
	const refused = await placement.service
		.start({
			signal: ctl.signal,
			leaseValid: () => true,
			fencingToken: token,
		})
		.then(
			() => undefined,
			(error: unknown) => error,
		);
	const stop = async () => {
		ctl.abort(new Error("stopped"));
		await placement.close();
		await parts.close();
	};
	return { placement, parts, stop, refused };
}

const settle = async (): Promise<void> => {
	for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 5));
};

describe("review 5: static placement fences a partition with its slot's token", () => {
	it("(a) a rolling --num-vvm 2 -> 3 change: at most one VVM serves partition 2, and no PLog offset is acknowledged twice", async () => {
		expect(partitionOf(WSID, PARTITIONS)).toBe(P);
		const storage = createMemTTLStorage();
		const elections = createElections(vvmLeadershipStorage(storage), { killer: noKiller });
		// A young cluster: slot 1 led once (old VVM, --num-vvm 2), slot 3 led once (new VVM, --num-vvm 3).
		await elections.acquireLeadership(1, "10.0.0.1:8080#n", 20);
		await elections.acquireLeadership(3, "10.0.0.3:8080#n", 20);
		const token1 = elections.leadership(1)?.fencingToken as number;
		const token3 = elections.leadership(3)?.fencingToken as number;
		const old = await staticVVM(storage, 1, 2, token1, 2);
		const added = await staticVVM(storage, 3, 3, token3, 2);
		await settle();
		const served = [old, added].filter((v) => v.placement.locate(P).kind === "served").length;
		const offsets: number[] = [];
		for (const [vvm, name] of [
			[old, "A1"],
			[added, "C1"],
			[old, "A2"],
			[added, "C2"],
		] as const) {
			const answer = await vvm.parts
				.partition(P)
				?.createRecord({ wsid: WSID, table: "app1pkg.Customer", fields: { name } })
				.catch(() => undefined);
			if (answer !== undefined) offsets.push(answer.plogOffset);
		}
		await old.stop();
		await added.stop();
		await elections.cleanup();
		expect({ token1, token3 }).toEqual({ token1: 1, token3: 1 });
		expect(String(added.refused)).toMatch(/numVVM 3 disagrees with the cluster's stored numVVM 2/);
		expect({
			vvmsServingPartition2: served,
			acknowledgedPLogOffsets: offsets,
		}).toEqual({
			vvmsServingPartition2: 1,
			acknowledgedPLogOffsets: [...new Set(offsets)], // each acknowledged offset once
		});
	}, 20_000);

	it("(b) after a clean --num-vvm 2 -> 3 change, the new owner of partition 2 serves it", async () => {
		const storage = createMemTTLStorage();
		const elections = createElections(vvmLeadershipStorage(storage), { killer: noKiller });
		// Slot 1 has been led five times (restarts, failovers) before the change.
		for (let i = 0; i < 4; i++) {
			await elections.acquireLeadership(1, `10.0.0.1:8080#${i}`, 20);
			await elections.releaseLeadership(1);
		}
		await elections.acquireLeadership(1, "10.0.0.1:8080#4", 20);
		const token1 = elections.leadership(1)?.fencingToken as number;
		const before = await staticVVM(storage, 1, 2, token1);
		await before.parts.partition(P)?.ready();
		await before.parts
			.partition(P)
			?.createRecord({ wsid: WSID, table: "app1pkg.Customer", fields: { name: "Ada" } });
		await before.stop();
		await elections.releaseLeadership(1);
		// With every VVM stopped, the operator changes the cluster's numVVM (README, "Changing numVVM").
		expect(await changeStaticNumVVM(storage, { from: 2, to: 3 })).toBe(true);
		// Every VVM restarts with --num-vvm 3: partition 2 now belongs to slot 3, led for the first time.
		await elections.acquireLeadership(3, "10.0.0.3:8080#0", 20);
		const token3 = elections.leadership(3)?.fencingToken as number;
		const after = await staticVVM(storage, 3, 3, token3);
		await settle();
		const where = after.placement.locate(P).kind;
		const answer = await after.parts
			.partition(P)
			?.createRecord({ wsid: WSID, table: "app1pkg.Customer", fields: { name: "Bob" } })
			.then(
				(a) => `created at PLog offset ${a.plogOffset}`,
				(e: unknown) => String(e),
			);
		await after.stop();
		await elections.cleanup();
		expect({ token1, token3 }).toEqual({ token1: 5, token3: 1 });
		expect({ where, answer }).toEqual({ where: "served", answer: "created at PLog offset 2" });
	}, 20_000);
});
