import { bytesEqual } from "@vvm/ttlstorage";
import type { FaultAction } from "@vvm/ttlstorage/testing";
import { faults } from "@vvm/ttlstorage/testing";
import { expect } from "vitest";
import { decodeLogValue } from "../event.ts";
import type { SequencesTrustLevel } from "../event-writer.ts";
import { cpKeys, PKEY_PREFIX_PLOG, PKEY_PREFIX_RECORDS, PKEY_PREFIX_WLOG, u64 } from "../keys.ts";
import type { CaseContext, CpSuiteCase } from "./case.ts";
import { created, crec, GARBAGE, rejection, WS } from "./case.ts";
import type { CrashCall } from "./crashable-storage.ts";
import { Harness, prefixOf, storedNextOffset, touches, waitFor } from "./harness.ts";

const WRITES = [
	"insertIfNotExists",
	"put",
	"putBatch",
	"putBatchIf",
	"compareAndSwap",
	"compareAndDelete",
] as const;
const isWrite = (c: CrashCall): boolean => (WRITES as readonly string[]).includes(c.operation);

async function restartFromTail(ctx: CaseContext): Promise<void> {
	// Not coalesced: the sequencer's failing writes must not share batches with commands' writes.
	const h = new Harness({ ctx, trustLevel: 0, extra: { coalesceWrites: false } });
	try {
		let p = await h.deploy(1);
		const wsids = [1001, 1005, 1009];
		for (let i = 0; i < 30; i++) await h.create(p, wsids[i % 3] as number, `c${i}`);
		await h.flushed(p);
		expect(await storedNextOffset(h.base, h.appId, 1)).toBe(31);
		// The flusher falls behind: from now on its writes fail (it keeps retrying).
		h.stallFlusher();
		const a = (await h.create(p, WS, "A")).NewIDs["1"] as number;
		await p.updateRecord({ wsid: WS, table: "app1pkg.Customer", id: a, fields: { vip: true } });
		for (let i = 0; i < 3; i++) await h.create(p, 1005, `t${i}`);
		const invoice = await p.executeCommand({
			wsid: WS,
			command: "app1pkg.MakeInvoice",
			args: { customer: a, amount: 5 },
		});
		expect(invoice.plogOffset).toBe(36);
		expect(await storedNextOffset(h.base, h.appId, 1)).toBe(31);
		await h.crash();
		p = await h.deploy(1);
		// Actualization read the PLog once, from the stored offset: the 6 events of the tail only.
		const plogReads = h.faults.calls.filter(
			(c) => c.operation === "read" && prefixOf(c.args[0]) === PKEY_PREFIX_PLOG,
		);
		expect(plogReads).toHaveLength(1);
		expect((plogReads[0]?.args[1] as { from?: Uint8Array } | undefined)?.from).toEqual(u64(31));
		const s = p.stats();
		expect([s.actualizations, s.actualizedEvents, s.reappliedEvents, s.conflicts]).toEqual([
			1, 6, 6, 0,
		]);
		// Re-applying is idempotent: no conflict, and the later update of A was not undone.
		expect((await p.readRecord({ wsid: WS, id: a })).vip).toBe(true);
		// Every sequence continues after the tail.
		expect(await h.create(p, WS, "next")).toEqual(created(14, crec(11), 37));
		const again = await p.executeCommand({
			wsid: WS,
			command: "app1pkg.MakeInvoice",
			args: { customer: a, amount: 6 },
		});
		expect(again.Result).toEqual({ number: 1001 });
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

async function corruptedOffsets(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 2 });
	try {
		let p = await h.deploy(1);
		await h.create(p, WS, "a");
		await h.create(p, WS, "b");
		await h.flushed(p);
		// Offset 3: a valid event of another offset (a stray copy); offset 4: bytes of nobody.
		const k1 = cpKeys.plog(h.appId, 1, 1);
		const copy = (await h.base.get(k1.pKey, k1.cCols)) as Uint8Array;
		const k3 = cpKeys.plog(h.appId, 1, 3);
		const k4 = cpKeys.plog(h.appId, 1, 4);
		await h.base.put(k3.pKey, k3.cCols, copy);
		await h.base.put(k4.pKey, k4.cCols, GARBAGE);
		await h.crash();
		p = await h.deploy(1);
		expect(p.stats().corruptedOffsets).toBe(2);
		expect(h.logs.filter((l) => l.event === "corrupted-offset").map((l) => l.plogOffset)).toEqual([
			3, 4,
		]);
		// Consumed: the next event goes to offset 5; the WLog and record IDs were not consumed.
		expect(await h.create(p, WS, "c")).toEqual(created(3, crec(2), 5));
		expect((await p.readPLog({ from: 3 })).map((e) => [e.offset, e.event === undefined])).toEqual([
			[3, true],
			[4, true],
			[5, false],
		]);
		const report = await h.check({ allowCorruptedOffsets: true });
		expect([report.problems, report.corruptedOffsets]).toEqual([[], 2]);
	} finally {
		await h.close();
	}
}

async function strayAfterGap(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		let p = await h.deploy(1);
		await h.create(p, WS, "a");
		await h.flushed(p);
		// A stray copy of event 1 at offset 3, with offset 2 missing (as a write landing late could leave).
		const k1 = cpKeys.plog(h.appId, 1, 1);
		const k3 = cpKeys.plog(h.appId, 1, 3);
		await h.base.put(k3.pKey, k3.cCols, (await h.base.get(k1.pKey, k1.cCols)) as Uint8Array);
		expect((await h.check()).problems).toEqual([
			"PLog 1: offset 3 is stored after the end 1 (a gap)",
		]);
		await h.crash();
		p = await h.deploy(1);
		// The PLog ends at the gap: nothing beyond it is actualized or read.
		expect(p.stats().actualizedEvents).toBe(0);
		expect((await p.readPLog({ from: 1 })).map((e) => e.offset)).toEqual([1]);
		expect(await h.create(p, WS, "b")).toEqual(created(2, crec(1), 2));
		// Offset 3 holds the stray: level 0 detects it and the partition moves on.
		expect((await rejection(h.create(p, WS, "c"))).code).toBe("CP_CONFLICT");
		await p.ready();
		expect(await h.create(p, WS, "c")).toEqual(created(3, crec(2), 4));
		const report = await h.check({ allowCorruptedOffsets: true });
		expect([report.problems, report.corruptedOffsets]).toEqual([[], 1]);
	} finally {
		await h.close();
	}
}

type Target = "plog" | "record" | "wlog";
const PREFIX: Record<Target, number> = {
	plog: PKEY_PREFIX_PLOG,
	record: PKEY_PREFIX_RECORDS,
	wlog: PKEY_PREFIX_WLOG,
};

/** A storage fault on the write of one key of the next command, and what must follow. */
async function faultCase(
	ctx: CaseContext,
	level: SequencesTrustLevel,
	target: Target,
	action: FaultAction,
	expectedApart: {
		committed?: "no" | "yes" | "unknown";
		succeeds?: boolean;
		/** Answered `committed`, and applied before the next command all the same. */
		appliedAfter?: boolean;
	},
): Promise<void> {
	// With atomicBatches at level 2 the effects share the PLog entry's batch: a fault on that batch
	// is a fault of the PLog write (a failure wrote nothing; a landed write landed whole).
	const atomic = ctx.options.atomicBatches ?? ctx.storage.supports?.atomicBatches === true;
	// Likewise at levels 0 and 1 with conditional batches (at level 2 when pipelined): one
	// putBatchIf writes them all.
	const conditional =
		(level !== 2 || (ctx.options.pipelineDepth ?? 1) > 1) &&
		(ctx.options.conditionalBatches ?? typeof ctx.storage.putBatchIf === "function");
	const together = ((level === 2 && atomic) || conditional) && target !== "plog";
	const expected = !together
		? expectedApart
		: action.kind === "fail"
			? { committed: "no" as const }
			: action.kind === "unknown-outcome" && action.applied
				? { succeeds: true }
				: { committed: "unknown" as const };
	const h = new Harness({ ctx, trustLevel: level });
	try {
		const p = await h.deploy(1);
		await h.create(p, WS, "a");
		// Level 2's PLog write without atomic batches is a put, sent as a batch only when the
		// processor coalesces writes (off over a storage that commits in groups itself).
		const coalesced = ctx.options.coalesceWrites ?? ctx.storage.supports?.groupCommit !== true;
		const op = conditional
			? "putBatchIf"
			: level === 2 && target === "plog" && !atomic && !coalesced
				? "put"
				: level === 2 || (level === 1 && target === "record")
					? "putBatch"
					: "insertIfNotExists";
		h.faults.inject({ on: op, match: (c) => touches(c, PREFIX[target]), action, times: 1 });
		if (expected.succeeds) {
			expect(await h.create(p, WS, "b")).toEqual(created(2, crec(1), 2));
		} else {
			const e = await rejection(h.create(p, WS, "b"));
			expect([e.code, e.committed]).toEqual(["CP_STORAGE", expected.committed]);
		}
		await p.ready();
		const durable =
			expected.succeeds === true ||
			expected.committed === "yes" ||
			("appliedAfter" in expected && expected.appliedAfter === true);
		if (durable) {
			// The event is applied (by the command or by recovery) before the next command.
			expect((await p.readRecord({ wsid: WS, id: crec(1) })).name).toBe("b");
			expect((await p.readWLog({ wsid: WS, from: 2 }))[0]?.event?.plogOffset).toBe(2);
		} else {
			expect((await p.readPLog({ from: 2 })).length).toBe(0);
			expect((await rejection(p.readRecord({ wsid: WS, id: crec(1) }))).code).toBe("CP_NOT_FOUND");
		}
		expect(p.stats().conflicts).toBe(0);
		const next = await h.create(p, WS, "c");
		expect(next).toEqual(durable ? created(3, crec(2), 3) : created(2, crec(1), 2));
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

/** Counts the writes of one command and its flush, to crash at each of them. */
async function writesPerCommand(ctx: CaseContext, level: SequencesTrustLevel): Promise<number> {
	const h = new Harness({ ctx, trustLevel: level });
	try {
		const p = await h.deploy(1);
		await h.create(p, WS, "a");
		await h.flushed(p);
		const before = h.process.calls.filter(isWrite).length;
		await h.create(p, WS, "b");
		await h.flushed(p);
		return h.process.calls.filter(isWrite).length - before;
	} finally {
		await h.close();
	}
}

async function crashAtEveryWrite(ctx: CaseContext, level: SequencesTrustLevel): Promise<void> {
	const writes = await writesPerCommand(ctx, level);
	// At least the event's write(s) and the flush: 2 when each is one batch (conditional or atomic
	// batches, and a flush in one batch over a storage with atomic batches).
	expect(writes).toBeGreaterThanOrEqual(2);
	for (let k = 1; k <= writes; k++)
		for (const landed of [false, true]) {
			const h = new Harness({ ctx, trustLevel: level });
			try {
				let p = await h.deploy(1);
				await h.create(p, WS, "a");
				await h.flushed(p);
				let n = 0;
				h.process.crashOn((c) => isWrite(c) && ++n === k, { landed });
				const outcome = await h.create(p, WS, "victim").then(
					() => "acknowledged",
					(e: unknown) => e,
				);
				await waitFor(() => h.process.crashed, `the crash at write ${k}`);
				await h.crash();
				p = await h.deploy(1);
				const after = await h.create(p, WS, "after");
				const victimDurable = (await p.readPLog({ from: 2 })).some(
					(e) => e.event?.cuds[0]?.fields.name === "victim",
				);
				// Acknowledged means durable; durable means applied (the checker reads every record).
				if (outcome === "acknowledged") expect(victimDurable).toBe(true);
				expect(after.plogOffset).toBe(victimDurable ? 3 : 2);
				expect(after.CurrentWLogOffset).toBe(victimDurable ? 3 : 2);
				const report = await h.check();
				expect([`write ${k} landed ${landed}`, report.problems]).toEqual([
					`write ${k} landed ${landed}`,
					[],
				]);
			} finally {
				await h.close();
			}
		}
}

async function crashWhileMarking(ctx: CaseContext): Promise<void> {
	for (const landed of [false, true]) {
		const h = new Harness({ ctx, trustLevel: 0 });
		try {
			let p = await h.deploy(1);
			await h.create(p, WS, "a");
			const rk = cpKeys.record(h.appId, WS, crec(1));
			await h.base.put(rk.pKey, rk.cCols, GARBAGE);
			// The conflict makes the command mark its event corrupted: crash on that put.
			h.process.crashOn(
				(c) => c.operation === "put" && prefixOf(c.keys[0]?.pKey) === PKEY_PREFIX_PLOG,
				{ landed },
			);
			expect((await rejection(h.create(p, WS, "b"))).code).toBe("CP_CONFLICT");
			await h.crash();
			p = await h.deploy(1);
			// Recovery found the unmarked event (or the marker) and finished the marking.
			const pk = cpKeys.plog(h.appId, 1, 2);
			const wk = cpKeys.wlog(h.appId, WS, 2);
			const plog = await h.base.get(pk.pKey, pk.cCols);
			const wlog = await h.base.get(wk.pKey, wk.cCols);
			expect(plog === undefined ? undefined : decodeLogValue(plog)?.kind).toBe("marker");
			expect(wlog !== undefined && plog !== undefined && bytesEqual(wlog, plog)).toBe(true);
			expect(await h.base.get(rk.pKey, rk.cCols)).toEqual(GARBAGE);
			expect(await h.create(p, WS, "c")).toEqual(created(3, crec(2), 3));
			expect((await h.check()).problems).toEqual([]);
		} finally {
			await h.close();
		}
	}
}

/** @internal Restart, actualization from the durable PLog, and every crash point. */
export function recoveryCases(): CpSuiteCase[] {
	const cases: CpSuiteCase[] = [
		{
			name: "restart actualizes from the stored offset, reading and re-applying only the PLog tail (the flusher's lag), idempotently",
			run: restartFromTail,
		},
		{
			name: "values that are not events at PLog offsets are consumed as corrupted and do not wedge the partition",
			run: corruptedOffsets,
		},
		{
			name: "a crash while marking an event corrupted: recovery finishes the marking",
			run: crashWhileMarking,
		},
		{
			name: "the PLog ends at its first gap: a stray event after it is not actualized, and is detected when reached",
			run: strayAfterGap,
		},
	];
	for (const level of [0, 2] as const) {
		const L = `level ${level}`;
		cases.push(
			{
				name: `${L}: the PLog write fails (unavailable): nothing committed, the numbers are taken again`,
				run: (ctx) => faultCase(ctx, level, "plog", faults.fail(), { committed: "no" }),
			},
			{
				name: `${L}: the PLog write's outcome is unknown but it landed: read back, the command succeeds`,
				run: (ctx) =>
					faultCase(ctx, level, "plog", faults.unknownOutcome(true), { succeeds: true }),
			},
			{
				// The request may still land late: its offset is not given to another command. The
				// partition writes the event again at its offset before the next command, so the
				// "unknown" command turns out committed (its retry with the key replays).
				name: `${L}: the PLog write's outcome is unknown and it did not land: committed unknown, then written again before the next command (its offset is never taken again)`,
				run: (ctx) =>
					faultCase(ctx, level, "plog", faults.unknownOutcome(false), {
						committed: "unknown",
						appliedAfter: true,
					}),
			},
			{
				name: `${L}: the record write fails after the PLog write: recovery applies the event before the next command`,
				run: (ctx) => faultCase(ctx, level, "record", faults.fail(), { committed: "yes" }),
			},
			{
				name: `${L}: the WLog write lands but its outcome is unknown: recovery re-applies it, identical bytes are no conflict`,
				run: (ctx) =>
					faultCase(ctx, level, "wlog", faults.unknownOutcome(true), { committed: "yes" }),
			},
			{
				name: `${L}: a crash at every write of a command and its flush, before and after it lands, loses and duplicates nothing`,
				run: (ctx) => crashAtEveryWrite(ctx, level),
			},
		);
	}
	return cases;
}
