// Grouped reads on a real PostgreSQL: `get`s and pages of `read` that arrive while `readsInFlight`
// statements are reading go together, the gets with the pages of one kind (a cold workspace's
// log probe and page of numbers), and each caller gets exactly what a statement of its own would
// have answered (its rows, its bounds, its page); a failed statement fails the reads in it and no
// other.
import type { Bytes, StoredRecord } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it, vi } from "vitest";
import type { PgPool, PgQueryConfig } from "../src/index.ts";
import { createPgTTLStorage } from "../src/index.ts";
import { holdingPool } from "./held-pool.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";
import { wrappedPool } from "./wrapped-pool.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_reads", skip);
let n = 0;
const unique = (what: string): Bytes => utf8(`${what}/${process.pid}/${Date.now()}/${++n}`);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);
const code = (e: unknown) => (TTLStorageError.is(e) ? e.code : String(e));

/** The kind of a statement from its prepared name (`vvm_ttl_<kind>_<hash>`). */
const kindOf = (config: PgQueryConfig): string =>
	(config.name ?? "").replace(/^vvm_ttl_/, "").replace(/_[0-9a-f]{12}$/, "");

/** A pool that records the kind of every statement, and may fail those of one kind. */
function recordingPool(inner: PgPool, fail?: { kind: string; error: Error }) {
	const sent: string[] = [];
	const pool = wrappedPool(inner, (config, run) => {
		const kind = kindOf(config);
		sent.push(kind);
		return fail !== undefined && kind === fail.kind ? Promise.reject(fail.error) : run();
	});
	return { pool, sent };
}

/**
 * A storage over `pool` (wrapped by `wrap`) with one read statement at a time, whose first `get`
 * (of "c" in `p`, stored as "v") is held on its way: reads called now wait behind it.
 */
async function oneReadHeld(pool: PgPool, schema: string, wrap = (inner: PgPool) => inner) {
	const held = holdingPool(pool);
	const storage = createPgTTLStorage({ pool: wrap(held.pool), schema, readsInFlight: 1 });
	const p = unique("p");
	await storage.put(p, utf8("c"), utf8("v"));
	const gate = held.arm(/WHERE t\.p_key/);
	const first = storage.get(p, utf8("c"));
	await gate.reached;
	return { storage, p, first, release: gate.release };
}

const collect = async (it: AsyncIterable<StoredRecord>): Promise<string[]> => {
	const out: string[] = [];
	for await (const r of it) out.push(`${text(r.cCols)}=${text(r.value)}`);
	return out;
};

describe.skipIf(skip)(`ttlstorage-pg grouped reads${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("reads arriving while one is at the server go as one statement per kind of page, with the gets, each with its own answer", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const recorded = recordingPool(held.pool);
		const storage = createPgTTLStorage({
			pool: recorded.pool,
			schema,
			readsInFlight: 1,
			pageSize: 2,
		});
		const [a, b, empty] = [unique("a"), unique("b"), unique("empty")];
		for (const c of ["1", "2", "3", "4", "5"]) await storage.put(a, utf8(c), utf8(`a${c}`));
		for (const c of ["x", "y"]) await storage.put(b, utf8(c), utf8(`b${c}`));
		await storage.put(b, utf8("gone"), utf8("v"));
		expect(await storage.compareAndDelete(b, utf8("gone"), utf8("v"))).toBe(true);
		recorded.sent.length = 0;

		// The first read is held on its way: the others wait behind it (one statement may read).
		const gate = held.arm(/FROM unnest|WHERE t\.p_key/);
		const first = storage.get(a, utf8("1"));
		await gate.reached;
		const gets = [
			storage.get(a, utf8("3")),
			storage.get(b, utf8("x")),
			storage.get(b, utf8("gone")),
			storage.get(empty, utf8("1")),
			storage.get(a, utf8("5")),
			storage.get(a, utf8("3")),
		];
		const reads = [
			collect(storage.read(a)), // three pages of 2: later pages go with later batches
			collect(storage.read(b)),
			collect(storage.read(empty)),
			collect(storage.read(a, { from: utf8("2"), to: utf8("5") })),
			collect(storage.read(b, { from: utf8("y"), to: utf8("z") })),
		];
		gate.release();
		expect(text(await first)).toBe("a1");
		expect((await Promise.all(gets)).map(text)).toEqual([
			"a3",
			"bx",
			undefined,
			undefined,
			"a5",
			"a3",
		]);
		expect(await Promise.all(reads)).toEqual([
			["1=a1", "2=a2", "3=a3", "4=a4", "5=a5"],
			["x=bx", "y=by"],
			[],
			["2=a2", "3=a3", "4=a4"],
			["y=by"],
		]);
		// One get alone (the held one), then the waiting gets with the first pages of the unbounded
		// reads as one statement, those of the bounded ones as one; then the later pages.
		expect(recorded.sent.slice(0, 3)).toEqual(["get", "mixed_none_open", "reads_from_hi"]);
		expect(recorded.sent).not.toContain("gets");
		expect(recorded.sent.filter((k) => k.startsWith("read")).length).toBeLessThan(8);
		// Each answer is what a read of its own says now (no reads at the server meanwhile).
		recorded.sent.length = 0;
		expect(await collect(storage.read(a, { from: utf8("2"), to: utf8("5") }))).toEqual([
			"2=a2",
			"3=a3",
			"4=a4",
		]);
		expect(recorded.sent).toEqual(["read_from_hi", "read_after_hi"]);
		await storage.close();
	});

	it("reads called in one turn of the event loop go as one statement; a read called alone goes alone", async () => {
		const { pool, schema } = fixture();
		const recorded = recordingPool(pool);
		const storage = createPgTTLStorage({ pool: recorded.pool, schema });
		const p = unique("p");
		await storage.put(p, utf8("c"), utf8("v"));
		recorded.sent.length = 0;
		// Called in the same turn with every statement free: they still go together, after it.
		const got = await Promise.all([
			storage.get(p, utf8("c")),
			collect(storage.read(p)),
			storage.get(p, utf8("none")),
		]);
		expect([text(got[0]), got[1], text(got[2])]).toEqual(["v", ["c=v"], undefined]);
		expect(recorded.sent).toEqual(["mixed_none_open"]);
		recorded.sent.length = 0;
		expect(text(await storage.get(p, utf8("c")))).toBe("v");
		expect(await collect(storage.read(p))).toEqual(["c=v"]);
		expect(recorded.sent).toEqual(["get", "read_none_open"]);
		await storage.close();
	});

	it("a failed read statement fails the reads in it, not the writes or later reads", async () => {
		const { pool, schema } = fixture();
		const lost = new Error("Connection terminated unexpectedly");
		const { storage, p, first, release } = await oneReadHeld(
			pool,
			schema,
			(inner) => recordingPool(inner, { kind: "mixed_none_open", error: lost }).pool,
		);
		const batch = [storage.get(p, utf8("c")), storage.get(p, utf8("d")), collect(storage.read(p))];
		const write = storage.put(p, utf8("w"), utf8("written"));
		const bounded = collect(storage.read(p, { from: utf8("c"), to: utf8("d") }));
		release();
		expect(text(await first)).toBe("v");
		const settled = await Promise.allSettled(batch);
		expect(settled.map((s) => (s.status === "rejected" ? code(s.reason) : "ok"))).toEqual([
			"TTLSTORAGE_UNAVAILABLE",
			"TTLSTORAGE_UNAVAILABLE",
			"TTLSTORAGE_UNAVAILABLE",
		]);
		// Each error names its own operation, though the three shared a statement.
		const operation = (s: PromiseSettledResult<unknown>) =>
			s.status === "rejected" && TTLStorageError.is(s.reason) ? s.reason.operation : undefined;
		expect(settled.map(operation)).toEqual(["get", "get", "read"]);
		await write;
		expect(await bounded).toEqual(["c=v"]);
		expect(await collect(storage.read(p))).toEqual(expect.arrayContaining(["c=v", "w=written"]));
		expect(text(await storage.get(p, utf8("w")))).toBe("written");
		await storage.close();
	});

	it("a read that waits for a statement when close() is called is still answered; close waits for it", async () => {
		const { pool, schema } = fixture();
		const { storage, p, first, release } = await oneReadHeld(pool, schema);
		const waiting = [storage.get(p, utf8("c")), collect(storage.read(p))];
		let closed = false;
		const closing = storage.close().then(() => {
			closed = true;
		});
		await expect(storage.get(p, utf8("c"))).rejects.toMatchObject({ code: "TTLSTORAGE_CLOSED" });
		release();
		expect(text(await first)).toBe("v");
		const [got, rows] = await Promise.all(waiting);
		expect([text(got as Uint8Array | undefined), rows]).toEqual(["v", ["c=v"]]);
		await closing;
		expect(closed).toBe(true);
	});

	it("the next waiting reads are sent before the answered read's caller runs, and no connection is kept", async () => {
		const { pool, schema } = fixture();
		const events: string[] = [];
		const { storage, p, first, release } = await oneReadHeld(pool, schema, (inner) =>
			wrappedPool(inner, (config, run) => {
				if (!/^(puts|group)$/.test(kindOf(config))) events.push(`${kindOf(config)} sent`); // not its put
				return run();
			}),
		);
		const answered = first.then(() => {
			events.push("first answered");
		});
		const waiting = [storage.get(p, utf8("c")), storage.get(p, utf8("d"))];
		release();
		await answered;
		expect((await Promise.all(waiting)).map((v) => text(v))).toEqual(["v", undefined]);
		expect(events).toEqual(["get sent", "gets sent", "first answered"]);
		expect(pool.idleCount).toBe(pool.totalCount);
		await storage.close();
	});

	it("a test's fake timers do not hold reads back (they wait for the event loop's turn, not a faked timer)", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const p = unique("p");
		await storage.put(p, utf8("c"), utf8("v"));
		vi.useFakeTimers();
		try {
			const got = await Promise.all([storage.get(p, utf8("c")), collect(storage.read(p))]);
			expect([text(got[0]), got[1]]).toEqual(["v", ["c=v"]]);
		} finally {
			vi.useRealTimers();
			await storage.close();
		}
	});

	it("readsInFlight is validated before any I/O", () => {
		const { pool } = fixture();
		for (const bad of [0, -1, 1.5, Number.NaN])
			expect(() => createPgTTLStorage({ pool, readsInFlight: bad })).toThrow(
				/readsInFlight must be an integer >= 1/,
			);
	});
});
