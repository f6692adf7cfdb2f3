// The final recovery turns a PLog tail no holder applied (a held-back write that landed after the
// last holder's actualization) into what the next holder serves, and says how many events it
// applied. Without it the storage check reports the tail as a half-applied command.
import { createCommandProcessor, PKEY_PREFIX_PLOG } from "@vvm/cp";
import { checkCpStorage, createCrashableStorage, readCpRecord } from "@vvm/cp/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { recoverAllPartitions } from "../src/final-recovery.ts";

const APP = 1;
const PARTITIONS = 2;
const WS = 1001;

const prefixOf = (pKey: Uint8Array | undefined): number =>
	pKey === undefined ? -1 : new DataView(pKey.buffer, pKey.byteOffset).getUint32(0);

describe("recoverAllPartitions", () => {
	for (const trustLevel of [0, 2] as const)
		it(`applies a PLog event whose holder died after writing it (level ${trustLevel})`, async () => {
			// "ordered" fencing and separate writes, as on Cassandra and DynamoDB: the PLog entry
			// is written before the event's effects.
			const base = createMemTTLStorage({ fencing: "ordered" });
			const holder = createCrashableStorage(base);
			const cp = createCommandProcessor({
				storage: holder.storage,
				appId: APP,
				partitions: PARTITIONS,
				trustLevel,
				atomicBatches: false,
			});
			const p = cp.deploy(cp.partitionOf(WS));
			await p.ready();
			const first = await p.createRecord({
				wsid: WS,
				table: "app1pkg.Customer",
				fields: { name: "a" },
			});
			// The second command's PLog write lands; the holder is gone before it writes the effects.
			holder.crashOn(
				(c) =>
					c.operation !== "get" &&
					c.operation !== "read" &&
					c.keys.some((k) => prefixOf(k.pKey) === PKEY_PREFIX_PLOG),
				{ landed: true },
			);
			await expect(
				p.createRecord({ wsid: WS, table: "app1pkg.Customer", fields: { name: "b" } }),
			).rejects.toThrow();

			const scope = { storage: base, appId: APP, partitions: PARTITIONS };
			const recovery = await recoverAllPartitions(base, {
				appId: APP,
				partitions: PARTITIONS,
				trustLevel,
			});
			expect(recovery.partitions).toBe(PARTITIONS);
			// As stored, the event looks half applied; the report keeps that line.
			expect(recovery.before).toContain(`WLog ${WS}: ends at 1, its events go to 2`);
			expect(recovery.reappliedEvents).toBeGreaterThanOrEqual(1);
			const after = await checkCpStorage(scope);
			expect(after.problems).toEqual([]);
			const second = Object.values(first.NewIDs)[0] as number;
			expect(await readCpRecord(scope, WS, second + 1)).toEqual({ name: "b" });
		});

	it("leaves an applied storage as it was (nothing to apply)", async () => {
		const storage = createMemTTLStorage();
		const cp = createCommandProcessor({ storage, appId: APP, partitions: PARTITIONS });
		const p = cp.deploy(cp.partitionOf(WS));
		await p.ready();
		await p.createRecord({ wsid: WS, table: "app1pkg.Customer", fields: { name: "a" } });
		await cp.close();
		const recovery = await recoverAllPartitions(storage, {
			appId: APP,
			partitions: PARTITIONS,
			trustLevel: 0,
		});
		expect(recovery.corruptedOffsets).toBe(0);
		expect(recovery.before).toEqual([]);
		expect(
			(await checkCpStorage({ storage, appId: APP, partitions: PARTITIONS })).problems,
		).toEqual([]);
	});
});
