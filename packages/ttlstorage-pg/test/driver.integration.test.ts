// Driver-specific behaviour on a real PostgreSQL: the sweep, paging, whose clock decides expiry,
// and errors of an unreachable server.
import { MockClock } from "@vvm/clock";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { unusedPort } from "@vvm/vitest-config/servers";
import { describe, expect, it, vi } from "vitest";
import { createPgTTLStorage } from "../src/index.ts";
import { newPool, pgGate, pgSettings, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_driver", skip);
let n = 0;
const unique = (): Uint8Array => utf8(`driver/${process.pid}/${Date.now()}/${++n}`);

async function rejection(p: Promise<unknown>): Promise<TTLStorageError> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e,
	);
	expect(TTLStorageError.is(error), `expected a TTLStorageError, got ${String(error)}`).toBe(true);
	return error as TTLStorageError;
}

describe.skipIf(skip)(`ttlstorage-pg driver-specific${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("the sweep deletes expired records only, in batches, never a live or renewed one", async () => {
		const { pool, schema } = fixture();
		const clock = new MockClock(Date.now() + 10 * 365 * 24 * 3600_000); // far from other tests
		const storage = createPgTTLStorage({
			pool,
			schema,
			clock,
			sweepIntervalMs: 0,
			sweepBatchSize: 7,
		});
		const p = unique();
		for (let i = 0; i < 20; i++) await storage.put(p, utf8(`short${i}`), utf8("v"), 1);
		await storage.put(p, utf8("renewed"), utf8("v"), 1);
		await storage.put(p, utf8("long"), utf8("v"), 60);
		await storage.put(p, utf8("forever"), utf8("v"));
		clock.advance(999);
		expect(await storage.compareAndSwap(p, utf8("renewed"), utf8("v"), utf8("v"), 5)).toBe(true);
		expect(await storage.sweep()).toBe(0); // 1 ms before expiry: nothing
		clock.advance(1);
		expect(await storage.sweep()).toBe(20); // 7 + 7 + 6
		const count = await pool.query(
			`SELECT count(*)::int AS n FROM "${schema}".vvm_ttl WHERE p_key = $1`,
			[Buffer.from(p)],
		);
		expect(count.rows[0]?.n).toBe(3);
		const left: string[] = [];
		for await (const r of storage.read(p)) left.push(new TextDecoder().decode(r.cCols));
		expect(left).toEqual(["forever", "long", "renewed"]);
	});

	it("the periodic sweep runs on the clock's timer and stops on close", async () => {
		const { pool, schema } = fixture();
		const clock = new MockClock(Date.now() + 20 * 365 * 24 * 3600_000);
		const spy = vi.spyOn(pool, "connect");
		const storage = createPgTTLStorage({ pool, schema, clock, sweepIntervalMs: 1_000 });
		const p = unique();
		await storage.put(p, utf8("k"), utf8("v"), 1);
		const rows = async () =>
			(
				await pool.query(`SELECT count(*)::int AS n FROM "${schema}".vvm_ttl WHERE p_key = $1`, [
					Buffer.from(p),
				])
			).rows[0]?.n;
		const before = spy.mock.calls.length;
		clock.advance(1_000); // the sweep fires: expiry is at 1 000 ms, so the record is gone
		await vi.waitFor(async () => expect(await rows()).toBe(0));
		expect(spy.mock.calls.length).toBeGreaterThan(before);
		await storage.close();
		await storage.close();
		const other = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
		await other.put(p, utf8("k2"), utf8("v"), 1);
		const afterClose = spy.mock.calls.length;
		clock.advance(60_000);
		await new Promise((resolve) => setImmediate(resolve));
		expect(spy.mock.calls.length).toBe(afterClose); // no statement after close
		expect(await rows()).toBe(1);
		expect((await rejection(storage.sweep())).code).toBe("TTLSTORAGE_CLOSED");
	});

	it("expiry follows the database's clock, whatever the client's clock says", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
		const p = unique();
		const wall = vi.spyOn(Date, "now").mockReturnValue(Date.now() + 3_600_000); // a client 1 h ahead
		try {
			expect(await storage.insertIfNotExists(p, utf8("k"), utf8("v"), 30)).toBe(true);
			await storage.put(p, utf8("fenced"), utf8("v"), 30, {
				fence: { scope: unique(), epoch: 1n },
			});
		} finally {
			wall.mockRestore();
		}
		const row = await pool.query(
			`SELECT (expire_at - floor(extract(epoch FROM now()) * 1000))::int8 AS left_ms
			FROM "${schema}".vvm_ttl WHERE p_key = $1 ORDER BY c_cols`,
			[Buffer.from(p)],
		);
		for (const r of row.rows) {
			expect(Number(r.left_ms)).toBeGreaterThan(25_000);
			expect(Number(r.left_ms)).toBeLessThanOrEqual(30_000);
		}
		expect(await storage.queryTTL(p, utf8("k"))).toBeLessThanOrEqual(30);
		expect(await storage.queryTTL(p, utf8("k"))).toBeGreaterThan(25);
	});

	it("read pages through a partition larger than pageSize, in cCols order, within bounds", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema, pageSize: 7, sweepIntervalMs: 0 });
		const p = unique();
		const order = Array.from({ length: 30 }, (_, i) => (i * 7) % 30);
		await storage.putBatch(
			order.map((i) => ({ pKey: p, cCols: new Uint8Array([i]), value: utf8(`v${i}`) })),
		);
		const all: number[] = [];
		for await (const r of storage.read(p)) all.push(r.cCols[0] as number);
		expect(all).toEqual(Array.from({ length: 30 }, (_, i) => i));
		const some: number[] = [];
		for await (const r of storage.read(p, { from: new Uint8Array([3]), to: new Uint8Array([25]) }))
			some.push(r.cCols[0] as number);
		expect(some).toEqual(Array.from({ length: 22 }, (_, i) => i + 3));
	});

	it("putBatch: a key named twice keeps the later item; 200 items of 1 KiB go in one statement", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
		const p = unique();
		const items = Array.from({ length: 200 }, (_, i) => ({
			pKey: p,
			cCols: utf8(`k${i % 150}`),
			value: new Uint8Array(1024).fill(i % 256),
			ttlSeconds: i % 2 === 0 ? 60 : 0,
		}));
		await storage.putBatch(items);
		expect((await storage.get(p, utf8("k10")))?.[0]).toBe(160);
		expect(await storage.queryTTL(p, utf8("k10"))).toBeGreaterThan(50);
		expect((await storage.get(p, utf8("k60")))?.[0]).toBe(60);
		let count = 0;
		for await (const _ of storage.read(p)) count++;
		expect(count).toBe(150);
	});

	it("prepare: false sends unnamed statements and behaves the same", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema, prepare: false, sweepIntervalMs: 0 });
		const p = unique();
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("v"), 5)).toBe(true);
		expect(await storage.compareAndSwap(p, utf8("k"), utf8("v"), utf8("w"), 5)).toBe(true);
		expect(await storage.compareAndDelete(p, utf8("k"), utf8("w"))).toBe(true);
	});

	it("close() waits for operations in flight and leaves the caller's pool usable", async () => {
		const { pool, schema } = fixture();
		const storage = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
		const p = unique();
		const inFlight = storage.put(p, utf8("k"), utf8("v"));
		await storage.close();
		await inFlight;
		expect((await pool.query("SELECT 1 AS one")).rows[0]?.one).toBe(1);
		const again = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
		expect(new TextDecoder().decode(await again.get(p, utf8("k")))).toBe("v");
	});

	it("a server that refuses connections rejects with TTLSTORAGE_UNAVAILABLE, reads and writes alike", async () => {
		const pool = newPool({ port: await unusedPort() });
		try {
			const storage = createPgTTLStorage({ pool, schema: fixture().schema, sweepIntervalMs: 0 });
			expect(
				(await rejection(storage.insertIfNotExists(unique(), utf8("k"), utf8("v"), 5))).code,
			).toBe("TTLSTORAGE_UNAVAILABLE");
			expect((await rejection(storage.get(unique(), utf8("k")))).code).toBe(
				"TTLSTORAGE_UNAVAILABLE",
			);
		} finally {
			await pool.end();
		}
	});

	it("a wrong database is TTLSTORAGE_FAILED (configuration, not availability)", async () => {
		const pool = newPool({ database: `${pgSettings.database}_missing_${process.pid}` });
		try {
			const storage = createPgTTLStorage({ pool, schema: fixture().schema, sweepIntervalMs: 0 });
			const error = await rejection(storage.get(unique(), utf8("k")));
			expect(error.code).toBe("TTLSTORAGE_FAILED");
			expect(error.message).toMatch(/3D000/);
		} finally {
			await pool.end();
		}
	});
});
