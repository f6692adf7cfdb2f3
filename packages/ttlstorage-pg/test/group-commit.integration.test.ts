// Group commit on a real PostgreSQL: writes of independent callers that arrive while a statement
// is at the server go together in one statement (one transaction, one commit), and each caller
// gets its own answer: a refused condition, a superseded fence or a failed statement of one never
// fails or reorders another's; a lost answer is every one's OUTCOME_UNKNOWN; a race on an absent
// key never lands a conditional batch in part.
import type { Bytes } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { PgPool, PgQueryConfig, PgQueryResult } from "../src/index.ts";
import { createPgTTLStorage } from "../src/index.ts";
import { readArray } from "./binary-array.ts";
import { holdingPool } from "./held-pool.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";
import { wrappedPool } from "./wrapped-pool.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_group", skip);
let n = 0;
const unique = (what: string): Bytes => utf8(`${what}/${process.pid}/${Date.now()}/${++n}`);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);
const code = (e: unknown) => (TTLStorageError.is(e) ? e.code : String(e));
const settle = <T>(ps: Promise<T>[]) => Promise.allSettled(ps);

/** A pool that counts the group statements sent, and may answer one of them its own way. */
function countingPool(
	inner: PgPool,
	intercept?: (
		config: PgQueryConfig,
		run: () => Promise<PgQueryResult>,
	) => Promise<PgQueryResult> | undefined,
) {
	const sent: PgQueryConfig[] = [];
	const pool = wrappedPool(inner, (config, run) => {
		const group = config.text.startsWith("WITH i AS MATERIALIZED");
		if (group) sent.push(config);
		return (group ? intercept?.(config, run) : undefined) ?? run();
	});
	return { pool, sent };
}

/** The requests (distinct `r`) of a group statement: its first parameter. */
const requestsOf = (config: PgQueryConfig): number =>
	new Set(config.values === undefined ? [] : readArray(config.values[0])).size;

/**
 * {@link countingPool} whose first group statement of two or more requests runs and commits, and
 * whose answer is then lost as `lost()`.
 */
function losingFirstGroup(inner: PgPool, lost: () => Error) {
	let lose = true;
	return countingPool(inner, (config, run) => {
		if (!lose || requestsOf(config) < 2) return undefined;
		lose = false;
		return run().then(() => {
			throw lost();
		});
	});
}

describe.skipIf(skip)(`ttlstorage-pg group commit${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("writes arriving while one is in flight go in one statement, each with its own answer", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const counted = countingPool(held.pool);
		const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 1 });
		const pKey = unique("p");
		const taken = [1, 3, 5].map((i) => utf8(`k${i}`));
		for (const c of taken) await storage.put(pKey, c, utf8("old"));
		counted.sent.length = 0;
		// The first write is held on its way: the next 12 queue behind it and go as one group.
		const gate = held.arm(/^WITH i AS MATERIALIZED/);
		const first = storage.put(unique("p"), utf8("x"), utf8("v"));
		await gate.reached;
		const inserts = Array.from({ length: 8 }, (_, i) =>
			storage.insertIfNotExists(pKey, utf8(`k${i}`), utf8("new"), 0),
		);
		const swaps = [
			storage.compareAndSwap(pKey, utf8("k1"), utf8("old"), utf8("swapped"), 0),
			storage.compareAndSwap(pKey, utf8("k3"), utf8("other"), utf8("swapped"), 0),
		];
		const deletes = [
			storage.compareAndDelete(pKey, utf8("k5"), utf8("old")),
			storage.compareAndDelete(pKey, utf8("k9"), utf8("old")),
		];
		gate.release();
		await first;
		// k1, k3 and k5 are named by an insert and then by a swap or a delete: those go in the next
		// statement, after it; the delete of k9 names no waiting key, so it rides with the inserts.
		expect(await Promise.all(inserts)).toEqual([true, false, true, false, true, false, true, true]);
		expect(await Promise.all(swaps)).toEqual([true, false]);
		expect(await Promise.all(deletes)).toEqual([true, false]);
		expect(counted.sent.map(requestsOf)).toEqual([1, 9, 3]);
		expect(text(await storage.get(pKey, utf8("k1")))).toBe("swapped");
		expect(text(await storage.get(pKey, utf8("k3")))).toBe("old");
		expect(text(await storage.get(pKey, utf8("k5")))).toBeUndefined();
		expect(text(await storage.get(pKey, utf8("k0")))).toBe("new");
	});

	it("a superseded fence and a false condition fail only their own request of a group", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const counted = countingPool(held.pool);
		const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 1 });
		const [deposed, current] = [unique("scope"), unique("scope")];
		await storage.raiseFence?.(deposed, 2n);
		await storage.raiseFence?.(current, 1n);
		const pKey = unique("p");
		await storage.put(pKey, utf8("a"), utf8("there"));
		counted.sent.length = 0;
		const gate = held.arm(/^WITH i AS MATERIALIZED/);
		const first = storage.put(unique("p"), utf8("x"), utf8("v"));
		await gate.reached;
		const results = settle<unknown>([
			storage.put(pKey, utf8("f"), utf8("v"), 0, { fence: { scope: deposed, epoch: 1n } }),
			storage.putBatch([
				{ pKey, cCols: utf8("b1"), value: utf8("v"), fence: { scope: current, epoch: 1n } },
				{ pKey, cCols: utf8("b2"), value: utf8("v") },
			]),
			// All or nothing: "a" is taken, so "c" is not written either.
			storage.putBatchIf([
				{ pKey, cCols: utf8("c"), value: utf8("v"), expected: null },
				{ pKey, cCols: utf8("a"), value: utf8("v"), expected: null },
			]),
			storage.putBatchIf([
				{ pKey, cCols: utf8("d"), value: utf8("v"), expected: null },
				{ pKey, cCols: utf8("e"), value: utf8("v") },
			]),
		]);
		gate.release();
		await first;
		const answers = (await results).map((r) =>
			r.status === "rejected" ? code(r.reason) : r.value,
		);
		expect(answers).toEqual(["TTLSTORAGE_FENCED", undefined, false, true]);
		expect(counted.sent.map(requestsOf)).toEqual([1, 4]);
		const got = async (c: string) => text(await storage.get(pKey, utf8(c)));
		expect([await got("f"), await got("b1"), await got("b2")]).toEqual([undefined, "v", "v"]);
		expect([await got("c"), await got("a"), await got("d"), await got("e")]).toEqual([
			undefined,
			"there",
			"v",
			"v",
		]);
	});

	it("a group statement the server refused is sent again request by request", async () => {
		const { pool, schema } = fixture();
		let refuse = true;
		const counted = countingPool(pool, (config) => {
			if (!refuse || requestsOf(config) < 2) return undefined;
			refuse = false;
			return Promise.reject(
				Object.assign(new Error("invalid parameter value"), { code: "22023", severity: "ERROR" }),
			);
		});
		const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 1 });
		const pKey = unique("p");
		const writes = Array.from({ length: 5 }, (_, i) =>
			storage.insertIfNotExists(pKey, utf8(`k${i}`), utf8("v"), 0),
		);
		expect(await Promise.all(writes)).toEqual([true, true, true, true, true]);
		// The first alone; the 4 behind it refused together, then one by one.
		expect(counted.sent.map(requestsOf)).toEqual([1, 4, 1, 1, 1, 1]);
	});

	it("a lost answer of a group is OUTCOME_UNKNOWN for every write in it (and they landed)", async () => {
		const { pool, schema } = fixture();
		const counted = losingFirstGroup(pool, () => new Error("Connection terminated unexpectedly"));
		const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 1 });
		const pKey = unique("p");
		const writes = settle(
			Array.from({ length: 4 }, (_, i) => storage.put(pKey, utf8(`k${i}`), utf8("v"))),
		);
		const outcomes = (await writes).map((r) => (r.status === "rejected" ? code(r.reason) : "ok"));
		expect(outcomes).toEqual([
			"ok",
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			"TTLSTORAGE_OUTCOME_UNKNOWN",
		]);
		for (let i = 0; i < 4; i++) expect(text(await storage.get(pKey, utf8(`k${i}`)))).toBe("v");
		expect(counted.sent.map(requestsOf)).toEqual([1, 3]);
	});

	// The group committed, then its answer is lost in a way node-postgres reports raw: a socket
	// error on the open connection (Linux ends a connection that timed out with the last ICMP
	// error it had), or the server's PANIC in the commit. Sent again request by request (as a
	// refused group is), the inserts would find their own rows and answer false; "unavailable"
	// would say nothing was written. Found by review on 98b2628 (both happened then).
	it.each([
		["ECONNREFUSED on the open connection", { code: "ECONNREFUSED", syscall: "read" }],
		["EHOSTDOWN on the open connection", { code: "EHOSTDOWN", syscall: "read" }],
		["a PANIC in the commit", { code: "58030", severity: "PANIC" }],
		["an error nobody names", {}],
	])(
		"a lost answer of a group (%s) is OUTCOME_UNKNOWN for each insert, never sent again",
		async (_, fields) => {
			const { pool, schema } = fixture();
			const counted = losingFirstGroup(pool, () =>
				Object.assign(new Error("the answer is lost"), fields),
			);
			const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 1 });
			const pKey = unique("p");
			const writes = settle(
				Array.from({ length: 4 }, (_, i) =>
					storage.insertIfNotExists(pKey, utf8(`k${i}`), utf8(`mine-${i}`), 0),
				),
			);
			const outcomes = (await writes).map((r) =>
				r.status === "rejected" ? code(r.reason) : String(r.value),
			);
			expect(outcomes).toEqual([
				"true",
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				"TTLSTORAGE_OUTCOME_UNKNOWN",
			]);
			for (let i = 0; i < 4; i++)
				expect(text(await storage.get(pKey, utf8(`k${i}`)))).toBe(`mine-${i}`);
			expect(counted.sent.map(requestsOf)).toEqual([1, 3]);
			await storage.close();
		},
	);

	it("an absent key taken by another transaction mid-statement: the batch writes nothing and answers false", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const pKey = unique("p");
		const other = await pool.connect();
		try {
			await other.query("BEGIN");
			await other.query(
				`INSERT INTO "${schema}".vvm_ttl (p_key, c_cols, value) VALUES ($1, $2, $3)`,
				[Buffer.from(pKey), Buffer.from("b"), Buffer.from("theirs")],
			);
			// Row "b" is not visible yet, so the batch finds it absent, then meets it on insert.
			const batch = storage.putBatchIf([
				{ pKey, cCols: utf8("a"), value: utf8("ours"), expected: null },
				{ pKey, cCols: utf8("b"), value: utf8("ours"), expected: null },
			]);
			await waitForLock(pool);
			await other.query("COMMIT");
			expect(await batch).toBe(false);
		} finally {
			other.release();
		}
		expect(text(await storage.get(pKey, utf8("a")))).toBeUndefined();
		expect(text(await storage.get(pKey, utf8("b")))).toBe("theirs");
	});

	it("the next waiting group is sent before the answered group's callers run, and no connection is kept", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const events: string[] = [];
		const recorded = wrappedPool(held.pool, (config, run) => {
			if (config.text.startsWith("WITH i AS MATERIALIZED")) events.push("group sent");
			return run();
		});
		const storage = createPgTTLStorage({ pool: recorded, schema, writesInFlight: 1 });
		const gate = held.arm(/^WITH i AS MATERIALIZED/);
		const first = storage.put(unique("p"), utf8("k"), utf8("v")).then(() => {
			events.push("first answered");
		});
		await gate.reached;
		const second = storage.put(unique("p"), utf8("k"), utf8("v")).then(() => {
			events.push("second answered");
		});
		gate.release();
		await Promise.all([first, second]);
		// The server has the second group while the first one's callers run (before, it waited
		// for all they did, and for the pool's hand-over).
		expect(events).toEqual(["group sent", "group sent", "first answered", "second answered"]);
		expect(pool.idleCount).toBe(pool.totalCount);
		await storage.close();
	});

	it("a later write of a key waits for the earlier one's answer: call order is kept", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const counted = countingPool(held.pool);
		const storage = createPgTTLStorage({ pool: counted.pool, schema, writesInFlight: 4 });
		const pKey = unique("p");
		const gate = held.arm(/^WITH i AS MATERIALIZED/);
		const first = storage.put(pKey, utf8("k"), utf8("first"));
		await gate.reached;
		const second = storage.put(pKey, utf8("k"), utf8("second"));
		const elsewhere = storage.put(pKey, utf8("j"), utf8("v"));
		await elsewhere; // another key is not held up
		expect(counted.sent.length).toBe(2);
		gate.release();
		await Promise.all([first, second]);
		expect(counted.sent.length).toBe(3);
		expect(text(await storage.get(pKey, utf8("k")))).toBe("second");
	});
});

/** Resolves once a session of the server waits for a lock in a group statement. */
async function waitForLock(pool: pg.Pool): Promise<void> {
	for (;;) {
		const r = await pool.query(
			"SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'WITH i AS MATERIALIZED%'",
		);
		if (r.rows[0]?.n > 0) return;
		await new Promise((resolve) => setImmediate(resolve));
	}
}
