// Fenced writes on a real PostgreSQL: the fence row locks that make `"epoch"` fencing strict, the
// order of one epoch's writes (F2), and batches over several scopes.
import type { Bytes } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createPgTTLStorage } from "../src/index.ts";
import { holdingPool } from "./held-pool.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_fence", skip);
let n = 0;
const unique = (what: string): Bytes => utf8(`${what}/${process.pid}/${Date.now()}/${++n}`);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);

async function failure(p: Promise<unknown>): Promise<unknown> {
	return p.then(
		() => undefined,
		(e: unknown) => e,
	);
}
const code = (e: unknown) => (TTLStorageError.is(e) ? e.code : String(e));

/** Resolves once some session of `pool`'s server waits for a lock (polls pg_stat_activity). */
async function someoneWaitsForALock(pool: pg.Pool, querying: string): Promise<void> {
	for (;;) {
		const r = await pool.query(
			"SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
			[`%${querying}%`],
		);
		if (r.rows[0]?.n > 0) return;
		await new Promise((resolve) => setImmediate(resolve));
	}
}

describe.skipIf(skip)(`ttlstorage-pg fenced writes${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("a fenced write that meets a raise in progress waits for it and is refused once it commits", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const scope = unique("scope");
		const pKey = unique("p");
		await storage.raiseFence?.(scope, 1n);
		// Another session raises to 2 and holds its transaction open.
		const raiser = await pool.connect();
		try {
			await raiser.query("BEGIN");
			await raiser.query(`UPDATE "${schema}".vvm_ttl_fences SET epoch = 2 WHERE scope = $1`, [
				Buffer.from(scope),
			]);
			const late = failure(
				storage.put(pKey, utf8("k"), utf8("old"), 0, { fence: { scope, epoch: 1n } }),
			);
			await someoneWaitsForALock(pool, "FOR SHARE");
			await raiser.query("COMMIT");
			expect(code(await late)).toBe("TTLSTORAGE_FENCED");
		} finally {
			raiser.release();
		}
		expect(await storage.get(pKey, utf8("k"))).toBeUndefined();
		await storage.put(pKey, utf8("k"), utf8("new"), 0, { fence: { scope, epoch: 2n } });
		expect(text(await storage.get(pKey, utf8("k")))).toBe("new");
	});

	it("raiseFence waits for a fenced write in progress: that write lands before the raise resolves, none after", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const scope = unique("scope");
		const pKey = unique("p");
		await storage.raiseFence?.(scope, 1n);
		await storage.put(pKey, utf8("k"), utf8("v0"));
		// Another session locks the record: the fenced write takes its fence row lock, then waits.
		const blocker = await pool.connect();
		let raised = false;
		try {
			await blocker.query("BEGIN");
			await blocker.query(
				`SELECT 1 FROM "${schema}".vvm_ttl WHERE p_key = $1 AND c_cols = $2 FOR UPDATE`,
				[Buffer.from(pKey), Buffer.from("k")],
			);
			const write = storage.put(pKey, utf8("k"), utf8("epoch1"), 0, {
				fence: { scope, epoch: 1n },
			});
			await someoneWaitsForALock(pool, "FOR SHARE");
			const raise = storage.raiseFence?.(scope, 2n).then((e) => {
				raised = true;
				return e;
			});
			await someoneWaitsForALock(pool, "AS f (scope, epoch) VALUES");
			expect(raised).toBe(false);
			await blocker.query("COMMIT");
			await write;
			expect(await raise).toBe(2n);
		} finally {
			blocker.release();
		}
		expect(text(await storage.get(pKey, utf8("k")))).toBe("epoch1");
		const after = await failure(
			storage.put(pKey, utf8("k"), utf8("late"), 0, { fence: { scope, epoch: 1n } }),
		);
		expect(code(after)).toBe("TTLSTORAGE_FENCED");
		expect(text(await storage.get(pKey, utf8("k")))).toBe("epoch1");
	});

	it("F2: of two puts under one epoch, the later call wins although the earlier one lands last", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const storage = createPgTTLStorage({ pool: held.pool, schema });
		// One storage sends a later write of a key only after the earlier one's answer (group
		// commit); a second one over the same pool (as after a lost answer, whose statement can
		// still land) does not wait, and the stamps order them.
		const other = createPgTTLStorage({ pool: held.pool, schema });
		const scope = unique("scope");
		const pKey = unique("p");
		const fence = { scope, epoch: 1n };
		await storage.raiseFence?.(scope, 1n);
		const putHeld = held.arm(/INSERT INTO/);
		const first = storage.put(pKey, utf8("k"), utf8("first"), 0, { fence });
		await putHeld.reached;
		await other.put(pKey, utf8("k"), utf8("second"), 0, { fence });
		putHeld.release();
		await first; // shadowed: resolves, writes nothing
		expect(text(await storage.get(pKey, utf8("k")))).toBe("second");
		// A conditional write that lands late loses the same way.
		const swapHeld = held.arm(/^WITH .* UPDATE "/);
		const swap = storage.compareAndSwap(pKey, utf8("k"), utf8("second"), utf8("swapped"), 0, {
			fence,
		});
		await swapHeld.reached;
		await other.put(pKey, utf8("k"), utf8("second"), 0, { fence });
		swapHeld.release();
		expect(await swap).toBe(false);
		expect(text(await storage.get(pKey, utf8("k")))).toBe("second");
	});

	it("a write on a scope never raised creates its fence row at epoch 0, and counts on from there", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const scope = unique("scope");
		const pKey = unique("p");
		await storage.put(pKey, utf8("k"), utf8("v"), 0, { fence: { scope, epoch: 3n } });
		const row = await pool.query(
			`SELECT epoch::int AS epoch FROM "${schema}".vvm_ttl_fences WHERE scope = $1`,
			[Buffer.from(scope)],
		);
		expect(row.rows).toEqual([{ epoch: 0 }]);
		expect(await storage.raiseFence?.(scope)).toBe(1n);
		expect(text(await storage.get(pKey, utf8("k")))).toBe("v");
	});

	it("a batch over several scopes with one superseded writes nothing; with all current it writes all", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const [a, b] = [unique("scope-a"), unique("scope-b")];
		const pKey = unique("p");
		await storage.raiseFence?.(a, 4n);
		await storage.raiseFence?.(b, 9n);
		const items = (eb: bigint) => [
			{ pKey, cCols: utf8("1"), value: utf8("a"), fence: { scope: a, epoch: 4n } },
			{ pKey, cCols: utf8("2"), value: utf8("plain") },
			{ pKey, cCols: utf8("3"), value: utf8("b"), ttlSeconds: 60, fence: { scope: b, epoch: eb } },
		];
		expect(code(await failure(storage.putBatch(items(8n))))).toBe("TTLSTORAGE_FENCED");
		const none: unknown[] = [];
		for await (const r of storage.read(pKey)) none.push(r);
		expect(none).toEqual([]);
		await storage.putBatch(items(9n));
		const all: string[] = [];
		for await (const r of storage.read(pKey)) all.push(`${text(r.cCols)}=${text(r.value)}`);
		expect(all).toEqual(["1=a", "2=plain", "3=b"]);
	});

	it("concurrent raises without an epoch each get their own, and the stored one is the highest", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema });
		const scope = unique("scope");
		const got = await Promise.all(Array.from({ length: 10 }, () => storage.raiseFence?.(scope)));
		expect([...got].sort((x, y) => Number((x ?? 0n) - (y ?? 0n)))).toEqual(
			Array.from({ length: 10 }, (_, i) => BigInt(i + 1)),
		);
		expect(code(await failure(Promise.resolve(storage.raiseFence?.(scope, 9n))))).toBe(
			"TTLSTORAGE_FENCED",
		);
	});

	it("a scope's first write, called before close(), still gets its fence row and lands; close waits for it", async () => {
		const { pool, schema } = fixture();
		const held = holdingPool(pool);
		const storage = createPgTTLStorage({ pool: held.pool, schema });
		const [scope, pKey] = [unique("scope"), unique("p")];
		// The group statement is held; when it runs it finds no fence row for the scope, so the
		// driver creates the row (a statement of its own, after close() was called) and sends the
		// write again.
		const gate = held.arm(/^WITH i AS MATERIALIZED/);
		const write = storage.put(pKey, utf8("k"), utf8("v"), 0, { fence: { scope, epoch: 1n } });
		await gate.reached;
		const closing = storage.close();
		gate.release();
		await write;
		await closing;
		const reader = createPgTTLStorage({ pool, schema });
		expect(text(await reader.get(pKey, utf8("k")))).toBe("v");
		await reader.close();
	});
});
