// Commands of workspaces whose numbers are not in memory (the first after a restart) have them read
// while they wait in the partition's queue, not one after another inside it: with every storage
// read held, four commands of four cold workspaces have four reads in flight at once; each still
// gets numbers after the ones stored (a restart continues, never reuses).
import type { Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";

const CUSTOMER = "app1pkg.Customer";
const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

function processor(storage: TTLStorage): CommandProcessor {
	const cp = createCommandProcessor({ storage, appId: 1, partitions: 1, trustLevel: 0 });
	processors.push(cp);
	return cp;
}

/** A storage whose reads (range reads and gets) wait at a gate while it is closed. */
function gatedReads(inner: TTLStorage) {
	let reading = 0;
	let most = 0;
	let gate: Promise<void> | undefined;
	let open = (): void => {};
	const held = async <T>(fn: () => Promise<T>): Promise<T> => {
		reading++;
		most = Math.max(most, reading);
		try {
			if (gate !== undefined) await gate;
			return await fn();
		} finally {
			reading--;
		}
	};
	const get = (p: Bytes, c: Bytes) => held(() => inner.get(p, c));
	const read = (p: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> => ({
		async *[Symbol.asyncIterator]() {
			const rows = await held(async () => {
				const all: StoredRecord[] = [];
				for await (const r of inner.read(p, range)) all.push(r);
				return all;
			});
			yield* rows;
		},
	});
	// Every other member is the inner storage's own (bound: its methods use private fields).
	const storage = new Proxy(inner, {
		get(target, key) {
			if (key === "get") return get;
			if (key === "read") return read;
			const value = Reflect.get(target, key, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
	return {
		storage,
		close() {
			most = reading;
			gate = new Promise((r) => {
				open = r;
			});
		},
		open: () => {
			gate = undefined;
			open();
		},
		get most() {
			return most;
		},
		get reading() {
			return reading;
		},
	};
}

describe("cp reads cold workspaces ahead", () => {
	it("four commands of four cold workspaces: their reads are in flight at once, and numbers continue", async () => {
		const base = createMemTTLStorage();
		const first = processor(base).deploy(0);
		await first.ready();
		const before = new Map<number, number>();
		for (const wsid of [1001, 1002, 1003, 1004]) {
			const r = await first.createRecord({ wsid, table: CUSTOMER, fields: { name: "Ada" } });
			before.set(wsid, r.CurrentWLogOffset);
		}
		await processors.splice(0)[0]?.close();
		// A restart: no workspace's numbers are in memory.
		const g = gatedReads(base);
		const p = processor(g.storage).deploy(0);
		await p.ready();
		g.close();
		const creates = [1001, 1002, 1003, 1004].map((wsid) =>
			p.createRecord({ wsid, table: CUSTOMER, fields: { name: "Bob" } }),
		);
		for (let i = 0; i < 200 && g.reading < 4; i++) await new Promise((r) => setImmediate(r));
		const most = g.most;
		g.open();
		const results = await Promise.all(creates);
		expect(most).toBe(4);
		for (const [i, wsid] of [1001, 1002, 1003, 1004].entries())
			expect(results[i]?.CurrentWLogOffset).toBe((before.get(wsid) as number) + 1);
	});
});
