import { createSequencer } from "@vvm/isequencer";
import { createSeqStorage } from "@vvm/seqstorage";
import { withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import {
	CpError,
	createCommandProcessor,
	createPLogReader,
	defineApp,
	demoApp,
	SEQ_CRECORD_ID,
	SEQ_WLOG_OFFSET,
} from "../src/index.ts";
import { cpKeys, PKEY_PREFIX_PLOG, u64 } from "../src/keys.ts";
import { rejection } from "../src/testing/case.ts";
import { Harness } from "../src/testing/harness.ts";

const C0 = 322_685_000_131_072;

describe("createCommandProcessor", () => {
	it("rejects bad options before doing anything", () => {
		const storage = createMemTTLStorage();
		const bad: Array<[Record<string, unknown>, RegExp]> = [
			[{ storage: {} }, /options.storage must be a TTLStorage/],
			[{ appId: -1 }, /appId/],
			[{ partitions: 0 }, /partitions/],
			[{ trustLevel: 3 }, /trustLevel/],
			[{ retryAfterMs: -5 }, /retryAfterMs/],
			[{ maxQueuedCommands: 0 }, /maxQueuedCommands/],
			[
				{ storage: createMemTTLStorage({ fencing: "ordered" }), atomicBatches: true },
				/atomicBatches: a storage with "ordered" fencing/,
			],
			[
				{ storage: createMemTTLStorage({ fencing: "ordered" }), conditionalBatches: true },
				/conditionalBatches: the storage has no putBatchIf/,
			],
		];
		for (const [patch, message] of bad)
			expect(() =>
				createCommandProcessor({ storage, appId: 1, partitions: 4, ...patch } as never),
			).toThrow(message);
		const cp = createCommandProcessor({ storage, appId: 1, partitions: 4 });
		expect(cp.trustLevel).toBe(0);
		expect(cp.app).toBe(demoApp);
		expect(() => cp.deploy(4)).toThrow(RangeError);
		cp.deploy(1);
		expect(() => cp.deploy(1)).toThrow(/already deployed/);
		return cp.close();
	});

	it("undeploy: queued commands fail with CP_CLOSED, later calls too; stats sum the partitions", async () => {
		const storage = createMemTTLStorage();
		const cp = createCommandProcessor({ storage, appId: 1, partitions: 4 });
		const p1 = cp.deploy(1);
		const p2 = cp.deploy(2);
		await Promise.all([p1.ready(), p2.ready()]);
		await p1.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "a" } });
		await p2.createRecord({ wsid: 1002, table: "app1pkg.Customer", fields: { name: "b" } });
		expect(cp.stats().totals).toMatchObject({ commands: 2, failed: 0, actualizing: 0, queued: 0 });
		const queued = Array.from({ length: 5 }, (_, i) =>
			p1.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: `q${i}` } }),
		);
		const closing = cp.undeploy(1);
		const outcomes = await Promise.allSettled(queued);
		await closing;
		expect(
			outcomes.every(
				(o) => o.status === "rejected" && CpError.is(o.reason) && o.reason.code === "CP_CLOSED",
			),
		).toBe(true);
		expect(
			(
				await rejection(
					p1.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "x" } }),
				)
			).code,
		).toBe("CP_CLOSED");
		expect((await rejection(p1.ready())).code).toBe("CP_CLOSED");
		expect(cp.partition(1)).toBeUndefined();
		expect(cp.stats().partitions.map((s) => s.partitionId)).toEqual([2]);
		// Redeployed, it continues where the PLog ends.
		const again = cp.deploy(1);
		await again.ready();
		expect(
			(await again.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "c" } }))
				.plogOffset,
		).toBe(2);
		await cp.close();
		expect(() => cp.deploy(3)).toThrow(/closed/);
	});

	it("closed: aborts on close with CP_CLOSED, once; a listener that closes again gets the same close", async () => {
		const storage = createMemTTLStorage();
		const cp = createCommandProcessor({ storage, appId: 1, partitions: 2 });
		const p = cp.deploy(1);
		await p.ready();
		expect(p.closed.aborted).toBe(false);
		let inner: Promise<void> | undefined;
		let calls = 0;
		p.closed.addEventListener("abort", () => {
			calls++;
			inner = p.close(); // what an undeploy in a listener does
		});
		const outer = p.close();
		expect(calls).toBe(1);
		expect(inner).toBe(outer);
		expect(p.close()).toBe(outer);
		await outer;
		expect(CpError.is(p.closed.reason) && p.closed.reason.code).toBe("CP_CLOSED");
		expect(cp.partition(1)).toBeUndefined();
		await cp.close();
	});

	it("an application command that throws, or produces bad CUDs, writes nothing and gives its numbers back", async () => {
		const app = defineApp({
			workspaceKinds: { "p.W": 1 },
			wsKindOf: (wsid) => (wsid === 1005 ? "p.Nope" : "p.W"),
			tables: { "p.Doc": { kind: "CDoc", fields: { n: { type: "int", required: true } } } },
			sequences: { "p.Seq": { id: 16, initial: 10 } },
			commands: {
				"p.Throw": {
					execute: async (ctx) => {
						await ctx.next("p.Seq");
						throw new Error("boom");
					},
				},
				"p.Bad": {
					execute: async (ctx) => ({
						cuds: [{ fields: { "sys.ID": 1, "sys.QName": "p.Doc", n: "x" } }],
						result: { s: await ctx.next("p.Seq") },
					}),
				},
				"p.Unknown": { execute: async (ctx) => ({ result: { s: await ctx.next("p.Nope") } }) },
				"p.Ok": {
					execute: async (ctx) => {
						const n = await ctx.next("p.Seq");
						return { cuds: [{ fields: { "sys.ID": 1, "sys.QName": "p.Doc", n } }], result: { n } };
					},
				},
			},
		});
		const h = new Harness({
			ctx: { storage: createMemTTLStorage(), options: {} },
			trustLevel: 0,
			extra: { app },
		});
		try {
			const p = await h.deploy(1);
			const writes = h.writes();
			const thrown = await rejection(p.executeCommand({ wsid: 1001, command: "p.Throw" }));
			expect([thrown.code, thrown.committed]).toEqual(["CP_INTERNAL", "no"]);
			await p.ready();
			const bad = await rejection(p.executeCommand({ wsid: 1001, command: "p.Bad" }));
			expect([bad.code, bad.field]).toEqual(["CP_BAD_REQUEST", "result.cuds[0].fields.n"]);
			await p.ready();
			expect((await rejection(p.executeCommand({ wsid: 1001, command: "p.Unknown" }))).code).toBe(
				"CP_INTERNAL",
			);
			await p.ready();
			expect((await rejection(p.executeCommand({ wsid: 1005, command: "p.Ok" }))).field).toBe(
				"wsid",
			);
			expect(h.writes()).toBe(writes);
			expect(await p.executeCommand({ wsid: 1001, command: "p.Ok" })).toEqual({
				CurrentWLogOffset: 1,
				NewIDs: { "1": C0 },
				Result: { n: 10 },
				plogOffset: 1,
			});
			expect(h.logs.filter((l) => l.event === "command-error").map((l) => l.message)).toEqual([
				"command failed: boom",
			]);
		} finally {
			await h.close();
		}
	});

	it("restart across a PLog bucket boundary reads one range per bucket, from the stored offset", async () => {
		const h = new Harness({
			ctx: { storage: createMemTTLStorage(), options: {} },
			trustLevel: 2,
			extra: { coalesceWrites: false },
		});
		try {
			let p = await h.deploy(1);
			for (let i = 0; i < 4090; i++)
				await p.createRecord({
					wsid: 1001 + 4 * (i % 50),
					table: "app1pkg.Customer",
					fields: { name: `n${i}` },
				});
			await h.flushed(p);
			h.stallFlusher();
			for (let i = 0; i < 10; i++) await h.create(p, 1001, `tail${i}`);
			await h.crash();
			p = await h.deploy(1);
			const reads = h.faults.calls.filter(
				(c) => c.operation === "read" && (c.args[0] as Uint8Array)[3] === PKEY_PREFIX_PLOG,
			);
			expect(reads.map((c) => (c.args[1] as { from: Uint8Array }).from)).toEqual([
				u64(4091),
				u64(4096),
			]);
			expect(p.stats().actualizedEvents).toBe(10);
			expect((await h.create(p, 1001, "next")).plogOffset).toBe(4101);
			expect((await p.readPLog({ from: 4094, limit: 3 })).map((e) => e.offset)).toEqual([
				4094, 4095, 4096,
			]);
			expect((await h.check()).problems).toEqual([]);
		} finally {
			await h.close();
		}
	});
});

describe("write modes", () => {
	it("level 2 writes the PLog entry, then the effects; with atomicBatches both in one batch", async () => {
		for (const atomicBatches of [false, true]) {
			const storage = withFaults(createMemTTLStorage());
			const cp = createCommandProcessor({
				storage,
				appId: 1,
				partitions: 4,
				trustLevel: 2,
				atomicBatches,
			});
			const p = cp.deploy(1);
			await p.ready();
			await p.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "a" } });
			const prefixes = storage.calls
				.filter((c) => c.operation === "putBatch")
				.map((c) => (c.args[0] as Array<{ pKey: Uint8Array }>).map((i) => i.pKey[3]));
			// PLog 5, records 7, WLog 6 (the sequencer's writes, 3 and 2, may follow).
			if (atomicBatches) expect(prefixes[0]).toEqual([5, 7, 6]);
			else {
				// The PLog entry alone, then the record (fenced) and the WLog entry (plain), in one or
				// two batches.
				expect(prefixes[0]).toEqual([5]);
				const effects = prefixes.slice(1).flat();
				expect(effects.filter((x) => x === 6 || x === 7).sort()).toEqual([6, 7]);
			}
			await cp.close();
		}
	});
});

describe("conditional batches (levels 0 and 1)", () => {
	const prefixesOf = (items: unknown): number[] =>
		(items as Array<{ pKey: Uint8Array }>).map((i) => i.pKey[3] as number);

	it("write the event and its effects with one putBatchIf: inserts, the update's swap from the value read, puts", async () => {
		for (const trustLevel of [0, 1] as const) {
			const storage = withFaults(createMemTTLStorage());
			const cp = createCommandProcessor({ storage, appId: 1, partitions: 4, trustLevel });
			const p = cp.deploy(1);
			await p.ready();
			const a = await p.createRecord({
				wsid: 1001,
				table: "app1pkg.Customer",
				fields: { name: "a" },
			});
			const id = a.NewIDs["1"] as number;
			await p.updateRecord({ wsid: 1001, table: "app1pkg.Customer", id, fields: { vip: true } });
			const batches = storage.calls.filter((c) => c.operation === "putBatchIf");
			// PLog 5, the record 7, WLog 6: one call per command, no single conditional write.
			expect(batches.map((c) => prefixesOf(c.args[0]))).toEqual([
				[5, 7, 6],
				[5, 7, 6],
			]);
			expect(storage.calls.filter((c) => c.operation === "insertIfNotExists")).toEqual([]);
			const [create, update] = batches.map(
				(c) => c.args[0] as Array<{ expected?: Uint8Array | null }>,
			);
			expect(create?.map((i) => i.expected === null)).toEqual([true, trustLevel === 0, true]);
			// Level 0 swaps the record from the bytes the command read; level 1 puts it.
			expect(update?.[1]?.expected instanceof Uint8Array).toBe(trustLevel === 0);
			expect((await p.readRecord({ wsid: 1001, id })).vip).toBe(true);
			await cp.close();
		}
	});

	it("fall back to the single writes when a condition fails: the conflict is found, nothing of the batch written", async () => {
		const storage = withFaults(createMemTTLStorage());
		const h = new Harness({ ctx: { storage, options: {} }, trustLevel: 0 });
		try {
			const p = await h.deploy(1);
			await h.create(p, 1001, "a");
			// Someone wrote the next record ID behind the partition's back.
			const taken = cpKeys.record(h.appId, 1001, C0 + 1);
			await storage.put(taken.pKey, taken.cCols, new Uint8Array([1, 2, 3]));
			const e = await rejection(h.create(p, 1001, "b"));
			expect([e.code, e.committed]).toEqual(["CP_CONFLICT", "no"]);
			expect(await storage.get(taken.pKey, taken.cCols)).toEqual(new Uint8Array([1, 2, 3]));
			expect(h.faults.calls.some((c) => c.operation === "insertIfNotExists")).toBe(true);
			expect((await h.check({ allowCorruptedOffsets: true })).problems).toEqual([]);
		} finally {
			await h.close();
		}
	});
});

describe("createPLogReader", () => {
	it("is the PLogReader of @vvm/seqstorage: a standalone sequencer actualizes from it", async () => {
		const storage = createMemTTLStorage();
		const cp = createCommandProcessor({ storage, appId: 3, partitions: 1, coalesceWrites: false });
		const p = cp.deploy(0);
		await p.ready();
		for (const name of ["a", "b"])
			await p.createRecord({ wsid: 7, table: "app1pkg.Customer", fields: { name } });
		await cp.close();
		const plog = createPLogReader({ storage, appId: 3, partitionId: 0 });
		const events = [];
		for await (const e of plog.read(1, new AbortController().signal)) events.push(e);
		expect(events).toEqual([
			{
				offset: 1,
				values: [
					{ wsid: 7, seqId: SEQ_WLOG_OFFSET, value: 1 },
					{ wsid: 7, seqId: SEQ_CRECORD_ID, value: C0 },
				],
			},
			{
				offset: 2,
				values: [
					{ wsid: 7, seqId: SEQ_WLOG_OFFSET, value: 2 },
					{ wsid: 7, seqId: SEQ_CRECORD_ID, value: C0 + 1 },
				],
			},
		]);
		// A fresh numbers keyspace (another appId) actualized from this PLog alone.
		const seq = createSequencer(
			{ seqTypes: demoApp.seqTypes },
			createSeqStorage({ storage: createMemTTLStorage(), appId: 3, partitionId: 0, plog }),
		);
		try {
			while (seq.sequencer.stats().actualizing) await new Promise((r) => setImmediate(r));
			expect(seq.sequencer.start(1, 7)).toBe(3);
			expect(await seq.sequencer.next(SEQ_WLOG_OFFSET)).toBe(3);
			expect(await seq.sequencer.next(SEQ_CRECORD_ID)).toBe(C0 + 2);
		} finally {
			await seq.cleanup();
		}
	});
});
