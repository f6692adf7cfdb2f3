import { describe, expect, it } from "vitest";
import type { AppDefinition } from "../src/index.ts";
import {
	defineApp,
	demoApp,
	FIRST_CRECORD_ID,
	FIRST_OWRECORD_ID,
	SEQ_CRECORD_ID,
	SEQ_OWRECORD_ID,
	SEQ_WLOG_OFFSET,
} from "../src/index.ts";

const base: AppDefinition = {
	workspaceKinds: { "p.A": 1, "p.B": 2 },
	wsKindOf: (wsid) => (wsid % 2 === 0 ? "p.A" : "p.B"),
	tables: {
		"p.Doc": { kind: "CDoc", fields: { n: { type: "int" } } },
		"p.Rec": { kind: "WRecord", fields: {} },
		"p.Odoc": { kind: "ODoc", fields: {} },
	},
	sequences: { "p.Only": { id: 20, initial: 5, workspaceKinds: ["p.B"] } },
};

describe("defineApp", () => {
	it("gives every workspace kind the built-in sequences with seed 004's initial values, plus its own", () => {
		const app = defineApp(base);
		expect([...(app.seqTypes.get(1) ?? [])]).toEqual([
			[SEQ_WLOG_OFFSET, 1],
			[SEQ_CRECORD_ID, FIRST_CRECORD_ID],
			[SEQ_OWRECORD_ID, FIRST_OWRECORD_ID],
		]);
		expect(app.seqTypes.get(2)?.get(20)).toBe(5);
		expect([FIRST_CRECORD_ID, FIRST_OWRECORD_ID]).toEqual([
			64537 * 5e9 + 131072,
			64536 * 5e9 + 131072,
		]);
		expect(app.wsKindOf(4)).toBe(1);
		expect(app.wsKindOf(5)).toBe(2);
	});

	it("assigns ID sequences by table kind, and sys.ParentID to records", () => {
		const app = defineApp(base);
		expect(app.table("p.Doc")?.idSeq).toBe(SEQ_CRECORD_ID);
		expect(app.table("p.Rec")?.idSeq).toBe(SEQ_OWRECORD_ID);
		expect(app.table("p.Rec")?.fields.get("sys.ParentID")).toMatchObject({
			type: "ref",
			required: true,
		});
		expect(app.table("p.Odoc")?.immutable).toBe(true);
		expect(demoApp.commands.has("sys.CUD")).toBe(true);
		expect([...demoApp.tables.keys()]).toEqual([
			"app1pkg.Customer",
			"app1pkg.Address",
			"app1pkg.Note",
			"app1pkg.Invoice",
			"app1pkg.InvoiceLine",
		]);
	});

	it("rejects mistakes, naming the path", () => {
		const bad: Array<[Partial<AppDefinition>, RegExp]> = [
			[{ workspaceKinds: {} }, /workspaceKinds: declare at least one/],
			[{ workspaceKinds: { A: 1 } }, /workspaceKinds\["A"\]: kind names are qualified/],
			[{ workspaceKinds: { "p.A": 70000 } }, /0\.\.65535/],
			[{ workspaceKinds: { "p.A": 1, "p.B": 1 } }, /duplicate ID 1/],
			[
				{ tables: { Doc: { kind: "CDoc", fields: {} } } },
				/tables\["Doc"\]: table names are qualified/,
			],
			[{ tables: { "p.D": { kind: "XDoc" as never, fields: {} } } }, /kind must be one of/],
			[
				{ tables: { "p.D": { kind: "CDoc", fields: { "sys.X": { type: "int" } } } } },
				/fields\.sys\.X: field names/,
			],
			[
				{ tables: { "p.D": { kind: "CDoc", fields: { a: { type: "date" as never } } } } },
				/fields\.a: type must be/,
			],
			[
				{ tables: { "p.D": { kind: "CDoc", fields: { a: { type: "string", maxLength: 0 } } } } },
				/maxLength/,
			],
			[{ sequences: { "p.S": { id: 3, initial: 1 } } }, /16\.\.65535/],
			[{ sequences: { "p.S": { id: 16, initial: 0 } } }, /initial must be/],
			[
				{ sequences: { "p.S": { id: 16, initial: 1 }, "p.T": { id: 16, initial: 1 } } },
				/duplicate sequence id 16/,
			],
			[
				{ sequences: { "p.S": { id: 16, initial: 1, workspaceKinds: ["p.Z"] } } },
				/unknown workspace kind "p.Z"/,
			],
			[{ commands: { "sys.CUD": { execute: () => ({}) } } }, /commands\["sys.CUD"\]/],
			[{ commands: { "p.C": {} as never } }, /execute must be a function/],
		];
		for (const [patch, message] of bad)
			expect(() => defineApp({ ...base, ...patch })).toThrow(message);
		expect(() => defineApp({ ...base, wsKindOf: undefined as never })).toThrow(TypeError);
		expect(() => defineApp({ ...base, wsKindOf: () => "p.Z" }).wsKindOf(1)).toThrow(
			/unknown kind "p.Z"/,
		);
	});
});
