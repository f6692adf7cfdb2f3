import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { MockClock } from "@vvm/clock";
import type { TTLStorageError } from "@vvm/ttlstorage";
import { TTLStorageError as TTLError, utf8 } from "@vvm/ttlstorage";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { AnyAbstractLevel, LevelTTLStorage } from "../src/index.ts";
import { createLevelTTLStorage } from "../src/index.ts";

const p = utf8("partition");
const k = utf8("leader");
const v = utf8("vvm-1");

const view = { keyEncoding: "view", valueEncoding: "view" } as const;
/** Raw keys of the driver's data ("d") or expiry index ("x") sublevel. */
async function rawKeys(db: MemoryLevel, part: "d" | "x", prefix = "ttl"): Promise<Uint8Array[]> {
	return db.sublevel(prefix, view).sublevel<Uint8Array, Uint8Array>(part, view).keys().all();
}

function u64(n: number): Uint8Array {
	const out = new Uint8Array(8);
	const dv = new DataView(out.buffer);
	dv.setUint32(0, Math.floor(n / 2 ** 32));
	dv.setUint32(4, n >>> 0);
	return out;
}

/**
 * Advances the clock by `ms`; whenever the cleaner's timer is due on the way, fires it and waits
 * until the cleaner pass finished (it re-arms its timer at the end). Returns the passes run.
 */
async function advanceWithCleaner(clock: MockClock, ms: number): Promise<number> {
	const target = clock.now() + ms;
	let passes = 0;
	for (;;) {
		const next = clock.nextDeadline();
		if (next === undefined || next > target) break;
		const rearmed = clock.nextTimerArmed();
		clock.advance(next - clock.now());
		await rearmed;
		passes++;
	}
	clock.advance(target - clock.now());
	return passes;
}

const open: LevelTTLStorage[] = [];
const dirs: string[] = [];
afterEach(async () => {
	for (const s of open.splice(0)) await s.close();
	for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function make(
	db: AnyAbstractLevel,
	clock: MockClock,
	extra: Partial<Parameters<typeof createLevelTTLStorage>[0]> = {},
): LevelTTLStorage {
	const storage = createLevelTTLStorage({ db, clock, ...extra });
	open.push(storage);
	return storage;
}

async function tempDir(): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), "vvm-ttl-level-"));
	dirs.push(dir);
	return dir;
}

describe("cleaner: regression for voedger's bbolt bug (reference §3.6)", () => {
	it("never deletes a record renewed many times across many cleaner runs while it is live", async () => {
		const clock = new MockClock(1_700_000_000_000);
		const db = new MemoryLevel();
		const storage = make(db, clock, { cleanupIntervalMs: 1_000 });
		// Leadership-like: TTL 5 s, renewed every 1.25 s (duration / 4) by CAS of the value with itself.
		expect(await storage.insertIfNotExists(p, k, v, 5)).toBe(true);
		let passes = 0;
		for (let i = 0; i < 40; i++) {
			passes += await advanceWithCleaner(clock, 1_250);
			expect(await storage.get(p, k), `lost after renewal ${i}`).toEqual(v);
			expect(await storage.compareAndSwap(p, k, v, v, 5), `renewal ${i}`).toBe(true);
			// The previous index entry is removed by every rewrite: exactly one entry stays.
			expect(await rawKeys(db, "x")).toHaveLength(1);
		}
		expect(passes).toBeGreaterThanOrEqual(49);
		// Once renewals stop, the record expires and the next passes delete it physically.
		await advanceWithCleaner(clock, 6_000);
		expect(await storage.get(p, k)).toBeUndefined();
		expect(await rawKeys(db, "d")).toEqual([]);
		expect(await rawKeys(db, "x")).toEqual([]);
	});

	it("keeps a live record whose stale index entry is due (the cleaner re-checks the expiry)", async () => {
		const clock = new MockClock(1_700_000_000_000);
		const db = new MemoryLevel();
		const storage = make(db, clock);
		expect(await storage.insertIfNotExists(p, k, v, 10)).toBe(true);
		const [entry] = await rawKeys(db, "x");
		expect(entry).toBeDefined();
		// Forge what the original leaves behind after a renewal: an index entry for an older expiry.
		const stale = new Uint8Array((entry as Uint8Array).length);
		stale.set(u64(clock.now() - 1), 0);
		stale.set((entry as Uint8Array).subarray(8), 8);
		await db
			.sublevel("ttl", view)
			.sublevel<Uint8Array, Uint8Array>("x", view)
			.put(stale, new Uint8Array());
		expect(await rawKeys(db, "x")).toHaveLength(2);
		expect(await storage.runCleaner()).toBe(0);
		expect(await storage.get(p, k)).toEqual(v);
		expect(await rawKeys(db, "x")).toEqual([entry]);
	});

	it("keeps a record re-inserted after delete when the old entry comes due", async () => {
		const clock = new MockClock(0);
		const db = new MemoryLevel();
		const storage = make(db, clock);
		expect(await storage.insertIfNotExists(p, k, v, 2)).toBe(true);
		expect(await storage.compareAndDelete(p, k, v)).toBe(true);
		expect(await rawKeys(db, "x")).toEqual([]);
		expect(await storage.insertIfNotExists(p, k, utf8("vvm-2"), 60)).toBe(true);
		clock.advance(3_000);
		expect(await storage.runCleaner()).toBe(0);
		expect(await storage.get(p, k)).toEqual(utf8("vvm-2"));
	});
});

describe("cleaner", () => {
	it("runs on the injected clock at the configured interval and deletes only expired records", async () => {
		const clock = new MockClock(0);
		const db = new MemoryLevel();
		const storage = make(db, clock, { cleanupIntervalMs: 10_000 });
		expect(clock.pendingTimers).toBe(1);
		expect(clock.nextDeadline()).toBe(10_000);
		await storage.put(p, utf8("short"), v, 5);
		await storage.put(p, utf8("exact"), v, 10);
		await storage.put(p, utf8("long"), v, 11);
		await storage.put(p, utf8("forever"), v);
		expect(await rawKeys(db, "d")).toHaveLength(4);
		expect(await rawKeys(db, "x")).toHaveLength(3);
		expect(await advanceWithCleaner(clock, 9_999)).toBe(0);
		expect(await rawKeys(db, "d")).toHaveLength(4);
		expect(await advanceWithCleaner(clock, 1)).toBe(1);
		// "exact" expires at 10 000 = now: expired (now >= expireAt) and deleted; "long" stays.
		expect(await rawKeys(db, "d")).toHaveLength(2);
		expect(await rawKeys(db, "x")).toHaveLength(1);
		expect(await storage.get(p, utf8("long"))).toEqual(v);
		expect(await storage.get(p, utf8("forever"))).toEqual(v);
		expect(clock.nextDeadline()).toBe(20_000);
	});

	it("runCleaner reports the records it deleted and walks more than one page", async () => {
		const clock = new MockClock(0);
		const db = new MemoryLevel();
		const storage = make(db, clock);
		const items = Array.from({ length: 700 }, (_, i) => ({
			pKey: utf8(`p${i % 7}`),
			cCols: utf8(`c${i}`),
			value: v,
			ttlSeconds: i % 2 === 0 ? 1 : 100,
		}));
		await storage.putBatch(items);
		clock.advance(1_000);
		expect(await storage.runCleaner()).toBe(350);
		expect(await rawKeys(db, "d")).toHaveLength(350);
		expect(await storage.runCleaner()).toBe(0);
	});

	it("logs cleaner errors through the logger (error level, with the code) and keeps its timer going", async () => {
		const clock = new MockClock(0);
		const db = new MemoryLevel();
		const errors: Array<Record<string, unknown>> = [];
		const ignore = (): void => {};
		const logger = {
			error: (fields: object) => errors.push(fields as Record<string, unknown>),
			warn: ignore,
			info: ignore,
			debug: ignore,
		};
		make(db, clock, { cleanupIntervalMs: 1_000, logger });
		await db.close(); // the database fails under the driver
		expect(await advanceWithCleaner(clock, 3_000)).toBe(3);
		expect(errors).toHaveLength(3);
		expect(errors[0]).toMatchObject({
			pkg: "@vvm/ttlstorage-level",
			operation: "runCleaner",
			code: "TTLSTORAGE_UNAVAILABLE",
		});
		expect(TTLError.is(errors[0]?.err)).toBe(true);
		expect(clock.pendingTimers).toBe(1);
	});

	it("writes nothing to the console by default", async () => {
		const spy = vi.spyOn(console, "error").mockImplementation(() => {});
		const clock = new MockClock(0);
		const db = new MemoryLevel();
		make(db, clock, { cleanupIntervalMs: 1_000 });
		await db.close();
		await advanceWithCleaner(clock, 1_000);
		expect(spy).not.toHaveBeenCalled();
	});

	it("stops with close(): no timer stays armed", async () => {
		const clock = new MockClock(0);
		const storage = createLevelTTLStorage({ db: new MemoryLevel(), clock });
		expect(clock.pendingTimers).toBe(1);
		await storage.close();
		expect(clock.pendingTimers).toBe(0);
	});
});

describe("restart", () => {
	it("keeps data and the right TTL across close and reopen (classic-level on disk)", async () => {
		const dir = await tempDir();
		const clock = new MockClock(1_700_000_000_000);
		const first = createLevelTTLStorage({ db: new ClassicLevel(dir), clock, ownsDb: true });
		expect(await first.insertIfNotExists(p, k, v, 100)).toBe(true);
		await first.put(p, utf8("plain"), utf8("kept"));
		await first.put(p, utf8("short"), utf8("gone"), 10);
		await first.close();
		clock.advance(40_000);
		const db = new ClassicLevel(dir);
		const second = make(db, clock, { ownsDb: true });
		expect(await second.get(p, k)).toEqual(v);
		expect(await second.queryTTL(p, k)).toBe(60);
		expect(await second.queryTTL(p, utf8("plain"))).toBe(0);
		expect(await second.get(p, utf8("short"))).toBeUndefined();
		// The expiry index survived too: the cleaner finds the expired record after the restart.
		expect(await second.runCleaner()).toBe(1);
		expect(await second.insertIfNotExists(p, k, utf8("other"), 10)).toBe(false);
		clock.advance(60_000);
		expect(await second.insertIfNotExists(p, k, utf8("other"), 10)).toBe(true);
	});
});

describe("lifecycle and options", () => {
	it("close waits for in-flight operations, then closes the database only when it owns it", async () => {
		const dir = await tempDir();
		const clock = new MockClock(0);
		const owned = new ClassicLevel(dir);
		const storage = createLevelTTLStorage({ db: owned, clock, ownsDb: true });
		const writes = Array.from({ length: 50 }, (_, i) => storage.put(p, utf8(`c${i}`), v));
		await storage.close();
		await expect(Promise.all(writes)).resolves.toHaveLength(50);
		expect(owned.status).toBe("closed");
		const reopened = new ClassicLevel(dir);
		expect(await rawKeys(reopened, "d")).toHaveLength(50);
		await reopened.close();

		const shared = new MemoryLevel();
		await createLevelTTLStorage({ db: shared, clock }).close();
		expect(shared.status).toBe("open");
	});

	it("maps a database closed underneath to TTLSTORAGE_UNAVAILABLE", async () => {
		const db = new MemoryLevel();
		const storage = make(db, new MockClock(0));
		await db.close();
		const error = await storage.get(p, k).catch((e: unknown) => e);
		expect(TTLError.is(error)).toBe(true);
		expect((error as TTLStorageError).code).toBe("TTLSTORAGE_UNAVAILABLE");
		expect((error as Error).message).toMatch(/^\[@vvm\/ttlstorage-level\] get:/);
	});

	it("rejects a corrupt stored record with TTLSTORAGE_FAILED in every operation, read included", async () => {
		const db = new MemoryLevel();
		await make(db, new MockClock(0)).put(p, k, v);
		// A data value shorter than its 8-byte expiry header, written past the driver; then a driver
		// that has not written it (a driver's own last group stands for what it wrote until then).
		const [key] = await rawKeys(db, "d");
		await db
			.sublevel("ttl", view)
			.sublevel<Uint8Array, Uint8Array>("d", view)
			.put(key as Uint8Array, new Uint8Array([1, 2, 3]));
		const storage = make(db, new MockClock(0));
		// Each outcome is caught where it is started: a rejection must not wait for the loop below.
		const outcome = (run: Promise<unknown>): Promise<unknown> =>
			run.then(
				() => "resolved",
				(e: unknown) => e,
			);
		const failures: Record<string, Promise<unknown>> = {
			get: outcome(storage.get(p, k)),
			queryTTL: outcome(storage.queryTTL(p, k)),
			insertIfNotExists: outcome(storage.insertIfNotExists(p, k, v, 1)),
			read: outcome(
				(async () => {
					for await (const _ of storage.read(p));
				})(),
			),
		};
		for (const [op, settled] of Object.entries(failures)) {
			const error = await settled;
			expect(TTLError.is(error), `${op}: ${String(error)}`).toBe(true);
			expect((error as TTLStorageError).code, op).toBe("TTLSTORAGE_FAILED");
			expect((error as Error).message, op).toMatch(/corrupt record/);
		}
		// A put reads nothing: it replaces the corrupt record.
		await storage.put(p, k, utf8("repaired"));
		expect(await storage.get(p, k)).toEqual(utf8("repaired"));
	});

	it("separates keyspaces by prefix on one database", async () => {
		const db = new MemoryLevel();
		const clock = new MockClock(0);
		const a = make(db, clock, { prefix: "a" });
		const b = make(db, clock, { prefix: "b" });
		expect(await a.insertIfNotExists(p, k, v, 0)).toBe(true);
		expect(await b.get(p, k)).toBeUndefined();
		expect(await b.insertIfNotExists(p, k, utf8("b"), 0)).toBe(true);
		expect(await a.get(p, k)).toEqual(v);
		expect(await rawKeys(db, "d", "a")).toHaveLength(1);
	});

	it("reads more than one page in order, and sees no expired records", async () => {
		const clock = new MockClock(0);
		const storage = make(new MemoryLevel(), clock);
		const n = 600;
		await storage.putBatch(
			Array.from({ length: n }, (_, i) => ({
				pKey: p,
				cCols: u64(i),
				value: utf8(String(i)),
				ttlSeconds: i % 100 === 0 ? 1 : 0,
			})),
		);
		clock.advance(1_000);
		const seen: number[] = [];
		for await (const r of storage.read(p)) seen.push(Number(new TextDecoder().decode(r.value)));
		expect(seen).toEqual(Array.from({ length: n }, (_, i) => i).filter((i) => i % 100 !== 0));
	});

	it("putBatch with the same key twice keeps the last item; the cleaner drops the stale index entries", async () => {
		const db = new MemoryLevel();
		const clock = new MockClock(0);
		const storage = make(db, clock);
		await storage.put(p, k, utf8("old"), 50);
		await storage.putBatch([
			{ pKey: p, cCols: k, value: utf8("first"), ttlSeconds: 10 },
			{ pKey: p, cCols: k, value: utf8("second"), ttlSeconds: 20 },
		]);
		expect(await storage.get(p, k)).toEqual(utf8("second"));
		expect(await storage.queryTTL(p, k)).toBe(20);
		// Puts read nothing: the entries of "old" (50 s) and "first" (10 s) stay until their time.
		expect(await rawKeys(db, "x")).toHaveLength(3);
		clock.advance(15_000);
		expect(await storage.runCleaner()).toBe(0);
		expect(await rawKeys(db, "x")).toHaveLength(2);
		await storage.put(p, k, utf8("plain"));
		clock.advance(60_000);
		// Both entries are due and neither is the record's: dropped, the record kept.
		expect(await storage.runCleaner()).toBe(0);
		expect(await rawKeys(db, "x")).toEqual([]);
		expect(await storage.get(p, k)).toEqual(utf8("plain"));
	});

	it("group commit: writes called together go in one LevelDB batch; later calls of a key win", async () => {
		const db = new MemoryLevel();
		const storage = make(db, new MockClock(0));
		expect(storage.supports).toMatchObject({ atomicBatches: true, groupCommit: true });
		await storage.put(p, utf8("warm"), v);
		const batches: number[] = [];
		db.on("write", (ops: unknown[]) => batches.push(ops.length));
		const results = await Promise.all([
			storage.put(p, k, utf8("first")),
			storage.insertIfNotExists(p, utf8("i"), v, 0),
			storage.insertIfNotExists(p, utf8("i"), utf8("second insert"), 0),
			storage.compareAndSwap(p, k, utf8("first"), utf8("swapped"), 0),
			storage.put(p, k, utf8("last")),
		]);
		expect(results).toEqual([undefined, true, false, true, undefined]);
		expect(batches).toHaveLength(1);
		expect(await storage.get(p, k)).toEqual(utf8("last"));
		expect(await storage.get(p, utf8("i"))).toEqual(v);
		// A group that writes while the previous one's batch is at the database sees its writes.
		const first = storage.put(p, utf8("chain"), utf8("1"));
		await Promise.resolve();
		const second = storage.compareAndSwap(p, utf8("chain"), utf8("1"), utf8("2"), 0);
		await Promise.all([first, second]);
		expect(await second).toBe(true);
		expect(await storage.get(p, utf8("chain"))).toEqual(utf8("2"));
	});

	it.each([
		{ syncReads: false, getMany: 1, getSync: 0 },
		{ syncReads: true, getMany: 0, getSync: 3 },
	])(
		"point reads (syncReads $syncReads): called together, one getMany or none; each sees every write that landed before",
		async ({ syncReads, getMany: manyCalls, getSync: syncCalls }) => {
			const db = new MemoryLevel();
			const clock = new MockClock(0);
			const storage = make(db, clock, { syncReads });
			await storage.putBatch([
				{ pKey: p, cCols: utf8("a"), value: utf8("A") },
				{ pKey: p, cCols: utf8("b"), value: utf8("B"), ttlSeconds: 1 },
			]);
			const inner = db as unknown as {
				_getMany: (...a: unknown[]) => Promise<unknown>;
				_getSync: (...a: unknown[]) => unknown;
			};
			const getMany = inner._getMany.bind(db);
			const getSync = inner._getSync.bind(db);
			const calls = { getMany: 0, getSync: 0 };
			inner._getMany = (...a: unknown[]) => {
				calls.getMany++;
				return getMany(...a);
			};
			inner._getSync = (...a: unknown[]) => {
				calls.getSync++;
				return getSync(...a);
			};
			clock.advance(1_000);
			const reads = await Promise.all([
				storage.get(p, utf8("a")),
				storage.get(p, utf8("b")),
				storage.get(p, utf8("missing")),
			]);
			expect(reads).toEqual([utf8("A"), undefined, undefined]);
			expect(calls).toEqual({ getMany: manyCalls, getSync: syncCalls });
			await storage.put(p, utf8("a"), utf8("A2"));
			expect(await storage.get(p, utf8("a"))).toEqual(utf8("A2"));
			// A group's reads (an insert's) go the same way.
			expect(await storage.insertIfNotExists(p, utf8("c"), v, 0)).toBe(true);
			expect(calls.getMany).toBe(syncReads ? 0 : 3);
		},
	);

	it("syncReads: a read before the database opened waits for it (getMany); a failed getSync rejects with TTLSTORAGE_FAILED", async () => {
		const db = new MemoryLevel();
		const inner = db as unknown as {
			_getMany: (...a: unknown[]) => Promise<unknown>;
			_getSync: (...a: unknown[]) => unknown;
		};
		const getMany = inner._getMany.bind(db);
		let manyCalls = 0;
		inner._getMany = (...a: unknown[]) => {
			manyCalls++;
			return getMany(...a);
		};
		const storage = make(db, new MockClock(0));
		expect(db.status).toBe("opening");
		expect(await storage.get(p, k)).toBeUndefined();
		expect(manyCalls).toBe(1);
		inner._getSync = () => {
			throw new Error("disk gone");
		};
		const error = await storage.get(p, k).then(
			() => "resolved",
			(e: unknown) => e,
		);
		expect(TTLError.is(error), String(error)).toBe(true);
		expect((error as TTLStorageError).code).toBe("TTLSTORAGE_FAILED");
		expect((error as Error).message).toMatch(/disk gone/);
		expect(manyCalls).toBe(1);
	});

	it("rejects bad options with TypeError or RangeError", () => {
		const db = new MemoryLevel();
		expect(() => createLevelTTLStorage({ db, cleanupIntervalMs: 0 })).toThrow(RangeError);
		expect(() => createLevelTTLStorage({ db, cleanupIntervalMs: Number.NaN })).toThrow(RangeError);
		expect(() => createLevelTTLStorage({ db, prefix: "" })).toThrow(TypeError);
		expect(() => createLevelTTLStorage({ db, syncReads: "yes" as unknown as boolean })).toThrow(
			/syncReads must be a boolean/,
		);
		expect(() => createLevelTTLStorage({ db: {} as AnyAbstractLevel })).toThrow(TypeError);
	});
});
