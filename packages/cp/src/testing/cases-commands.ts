import { faults } from "@vvm/ttlstorage/testing";
import { expect } from "vitest";
import type { AppPartition } from "../app-partition.ts";
import { PKEY_PREFIX_PLOG } from "../keys.ts";
import type { CommandResult } from "../request.ts";
import type { CaseContext, CpSuiteCase } from "./case.ts";
import { created, crec, owrec, rejection, WS } from "./case.ts";
import { Harness, isSequencerWrite, prefixOf, waitFor } from "./harness.ts";

async function apiShapes(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p = await h.deploy(1);
		const ada = (await h.create(p, WS, "Ada")).NewIDs["1"] as number;
		expect(
			await p.updateRecord({
				wsid: WS,
				table: "app1pkg.Customer",
				id: ada,
				fields: { vip: true, email: "a@x" },
			}),
		).toEqual({
			CurrentWLogOffset: 2,
			NewIDs: {},
			plogOffset: 2,
		});
		expect(await p.readRecord({ wsid: WS, table: "app1pkg.Customer", id: ada })).toEqual({
			"sys.ID": ada,
			"sys.QName": "app1pkg.Customer",
			name: "Ada",
			vip: true,
			email: "a@x",
		});
		await p.updateRecord({ wsid: WS, table: "app1pkg.Customer", id: ada, fields: { email: null } });
		expect(await p.readRecord({ wsid: WS, id: ada })).toEqual({
			"sys.ID": ada,
			"sys.QName": "app1pkg.Customer",
			name: "Ada",
			vip: true,
		});
		// voedger c.sys.CUD: raw IDs become real ones; references to raw IDs are substituted.
		const cud = await p.executeCommand({
			wsid: WS,
			command: "sys.CUD",
			cuds: [
				{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "Bob" } },
				{
					fields: { "sys.ID": 2, "sys.QName": "app1pkg.Address", "sys.ParentID": 1, city: "Oslo" },
				},
				{ fields: { "sys.ID": 3, "sys.QName": "app1pkg.Note", text: "new", customer: 1 } },
				{ "sys.ID": ada, fields: { name: "Ada L." } },
			],
		});
		expect(cud).toEqual({
			CurrentWLogOffset: 4,
			NewIDs: { "1": crec(1), "2": crec(2), "3": owrec(0) },
			plogOffset: 4,
		});
		expect(await p.readRecord({ wsid: WS, id: crec(2) })).toEqual({
			"sys.ID": crec(2),
			"sys.QName": "app1pkg.Address",
			"sys.ParentID": crec(1),
			city: "Oslo",
		});
		expect((await p.readRecord({ wsid: WS, id: owrec(0) })).customer).toBe(crec(1));
		expect((await p.readRecord({ wsid: WS, id: ada })).name).toBe("Ada L.");
		expect((await rejection(p.readRecord({ wsid: WS, table: "app1pkg.Note", id: ada }))).code).toBe(
			"CP_NOT_FOUND",
		);
		expect((await rejection(p.readRecord({ wsid: WS, id: crec(99) }))).code).toBe("CP_NOT_FOUND");
		// The WLog and the PLog, from an offset with a limit.
		const wlog = await p.readWLog({ wsid: WS, from: 2, limit: 2 });
		expect(wlog.map((e) => [e.offset, e.event?.plogOffset, e.event?.command])).toEqual([
			[2, 2, "sys.CUD"],
			[3, 3, "sys.CUD"],
		]);
		const last = (await p.readWLog({ wsid: WS, from: 4 }))[0]?.event;
		expect(last?.cuds).toEqual([
			{ "sys.ID": crec(1), "sys.QName": "app1pkg.Customer", isNew: true, fields: { name: "Bob" } },
			{
				"sys.ID": crec(2),
				"sys.QName": "app1pkg.Address",
				isNew: true,
				fields: { "sys.ParentID": crec(1), city: "Oslo" },
			},
			{
				"sys.ID": owrec(0),
				"sys.QName": "app1pkg.Note",
				isNew: true,
				fields: { text: "new", customer: crec(1) },
			},
			{
				"sys.ID": ada,
				"sys.QName": "app1pkg.Customer",
				isNew: false,
				fields: { name: "Ada L.", vip: true },
			},
		]);
		expect(await p.readWLog({ wsid: WS, from: 5 })).toEqual([]);
		const plog = await p.readPLog({ from: 1, limit: 10 });
		expect(plog.map((e) => [e.offset, e.event?.wsid, e.event?.wlogOffset])).toEqual([
			[1, WS, 1],
			[2, WS, 2],
			[3, WS, 3],
			[4, WS, 4],
		]);
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

async function badInput(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p = await h.deploy(1);
		const writesBefore = h.writes();
		const cases: Array<[string, () => Promise<unknown>, string, string]> = [
			[
				"wsid 0",
				() => p.createRecord({ wsid: 0, table: "app1pkg.Customer", fields: { name: "x" } }),
				"CP_BAD_REQUEST",
				"wsid",
			],
			[
				"another partition's wsid",
				() => p.createRecord({ wsid: 1002, table: "app1pkg.Customer", fields: { name: "x" } }),
				"CP_WRONG_PARTITION",
				"wsid",
			],
			[
				"unknown table",
				() => p.createRecord({ wsid: WS, table: "app1pkg.Nope", fields: {} }),
				"CP_NOT_FOUND",
				"table",
			],
			[
				"ODoc through the docs API",
				() => p.createRecord({ wsid: WS, table: "app1pkg.Invoice", fields: {} }),
				"CP_NOT_ALLOWED",
				"table",
			],
			[
				"missing required field",
				() => p.createRecord({ wsid: WS, table: "app1pkg.Customer", fields: {} }),
				"CP_BAD_REQUEST",
				"fields.name",
			],
			[
				"wrong type",
				() => p.createRecord({ wsid: WS, table: "app1pkg.Customer", fields: { name: 42 } }),
				"CP_BAD_REQUEST",
				"fields.name",
			],
			[
				"unknown field",
				() =>
					p.createRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						fields: { name: "x", color: "red" },
					}),
				"CP_BAD_REQUEST",
				"fields.color",
			],
			[
				"too long",
				() =>
					p.createRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						fields: { name: "x".repeat(201) },
					}),
				"CP_BAD_REQUEST",
				"fields.name",
			],
			[
				"raw ID out of range",
				() =>
					p.createRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						fields: { "sys.ID": 70000, name: "x" },
					}),
				"CP_BAD_REQUEST",
				"fields.sys.ID",
			],
			[
				"record without parent",
				() => p.createRecord({ wsid: WS, table: "app1pkg.Address", fields: { city: "x" } }),
				"CP_BAD_REQUEST",
				"fields.sys.ParentID",
			],
			[
				"raw parent in a single create",
				() =>
					p.createRecord({
						wsid: WS,
						table: "app1pkg.Address",
						fields: { "sys.ParentID": 5, city: "x" },
					}),
				"CP_BAD_REQUEST",
				"fields.sys.ParentID",
			],
			[
				"update: raw id",
				() => p.updateRecord({ wsid: WS, table: "app1pkg.Customer", id: 5, fields: { name: "x" } }),
				"CP_BAD_REQUEST",
				"id",
			],
			[
				"update: nothing",
				() => p.updateRecord({ wsid: WS, table: "app1pkg.Customer", id: crec(0), fields: {} }),
				"CP_BAD_REQUEST",
				"fields",
			],
			[
				"update: clear required",
				() =>
					p.updateRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						id: crec(0),
						fields: { name: null },
					}),
				"CP_BAD_REQUEST",
				"fields.name",
			],
			[
				"update: sys field",
				() =>
					p.updateRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						id: crec(0),
						fields: { "sys.QName": "x" },
					}),
				"CP_BAD_REQUEST",
				"fields.sys.QName",
			],
			[
				"update: missing record",
				() =>
					p.updateRecord({
						wsid: WS,
						table: "app1pkg.Customer",
						id: crec(0),
						fields: { name: "x" },
					}),
				"CP_NOT_FOUND",
				"id",
			],
			[
				"CUD: no cuds",
				() => p.executeCommand({ wsid: WS, command: "sys.CUD", cuds: [] }),
				"CP_BAD_REQUEST",
				"cuds",
			],
			[
				"CUD: no raw ID",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: [{ fields: { "sys.QName": "app1pkg.Customer", name: "x" } }],
					}),
				"CP_BAD_REQUEST",
				"cuds[0].fields.sys.ID",
			],
			[
				"CUD: unknown raw reference",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: [
							{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "x" } },
							{
								fields: {
									"sys.ID": 2,
									"sys.QName": "app1pkg.Address",
									"sys.ParentID": 3,
									city: "y",
								},
							},
						],
					}),
				"CP_BAD_REQUEST",
				"cuds[1].fields.sys.ParentID",
			],
			[
				"CUD: raw ID twice",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: [
							{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "x" } },
							{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Customer", name: "y" } },
						],
					}),
				"CP_BAD_REQUEST",
				"cuds[1].fields.sys.ID",
			],
			[
				"CUD: ODoc",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: [{ fields: { "sys.ID": 1, "sys.QName": "app1pkg.Invoice" } }],
					}),
				"CP_NOT_ALLOWED",
				"cuds[0].fields.sys.QName",
			],
			[
				"CUD: update of a missing record",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: [{ "sys.ID": crec(5), fields: { name: "x" } }],
					}),
				"CP_NOT_FOUND",
				"cuds[0].sys.ID",
			],
			[
				"unknown command",
				() => p.executeCommand({ wsid: WS, command: "app1pkg.Nope" }),
				"CP_NOT_FOUND",
				"command",
			],
			[
				"missing argument",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "app1pkg.MakeInvoice",
						args: { customer: crec(0) },
					}),
				"CP_BAD_REQUEST",
				"args.amount",
			],
			[
				"unknown argument",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "app1pkg.MakeInvoice",
						args: { customer: crec(0), amount: 1, x: 1 },
					}),
				"CP_BAD_REQUEST",
				"args.x",
			],
			[
				"too large an event",
				() =>
					p.executeCommand({
						wsid: WS,
						command: "sys.CUD",
						cuds: Array.from({ length: 20 }, (_, i) => ({
							fields: { "sys.ID": i + 1, "sys.QName": "app1pkg.Note", text: "n".repeat(4000) },
						})),
					}),
				"CP_BAD_REQUEST",
				"cuds",
			],
		];
		for (const [what, call, code, field] of cases) {
			const e = await rejection(call());
			expect([what, e.code, e.field]).toEqual([what, code, field]);
			expect(e.message).toContain(field);
		}
		// Nothing was written, no number taken.
		expect(h.writes()).toBe(writesBefore);
		expect(p.stats().nextPLogOffset).toBe(1);
		expect(p.stats().rejected).toBe(cases.length);
		expect(await h.create(p, WS, "ok")).toEqual(created(1, crec(0), 1));
		// An ODoc, once created by a command, is immutable.
		const inv = await p.executeCommand({
			wsid: WS,
			command: "app1pkg.MakeInvoice",
			args: { customer: crec(0), amount: 2 },
		});
		const e = await rejection(
			p.executeCommand({
				wsid: WS,
				command: "sys.CUD",
				cuds: [{ "sys.ID": inv.NewIDs["1"] as number, fields: { amount: 3 } }],
			}),
		);
		expect([e.code, e.field]).toEqual(["CP_NOT_ALLOWED", "cuds[0].fields"]);
		expect(p.stats().nextPLogOffset).toBe(3);
	} finally {
		await h.close();
	}
}

async function busyWhileActualizing(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0, extra: { retryAfterMs: 250 } });
	try {
		let release!: () => void;
		const gate = new Promise<void>((resolve) => {
			release = resolve;
		});
		h.faults.inject({
			on: "read",
			match: (c) => prefixOf(c.args[0]) === PKEY_PREFIX_PLOG,
			action: faults.hook(() => gate),
			times: 1,
		});
		const p = h.cp.deploy(1);
		await waitFor(() => h.faults.count("read") === 1, "the actualization to read the PLog");
		const aborted = new AbortController();
		const waiting = p.ready(aborted.signal);
		aborted.abort(new Error("gave up"));
		await expect(waiting).rejects.toThrow("gave up");
		const writes = h.writes();
		const e = await rejection(h.create(p, WS, "early"));
		expect([e.code, e.retryAfterMs]).toEqual(["CP_BUSY", 250]);
		expect(e.message).toContain("server is busy");
		expect(h.writes()).toBe(writes);
		expect(p.stats().busy).toBe(1);
		release();
		await p.ready();
		expect(await h.create(p, WS, "later")).toEqual(created(1, crec(0), 1));
	} finally {
		await h.close();
	}
}

async function busyOnFlushBacklog(ctx: CaseContext): Promise<void> {
	// Not coalesced, so a failing sequencer write never shares a batch with a command's write.
	const h = new Harness({
		ctx,
		trustLevel: 2,
		extra: { coalesceWrites: false, sequencer: { maxNumUnflushedValues: 2 } },
	});
	try {
		const p = await h.deploy(1);
		const stop = h.stallFlusher();
		await h.create(p, 1001, "a");
		await h.create(p, 1005, "b"); // 4 unflushed values > 2
		const callsBefore = h.faults.calls.length;
		const e = await rejection(h.create(p, 1009, "c"));
		expect(e.code).toBe("CP_BUSY");
		expect(e.retryAfterMs).toBe(1000);
		// Nothing was written but the sequencer's own retries, which are counted and logged.
		expect(h.faults.calls.slice(callsBefore).every(isSequencerWrite)).toBe(true);
		expect(p.stats().sequencerStorageErrors).toBeGreaterThan(0);
		expect(
			h.logs.some((l) => l.level === "warn" && l.operation === "writeValuesAndNextPLogOffset"),
		).toBe(true);
		stop();
		await h.flushed(p);
		expect(await h.create(p, 1009, "c")).toEqual(created(1, crec(0), 3));
	} finally {
		await h.close();
	}
}

async function serialization(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const [p1, p2] = [await h.deploy(1), await h.deploy(2)];
		// Random latency on every write, so commands would interleave if nothing serialized them.
		h.faults.inject({
			on: ["insertIfNotExists", "put", "putBatch", "putBatchIf"],
			action: faults.hook(
				() => new Promise((resolve) => setTimeout(resolve, Math.floor(Math.random() * 4))),
			),
		});
		const run = (p: AppPartition, wsids: number[], n: number): Array<Promise<CommandResult>> =>
			Array.from({ length: n }, (_, i) => h.create(p, wsids[i % wsids.length] as number, `c${i}`));
		const results = await Promise.all([
			...run(p1, [1001, 1005, 1009], 30),
			...run(p2, [1002, 1006], 10),
		]);
		expect(results).toHaveLength(40);
		// One transaction at a time per partition; the two partitions overlapped.
		expect(h.spy.maxActivePerPartition).toBe(1);
		expect(h.spy.maxActive).toBe(2);
		expect(
			results
				.slice(0, 30)
				.map((r) => r.plogOffset)
				.sort((a, b) => a - b),
		).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
		expect((await p1.readPLog({ limit: 100 })).map((e) => e.offset)).toEqual(
			Array.from({ length: 30 }, (_, i) => i + 1),
		);
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

/** @internal Commands, validation, busy, serialization. */
export function commandCases(): CpSuiteCase[] {
	return [
		{
			name: "records and commands in the API v2 shape: create, update, read, c.sys.CUD raw IDs, WLog and PLog reads",
			run: apiShapes,
		},
		{
			name: "bad input fails naming the field, before anything is written or any number is taken",
			run: badInput,
		},
		{
			name: "server is busy while actualizing: CP_BUSY with retryAfterMs, nothing written, no number taken",
			run: busyWhileActualizing,
		},
		{
			name: "server is busy while the flush backlog is over maxNumUnflushedValues",
			run: busyOnFlushBacklog,
		},
		{
			name: "the sequencer of a partition is never used concurrently; partitions run concurrently",
			run: serialization,
		},
	];
}
