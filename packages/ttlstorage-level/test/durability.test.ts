// Durable acknowledgments (issue 32): every batch asks LevelDB for `sync`, `unsafeNoSync` is the
// only way out, and group commit shares a batch's fsync: the writes that arrive while a batch is
// at the database all go in the next one.
import { MockClock } from "@vvm/clock";
import { utf8 } from "@vvm/ttlstorage";
import { MemoryLevel } from "memory-level";
import { afterEach, describe, expect, it } from "vitest";
import type { LevelTTLStorage } from "../src/index.ts";
import { createLevelTTLStorage } from "../src/index.ts";

const p = utf8("partition");
const open: LevelTTLStorage[] = [];
afterEach(async () => {
	for (const s of open.splice(0)) await s.close();
});

/** A memory database whose batches can be held at "the database" until released. */
function heldDb() {
	const db = new MemoryLevel();
	const inner = db as unknown as { _batch: (ops: unknown[], o: unknown) => Promise<void> };
	const batch = inner._batch.bind(db);
	const batches: Array<{ ops: number; options: unknown }> = [];
	let hold: Promise<void> | undefined;
	let release: () => void = () => {};
	inner._batch = async (ops, options) => {
		batches.push({ ops: ops.length, options });
		if (hold !== undefined) await hold;
		return batch(ops, options);
	};
	return {
		db,
		batches,
		/** The next batches wait at the database until `release()`. */
		holdNext() {
			hold = new Promise<void>((resolve) => {
				release = () => {
					hold = undefined;
					resolve();
				};
			});
		},
		release: () => release(),
	};
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("durability: sync", () => {
	it("writes every batch with sync: true by default, and with sync: false only under unsafeNoSync", async () => {
		for (const [unsafeNoSync, sync] of [
			[undefined, true],
			[false, true],
			[true, false],
		] as const) {
			const held = heldDb();
			const storage = createLevelTTLStorage({
				db: held.db,
				clock: new MockClock(0),
				...(unsafeNoSync === undefined ? {} : { unsafeNoSync }),
			});
			open.push(storage);
			const fence = { scope: utf8("s"), epoch: await storage.raiseFence(utf8("s"), 1n) };
			await storage.insertIfNotExists(p, utf8("a"), utf8("1"), 0, { fence });
			await storage.putBatchIf([{ pKey: p, cCols: utf8("b"), value: utf8("2"), expected: null }]);
			await storage.put(p, utf8("c"), utf8("3"), 5);
			await storage.compareAndDelete(p, utf8("a"), utf8("1"));
			expect(held.batches.length).toBe(5);
			expect(held.batches.map((b) => (b.options as { sync?: unknown }).sync)).toEqual(
				held.batches.map(() => sync),
			);
		}
	});

	it("refuses an unsafeNoSync that is not a boolean", () => {
		expect(() =>
			createLevelTTLStorage({
				db: new MemoryLevel(),
				unsafeNoSync: "yes" as unknown as boolean,
			}),
		).toThrow(/unsafeNoSync must be a boolean/);
	});
});

describe("durability: group commit shares the fsync", () => {
	it("every write that arrives while a batch is at the database goes in the next batch, and none answers before its batch landed", async () => {
		const held = heldDb();
		const storage = createLevelTTLStorage({ db: held.db, clock: new MockClock(0) });
		open.push(storage);
		held.holdNext();
		const first = storage.put(p, utf8("first"), utf8("1"));
		await turn();
		expect(held.batches).toHaveLength(1);
		// Writes in three later turns of the event loop, all while the first batch is held.
		const later: Array<Promise<unknown>> = [];
		const settled: string[] = [];
		for (let t = 0; t < 3; t++) {
			for (let i = 0; i < 2; i++) {
				const key = `t${t}-${i}`;
				const write =
					i === 0
						? storage.insertIfNotExists(p, utf8(key), utf8("v"), 0)
						: storage.put(p, utf8(key), utf8("v"));
				later.push(write.then(() => settled.push(key)));
			}
			await turn();
		}
		// Nothing of them was decided or sent while the batch was at the database.
		expect(held.batches).toHaveLength(1);
		expect(settled).toEqual([]);
		held.release();
		await Promise.all([first, ...later]);
		// One more batch for all six, sent once the held one landed (the earlier group commit sent
		// two: the first later turn's writes, decided while the batch was held, then the rest).
		expect(held.batches).toHaveLength(2);
		expect(settled).toHaveLength(6);
		expect(await storage.get(p, utf8("t2-1"))).toEqual(utf8("v"));
	});

	it("a write decided after a held batch sees what that batch wrote", async () => {
		const held = heldDb();
		const storage = createLevelTTLStorage({ db: held.db, clock: new MockClock(0) });
		open.push(storage);
		held.holdNext();
		const put = storage.put(p, utf8("chain"), utf8("1"));
		await turn();
		const swap = storage.compareAndSwap(p, utf8("chain"), utf8("1"), utf8("2"), 0);
		await turn();
		held.release();
		await put;
		expect(await swap).toBe(true);
		expect(await storage.get(p, utf8("chain"))).toEqual(utf8("2"));
	});
});
