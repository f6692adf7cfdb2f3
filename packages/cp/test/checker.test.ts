import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../src/event.ts";
import { decodeLogValue, encodeJson, markerOf } from "../src/event.ts";
import { cpKeys, createCommandProcessor } from "../src/index.ts";
import type { AcknowledgedCommand } from "../src/testing/index.ts";
import { checkCpStorage } from "../src/testing/index.ts";

const appId = 9;
const C0 = 322_685_000_131_072;

async function fixture(): Promise<{ storage: TTLStorage; acked: AcknowledgedCommand[] }> {
	const storage = createMemTTLStorage();
	const cp = createCommandProcessor({ storage, appId, partitions: 4 });
	const p = cp.deploy(1);
	await p.ready();
	const acked: AcknowledgedCommand[] = [];
	for (const name of ["a", "b", "c"]) {
		const result = await p.createRecord({
			wsid: 1001,
			table: "app1pkg.Customer",
			fields: { name },
		});
		acked.push({ wsid: 1001, result });
	}
	await cp.close();
	return { storage, acked };
}

async function eventAt(storage: TTLStorage, offset: number): Promise<StoredEvent> {
	const k = cpKeys.plog(appId, 1, offset);
	const d = decodeLogValue((await storage.get(k.pKey, k.cCols)) as Uint8Array);
	if (d === undefined) throw new Error("no event");
	return d.event;
}

async function remove(
	storage: TTLStorage,
	k: { pKey: Uint8Array; cCols: Uint8Array },
): Promise<void> {
	expect(
		await storage.compareAndDelete(
			k.pKey,
			k.cCols,
			(await storage.get(k.pKey, k.cCols)) as Uint8Array,
		),
	).toBe(true);
}

const check = (storage: TTLStorage, acked: AcknowledgedCommand[]) =>
	checkCpStorage({ storage, appId, partitions: 4, acknowledged: acked });

describe("checkCpStorage", () => {
	it("passes a clean run and counts what it checked", async () => {
		const { storage, acked } = await fixture();
		expect(await check(storage, acked)).toEqual({
			ok: true,
			problems: [],
			events: 3,
			markers: 0,
			corruptedOffsets: 0,
			workspaces: 1,
			records: 3,
			acknowledged: 3,
		});
	});

	it("finds a PLog hole, and the acknowledged command that is gone with it", async () => {
		const { storage, acked } = await fixture();
		await remove(storage, cpKeys.plog(appId, 1, 2));
		expect((await check(storage, acked)).problems).toEqual([
			"PLog 1: offset 3 is stored after the end 1 (a gap)",
			"WLog 1001/2: no PLog event has it",
			"WLog 1001/3: no PLog event has it",
			"WLog 1001: ends at 3, its events go to 1",
			`record 1001/${C0 + 1}: no event created it (an orphan)`,
			`record 1001/${C0 + 2}: no event created it (an orphan)`,
			"acknowledged command 1001/2: its event (PLog offset 2) is not in the logs",
			"acknowledged command 1001/3: its event (PLog offset 3) is not in the logs",
		]);
	});

	it("finds a reused WLog offset and a record ID handed out twice", async () => {
		const { storage, acked } = await fixture();
		const e3 = await eventAt(storage, 3);
		const dup: StoredEvent = {
			...e3,
			o: 4,
			cuds: [{ ...(e3.cuds[0] as StoredEvent["cuds"][0]), id: C0 }],
		};
		const k = cpKeys.plog(appId, 1, 4);
		await storage.put(k.pKey, k.cCols, encodeJson(dup));
		const problems = (await check(storage, acked)).problems;
		expect(problems).toContain("WLog 1001/3: reused by PLog offsets 3 and 4");
		expect(problems).toContain(`record 1001/${C0}: handed out twice (PLog offsets 1 and 4)`);
	});

	it("finds a missing record, a record of another event, and a marked event whose record stayed", async () => {
		const { storage, acked } = await fixture();
		await remove(storage, cpKeys.record(appId, 1001, C0 + 1));
		const e3 = await eventAt(storage, 3);
		const marker = encodeJson(markerOf(e3, "test"));
		for (const k of [cpKeys.plog(appId, 1, 3), cpKeys.wlog(appId, 1001, 3)])
			await storage.put(k.pKey, k.cCols, marker);
		const problems = (await check(storage, acked)).problems;
		expect(problems).toEqual([
			`record 1001/${C0 + 1}: missing (created by PLog offset 2)`,
			`record 1001/${C0 + 2}: created by corrupted event 3, not rolled back`,
			"acknowledged command 1001/2: new record 1 -> 322685000131073 is not readable as created by it",
			"acknowledged command 1001/3: its event (PLog offset 3) is not in the logs",
		]);
	});

	it("finds an update reverted to an older state, and a record no event created", async () => {
		const storage = createMemTTLStorage();
		const cp = createCommandProcessor({ storage, appId, partitions: 4 });
		const p = cp.deploy(1);
		await p.ready();
		await p.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "a" } });
		const k = cpKeys.record(appId, 1001, C0);
		const before = (await storage.get(k.pKey, k.cCols)) as Uint8Array;
		await p.updateRecord({ wsid: 1001, table: "app1pkg.Customer", id: C0, fields: { vip: true } });
		await cp.close();
		expect((await check(storage, [])).problems).toEqual([]);
		// A late write of the record's state before the update (what a deposed holder could do).
		await storage.put(k.pKey, k.cCols, before);
		// A record in the workspace's bucket that no event created.
		const orphan = cpKeys.record(appId, 1001, C0 + 7);
		await storage.put(orphan.pKey, orphan.cCols, before);
		expect((await check(storage, [])).problems).toEqual([
			`record 1001/${C0}: holds the state written by PLog offset 1, the last event that wrote it is 2`,
			`record 1001/${C0 + 7}: no event created it (an orphan)`,
		]);
	});

	it("finds a value that is not an event, unless allowed", async () => {
		const { storage, acked } = await fixture();
		const k = cpKeys.plog(appId, 1, 4);
		await storage.put(k.pKey, k.cCols, new Uint8Array([1]));
		expect((await check(storage, acked)).problems).toEqual([
			"PLog 1/4: not an event of this partition",
		]);
		const allowed = await checkCpStorage({
			storage,
			appId,
			partitions: 4,
			acknowledged: acked,
			allowCorruptedOffsets: true,
		});
		expect([allowed.ok, allowed.corruptedOffsets]).toEqual([true, 1]);
	});
});
