import { bytesEqual } from "@vvm/ttlstorage";
import { expect } from "vitest";
import { decodeLogValue, decodeRecordValue } from "../event.ts";
import type { SequencesTrustLevel } from "../event-writer.ts";
import type { StorageKey } from "../keys.ts";
import { cpKeys } from "../keys.ts";
import type { CaseContext, CpSuiteCase } from "./case.ts";
import {
	created,
	crec,
	GARBAGE,
	owrec,
	rejection,
	WS,
	WS_OTHER_PARTITION,
	WS_SAME_PARTITION,
} from "./case.ts";
import { Harness } from "./harness.ts";

async function builtInSequences(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p1 = await h.deploy(1);
		// CDoc: CRecord IDs from 322685000131072; WLog and PLog offsets from 1.
		const customer = await h.create(p1, WS, "Ada");
		expect(customer).toEqual(created(1, crec(0), 1));
		// WDoc: OWRecord IDs from 322680000131072.
		const note = await p1.createRecord({ wsid: WS, table: "app1pkg.Note", fields: { text: "hi" } });
		expect(note).toEqual(created(2, owrec(0), 2));
		// CRecord continues the CRecord sequence.
		const address = await p1.executeCommand({
			wsid: WS,
			command: "sys.CUD",
			cuds: [
				{
					fields: {
						"sys.ID": 7,
						"sys.QName": "app1pkg.Address",
						"sys.ParentID": crec(0),
						city: "Paris",
					},
				},
			],
		});
		expect(address).toEqual({ CurrentWLogOffset: 3, NewIDs: { "7": crec(1) }, plogOffset: 3 });
		// An application sequence from its initial value (1000); the ODoc continues OWRecord IDs.
		const invoice1 = await p1.executeCommand({
			wsid: WS,
			command: "app1pkg.MakeInvoice",
			args: { customer: crec(0), amount: 10 },
		});
		expect(invoice1).toEqual({
			CurrentWLogOffset: 4,
			NewIDs: { "1": owrec(1) },
			Result: { number: 1000 },
			plogOffset: 4,
		});
		const invoice2 = await p1.executeCommand({
			wsid: WS,
			command: "app1pkg.MakeInvoice",
			args: { customer: crec(0), amount: 11 },
		});
		expect(invoice2.Result).toEqual({ number: 1001 });
		// Per workspace: another workspace of the same partition starts again; the PLog goes on.
		const other = await h.create(p1, WS_SAME_PARTITION, "Bob");
		expect(other).toEqual(created(1, crec(0), 6));
		const otherInvoice = await p1.executeCommand({
			wsid: WS_SAME_PARTITION,
			command: "app1pkg.MakeInvoice",
			args: { customer: crec(0), amount: 1 },
		});
		expect(otherInvoice.Result).toEqual({ number: 1000 });
		// Per partition: another partition's PLog starts at 1.
		const p2 = await h.deploy(2);
		expect(await h.create(p2, WS_OTHER_PARTITION, "Eve")).toEqual(created(1, crec(0), 1));
		// The values survive a restart (from the stored numbers and the PLog tail).
		await h.crash();
		const again = await h.deploy(1);
		expect(await h.create(again, WS, "Zoe")).toEqual(created(6, crec(2), 8));
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

type Target = "record" | "PLog" | "WLog";

/**
 * Seed 004 "Integration tests for SequencesTrustLevel mode": create a record, corrupt the key the
 * next record (or its PLog event, or its WLog event) will use with `[1]`, create one more, and
 * assert what the level detects and what it overwrites.
 */
async function trustLevelCase(
	ctx: CaseContext,
	level: SequencesTrustLevel,
	target: Target,
): Promise<void> {
	const h = new Harness({ ctx, trustLevel: level });
	try {
		const p = await h.deploy(1);
		const first = await h.create(p, WS, "first");
		expect(first).toEqual(created(1, crec(0), 1));
		// The next command would take record ID crec(1), PLog offset 2, WLog offset 2.
		const keys: Record<Target, StorageKey> = {
			record: cpKeys.record(h.appId, WS, crec(1)),
			PLog: cpKeys.plog(h.appId, 1, 2),
			WLog: cpKeys.wlog(h.appId, WS, 2),
		};
		const corrupted = keys[target];
		await h.base.put(corrupted.pKey, corrupted.cCols, GARBAGE);
		const get = (k: StorageKey): Promise<Uint8Array | undefined> => h.base.get(k.pKey, k.cCols);
		const detects = level === 0 || (level === 1 && target !== "record");
		if (!detects) {
			// Trusted: the command succeeds and overwrites the corrupted key.
			const second = await h.create(p, WS, "second");
			expect(second).toEqual(created(2, crec(1), 2));
			const now = await get(corrupted);
			expect(now !== undefined && !bytesEqual(now, GARBAGE)).toBe(true);
			expect((await p.readRecord({ wsid: WS, id: crec(1) })).name).toBe("second");
			expect(p.stats().conflicts).toBe(0);
			expect((await h.check()).problems).toEqual([]);
			return;
		}
		// Detected: the command fails naming the key, and nothing is overwritten.
		const error = await rejection(h.create(p, WS, "second"));
		expect(error.code).toBe("CP_CONFLICT");
		expect(error.key?.kind).toBe(
			target === "record" ? "record" : target === "PLog" ? "plog" : "wlog",
		);
		expect(error.message).toContain(
			target === "record"
				? `record wsid ${WS} id ${crec(1)}`
				: target === "PLog"
					? "PLog partition 1 offset 2"
					: `WLog wsid ${WS} offset 2`,
		);
		expect(await get(corrupted)).toEqual(GARBAGE);
		// The partition re-actualizes, then serves the next command.
		await p.ready();
		const plog2 = await get(keys.PLog);
		const record1 = await get(keys.record);
		const wlog2 = await get(keys.WLog);
		let next: ReturnType<typeof created>;
		if (target === "PLog") {
			// Nothing was written; the garbage at offset 2 is consumed as corrupted; the numbers the
			// failed command took are taken again.
			expect(record1).toBeUndefined();
			expect(wlog2).toBeUndefined();
			expect(p.stats().corruptedOffsets).toBe(1);
			expect(h.logs.some((l) => l.event === "corrupted-offset" && l.plogOffset === 2)).toBe(true);
			next = created(2, crec(1), 3);
		} else {
			// The event is in the PLog, marked corrupted; its numbers stay consumed.
			const marker = plog2 === undefined ? undefined : decodeLogValue(plog2);
			expect(marker?.kind).toBe("marker");
			expect(marker?.event.cuds[0]?.id).toBe(crec(1));
			if (target === "record") {
				// Its WLog entry is the marker too.
				expect(wlog2 === undefined ? undefined : decodeLogValue(wlog2)?.kind).toBe("marker");
			} else {
				// Its record was rolled back: a tombstone (an ordered write, as fences need), which
				// reads as not found.
				const stored = record1 === undefined ? undefined : decodeRecordValue(record1);
				expect(stored?.d).toBe(1);
				expect((await rejection(p.readRecord({ wsid: WS, id: crec(1) }))).code).toBe(
					"CP_NOT_FOUND",
				);
			}
			const [entry] = await p.readPLog({ from: 2, limit: 1 });
			expect(entry?.event?.corrupted).toContain("sequences violation");
			next = created(3, crec(2), 3);
		}
		expect(await h.create(p, WS, "third")).toEqual(next);
		expect((await p.readRecord({ wsid: WS, id: next.NewIDs["1"] as number })).name).toBe("third");
		expect(await get(corrupted)).toEqual(GARBAGE);
		const report = await h.check({ allowCorruptedOffsets: target === "PLog" });
		// The planted WLog value is the one thing the checker must flag.
		expect(report.problems).toEqual(target === "WLog" ? [`WLog ${WS}/2: not an event`] : []);
		if (target === "record")
			expect((await rejection(p.readRecord({ wsid: WS, id: crec(1) }))).code).toBe("CP_INTERNAL");
	} finally {
		await h.close();
	}
}

/** @internal The seed's `it.BuiltInSequences` and `it.SequencesTrustLevel0/1/2`. */
export function sequenceCases(): CpSuiteCase[] {
	const cases: CpSuiteCase[] = [{ name: "BuiltInSequences", run: builtInSequences }];
	for (const level of [0, 1, 2] as const)
		for (const target of ["record", "PLog", "WLog"] as const) {
			const detects = level === 0 || (level === 1 && target !== "record");
			cases.push({
				name: `SequencesTrustLevel${level}: corrupted next ${target} key is ${detects ? "detected, not overwritten" : "overwritten"}`,
				run: (ctx) => trustLevelCase(ctx, level, target),
			});
		}
	return cases;
}
