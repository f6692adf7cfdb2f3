import type { App } from "./app-def.ts";
import { defineApp } from "./app-def.ts";

/**
 * The demo application the host serves by default (README: "The demo app"). One workspace kind
 * `app1pkg.Workspace` (ID 1) for every WSID; tables `app1pkg.Customer` (CDoc), `app1pkg.Address`
 * (CRecord), `app1pkg.Note` (WDoc), `app1pkg.Invoice` (ODoc) and `app1pkg.InvoiceLine`
 * (ORecord); the sequence `app1pkg.InvoiceNumber` (ID 16, from 1000); and the command
 * `app1pkg.MakeInvoice` `{ customer, amount }`, which creates an invoice numbered from that
 * sequence and answers `{ number }`.
 *
 * @example
 * ```ts
 * const cp = createCommandProcessor({ storage, app: demoApp, appId: 1, partitions: 10 });
 * ```
 */
export const demoApp: App = defineApp({
	workspaceKinds: { "app1pkg.Workspace": 1 },
	wsKindOf: () => "app1pkg.Workspace",
	tables: {
		"app1pkg.Customer": {
			kind: "CDoc",
			fields: {
				name: { type: "string", required: true, maxLength: 200 },
				email: { type: "string", maxLength: 200 },
				vip: { type: "bool" },
			},
		},
		"app1pkg.Address": {
			kind: "CRecord",
			fields: { city: { type: "string", required: true, maxLength: 200 } },
		},
		"app1pkg.Note": {
			kind: "WDoc",
			fields: {
				text: { type: "string", required: true, maxLength: 4000 },
				customer: { type: "ref" },
			},
		},
		"app1pkg.Invoice": {
			kind: "ODoc",
			fields: {
				number: { type: "int", required: true },
				customer: { type: "ref", required: true },
				amount: { type: "number", required: true },
			},
		},
		"app1pkg.InvoiceLine": {
			kind: "ORecord",
			fields: { item: { type: "string", required: true }, qty: { type: "int", required: true } },
		},
	},
	sequences: { "app1pkg.InvoiceNumber": { id: 16, initial: 1000 } },
	commands: {
		"app1pkg.MakeInvoice": {
			args: {
				customer: { type: "ref", required: true },
				amount: { type: "number", required: true },
			},
			execute: async (ctx) => {
				const number = await ctx.next("app1pkg.InvoiceNumber");
				return {
					cuds: [
						{
							fields: {
								"sys.ID": 1,
								"sys.QName": "app1pkg.Invoice",
								number,
								customer: ctx.args.customer,
								amount: ctx.args.amount,
							},
						},
					],
					result: { number },
				};
			},
		},
	},
});
