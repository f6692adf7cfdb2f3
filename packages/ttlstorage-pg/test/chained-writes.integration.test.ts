// Chained writes on a real PostgreSQL, as @vvm/cp's pipelined numbering issues them: each write a
// putBatchIf conditioned on the key the previous call writes, all issued before any answered. A
// statement evaluates its conditions on the rows as they were, so a later call of a key either
// rides in the earlier one's statement as a link (it only requires what the earlier one writes:
// that item is not sent, and it writes only if the earlier one did, else it goes again) or goes
// in a later statement, after the earlier one committed, and sees its row; that holds also when
// the earlier one is sent again (a scope's first fenced write creates the fence row and goes
// again). Writes of other keys are not held up by the chain.
import type { Bytes, ConditionalBatchItem, WriteFence } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { PgPool, PgQueryConfig, PgTTLStorage } from "../src/index.ts";
import { createPgTTLStorage } from "../src/index.ts";
import { pgStatements } from "../src/statements.ts";
import { readArray } from "./binary-array.ts";
import { holdingPool } from "./held-pool.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";
import { wrappedPool } from "./wrapped-pool.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_chain", skip);
let n = 0;
const unique = (what: string): Bytes => utf8(`${what}/${process.pid}/${Date.now()}/${++n}`);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);
const isGroup = (config: PgQueryConfig): boolean =>
	config.text.startsWith("WITH i AS MATERIALIZED");

// Where each write statement takes the items' keys (`c`): the groups of puts have fewer arrays.
const statements = pgStatements("s", "t", false);
const keysAt = (config: PgQueryConfig): number =>
	(config.name?.startsWith("vvm_ttl_puts_") === true
		? statements.puts
		: statements.group
	).params.indexOf("c");

/** A pool that records every group statement sent: the keys (`c` of each item) it carried. */
function recordingPool(inner: PgPool) {
	const groups: string[][] = [];
	const pool = wrappedPool(inner, (config, run) => {
		if (isGroup(config))
			groups.push(
				(config.values === undefined
					? []
					: (readArray(config.values[keysAt(config)]) as Buffer[])
				).map((b) => text(b) ?? ""),
			);
		return run();
	});
	return { pool, groups };
}

/**
 * The i-th write of a chain over `pKey`: inserts `e<i>` and, from the second on, requires the
 * previous entry to hold its bytes (rewriting them), as a pipelined PLog write requires its
 * predecessor's event.
 */
function link(pKey: Bytes, i: number, fence?: WriteFence): ConditionalBatchItem[] {
	const entry = (j: number) => ({ pKey, cCols: utf8(`e${j}`), value: utf8(`event ${j}`) });
	const items: ConditionalBatchItem[] = [{ ...entry(i), expected: null }];
	if (i > 0) items.push({ ...entry(i - 1), expected: utf8(`event ${i - 1}`) });
	return fence === undefined ? items : items.map((it) => ({ ...it, fence }));
}

/**
 * Makes `call` while the storage's only statement (`writesInFlight: 1`) is held at the pool, so
 * that its writes queue together; then lets the held one finish. Resolves to `call`'s promises.
 */
async function behindBusyStatement<T>(
	held: ReturnType<typeof holdingPool>,
	storage: PgTTLStorage,
	call: () => T,
): Promise<T> {
	const gate = held.arm(/^WITH i AS MATERIALIZED/);
	const busy = storage.put(unique("p"), utf8("x"), utf8("v"));
	await gate.reached;
	const calls = call();
	gate.release();
	await busy;
	return calls;
}

/** The index of the first group statement that carried key `c`. */
const groupOf = (groups: string[][], c: string): number => groups.findIndex((g) => g.includes(c));

describe.skipIf(skip)(`ttlstorage-pg chained writes${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("a write conditioned on a key an earlier call writes rides in its statement (the link not sent) or goes after it, and sees its row; other keys share the statements", async () => {
		const { pool, schema } = fixture();
		const recorded = recordingPool(pool);
		const storage = createPgTTLStorage({ pool: recorded.pool, schema });
		try {
			const pKey = unique("plog");
			const other = unique("other");
			// 8 links and, between them, 8 writes of other keys, all called before any answer.
			const calls: Array<Promise<boolean>> = [];
			const others: Array<Promise<boolean>> = [];
			for (let i = 0; i < 8; i++) {
				calls.push(storage.putBatchIf(link(pKey, i)));
				others.push(storage.insertIfNotExists(other, utf8(`o${i}`), utf8("v"), 0));
			}
			expect(await Promise.all(calls)).toEqual(Array(8).fill(true));
			expect(await Promise.all(others)).toEqual(Array(8).fill(true));
			for (let i = 0; i < 8; i++)
				expect(text(await storage.get(pKey, utf8(`e${i}`)))).toBe(`event ${i}`);
			// Each link in its predecessor's statement or a later one; no statement names a key
			// twice (a link riding with its predecessor is not sent); some links rode together.
			const g = recorded.groups;
			for (let i = 1; i < 8; i++)
				expect(groupOf(g, `e${i}`)).toBeGreaterThanOrEqual(groupOf(g, `e${i - 1}`));
			for (const x of g) expect(new Set(x).size).toBe(x.length);
			const withLinks = g.filter((x) => x.some((c) => c.startsWith("e")));
			expect(withLinks.length).toBeLessThan(8);
			// The other writes went together (not a statement each), and never in a link's
			// statement, where they would have waited for the link's predecessor.
			const withOthers = g.filter((x) => x.some((c) => c.startsWith("o")));
			expect(withOthers.length).toBeLessThanOrEqual(2);
			for (const x of withOthers) expect(x.some((c) => c.startsWith("e"))).toBe(false);
		} finally {
			await storage.close();
		}
	});

	it("a scope's first fenced write goes again before a later call conditioned on it, which then sees it", async () => {
		const { pool, schema } = fixture();
		const recorded = recordingPool(pool);
		const storage = createPgTTLStorage({ pool: recorded.pool, schema });
		try {
			const pKey = unique("plog");
			// A scope never raised: its first write creates the fence row and is sent again. The
			// link after it was queued meanwhile; it must not overtake the resent one.
			const fence = { scope: unique("scope"), epoch: 0n };
			const calls = [0, 1, 2].map((i) => storage.putBatchIf(link(pKey, i, fence)));
			expect(await Promise.all(calls)).toEqual([true, true, true]);
			expect(text(await storage.get(pKey, utf8("e2")))).toBe("event 2");
			// Link 0 sent, found no fence row, sent again (the fence row is its own statement, not a
			// group) ahead of links 1 and 2, which were queued meanwhile, 2 riding with 1 (its
			// requirement of e1 not sent).
			expect(recorded.groups).toEqual([["e0"], ["e0"], ["e1", "e0", "e2"]]);
		} finally {
			await storage.close();
		}
	});

	it("a link whose predecessor in its statement did not write goes again, and is answered on the stored row", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const recorded = recordingPool(held.pool);
		const storage = createPgTTLStorage({ pool: recorded.pool, schema, writesInFlight: 1 });
		try {
			// e0 already holds what link 1 requires, and so the insert of link 0 fails. Link 1
			// rode with it: it must not be answered false for that, but checked again on its own.
			const pKey = unique("plog");
			await storage.put(pKey, utf8("e0"), utf8("event 0"));
			// The only statement busy: links 0 and 1 queue behind it, 1 linked to 0.
			const calls = await behindBusyStatement(held, storage, () =>
				[0, 1].map((i) => storage.putBatchIf(link(pKey, i))),
			);
			expect(await Promise.all(calls)).toEqual([false, true]);
			expect(text(await storage.get(pKey, utf8("e1")))).toBe("event 1");
			// Together (e0 once: link 1's requirement not sent), then link 1 again on its own.
			expect(recorded.groups.slice(-2)).toEqual([
				["e0", "e1"],
				["e1", "e0"],
			]);
		} finally {
			await storage.close();
		}
	});

	it("a link whose predecessor in its statement did not write writes nothing when the stored row differs", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const storage = createPgTTLStorage({ pool: held.pool, schema, writesInFlight: 1 });
		try {
			const pKey = unique("plog");
			await storage.put(pKey, utf8("e0"), utf8("another event"));
			const calls = await behindBusyStatement(held, storage, () =>
				[0, 1, 2].map((i) => storage.putBatchIf(link(pKey, i))),
			);
			expect(await Promise.all(calls)).toEqual([false, false, false]);
			expect(await storage.get(pKey, utf8("e1"))).toBeUndefined();
			expect(await storage.get(pKey, utf8("e2"))).toBeUndefined();
			expect(text(await storage.get(pKey, utf8("e0")))).toBe("another event");
		} finally {
			await storage.close();
		}
	});

	it("a group with a link refused as a whole goes one by one, the link behind its predecessor when that goes again", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		// The first group statement of two requests or more is refused (something in one request,
		// TTLSTORAGE_FAILED): its requests then go one by one.
		let refuse = true;
		const refusing = wrappedPool(held.pool, (config, run) => {
			const requests = new Set(
				isGroup(config) && config.values !== undefined ? readArray(config.values[0]) : [],
			);
			if (!refuse || requests.size < 2) return run();
			refuse = false;
			return Promise.reject(
				Object.assign(new Error("invalid parameter value"), { code: "22023", severity: "ERROR" }),
			);
		});
		const storage = createPgTTLStorage({ pool: refusing, schema, writesInFlight: 1 });
		try {
			// Links 0 and 1 on a scope never raised, 1 riding with 0. Alone, link 0 finds no fence
			// row and goes again; link 1 must go again behind it, not be decided first (it would
			// find e0 absent: [true, false]).
			const pKey = unique("plog");
			const fence = { scope: unique("scope"), epoch: 0n };
			const calls = await behindBusyStatement(held, storage, () =>
				[0, 1].map((i) => storage.putBatchIf(link(pKey, i, fence))),
			);
			expect(await Promise.all(calls)).toEqual([true, true]);
			expect(refuse).toBe(false);
			expect(text(await storage.get(pKey, utf8("e1")))).toBe("event 1");
		} finally {
			await storage.close();
		}
	});

	it("writes of other keys are not held up behind a chain whose link is in flight", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const storage = createPgTTLStorage({ pool: held.pool, schema, writesInFlight: 2 });
		try {
			const pKey = unique("plog");
			const other = unique("other");
			// Both statements busy: link 0 of a chain and an unrelated write, each held on its way.
			let gate = held.arm(/^WITH i AS MATERIALIZED/);
			const first = storage.putBatchIf(link(pKey, 0));
			await gate.reached;
			const linkGate = gate;
			gate = held.arm(/^WITH i AS MATERIALIZED/);
			const unrelated = storage.put(other, utf8("u"), utf8("v"));
			await gate.reached;
			// Links 1 and 2 wait for link 0; writes of other keys arrive between them.
			const links = [storage.putBatchIf(link(pKey, 1)), storage.putBatchIf(link(pKey, 2))];
			const others = [0, 1].map((i) =>
				storage.insertIfNotExists(other, utf8(`o${i}`), utf8("v"), 0),
			);
			let linksSettled = false;
			void Promise.allSettled(links).then(() => {
				linksSettled = true;
			});
			// A statement frees up: the other writes go in it and answer while link 0 is still held.
			gate.release();
			await unrelated;
			expect(await Promise.all(others)).toEqual([true, true]);
			expect(linksSettled).toBe(false);
			linkGate.release();
			expect([await first, ...(await Promise.all(links))]).toEqual([true, true, true]);
		} finally {
			await storage.close();
		}
	});
});
