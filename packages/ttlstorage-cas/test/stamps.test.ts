// FenceStamps on its own (our logic, with an in-memory fence record and a hand-moved clock).
import { TTLStorageError } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { FenceRowStore } from "../src/stamps.ts";
import {
	decodeFenceRow,
	FenceStamps,
	SERVER_CLOCK_GRANULARITY_MICROS as MS,
	STAMP_OFFSET_MICROS as OFFSET,
	STAMP_RESERVATION_MICROS,
} from "../src/stamps.ts";

function memRows(): FenceRowStore & { rows: Map<string, Uint8Array>; swaps: number } {
	const rows = new Map<string, Uint8Array>();
	const k = (s: Uint8Array) => Buffer.from(s).toString("hex");
	const store = {
		rows,
		swaps: 0,
		async readFenceRow(scope: Uint8Array) {
			return rows.get(k(scope));
		},
		async swapFenceRow(scope: Uint8Array, stored: Uint8Array | undefined, next: Uint8Array) {
			const cur = rows.get(k(scope));
			const same =
				stored === undefined
					? cur === undefined
					: cur !== undefined && Buffer.compare(cur, stored) === 0;
			if (!same) return false;
			store.swaps++;
			rows.set(k(scope), next);
			return true;
		},
	};
	return store;
}

const scope = new Uint8Array([1, 2, 3]);
/** The raise's wait for the clock is tested on its own below; elsewhere it returns at once. */
const noSleep = async (): Promise<void> => {};
const fenced = (e: unknown) => TTLStorageError.is(e) && e.code === "TTLSTORAGE_FENCED";

describe("FenceStamps", () => {
	it("a raise to the epoch this process holds and the row still stores only confirms it: one read, no swap, no wait", async () => {
		// @vvm/cp confirms its fence this way after each level-2 PLog write over "ordered"
		// fencing. Swapping again pushed the ceiling a reservation further each time, and in a
		// process whose epoch followed another's every confirmation then waited ~2 s (found by
		// `pnpm bench`: cold creates on Cassandra at level 2 fell from 173 to 5 per second).
		const rows = memRows();
		const now = 1_000_000_000n;
		const slept: bigint[] = [];
		const a = new FenceStamps(
			rows,
			() => now,
			async (us) => {
				slept.push(us);
			},
		);
		await a.raise(scope, 1n);
		const b = new FenceStamps(
			rows,
			() => now,
			async (us) => {
				slept.push(us);
			},
		);
		await b.raise(scope, 2n); // waits out A's reservation once
		const swaps = rows.swaps;
		const waits = slept.length;
		const before = decodeFenceRow(rows.rows.values().next().value as Uint8Array);
		for (let i = 0; i < 5; i++) {
			await b.next(scope, 2n, "put");
			expect(await b.raise(scope, 2n)).toBe(2n);
		}
		expect(rows.swaps).toBe(swaps);
		expect(slept.length).toBe(waits);
		expect(decodeFenceRow(rows.rows.values().next().value as Uint8Array)).toEqual(before);
		// Superseded meanwhile: the confirmation reads it and refuses.
		const c = new FenceStamps(rows, () => now, noSleep);
		await c.raise(scope, 3n);
		await expect(b.raise(scope, 2n)).rejects.toSatisfy(fenced);
	});

	it("a new epoch's stamps start above every stamp the old epoch could use, whatever the clocks say", async () => {
		const rows = memRows();
		let nowA = 1_000_000_000n;
		const a = new FenceStamps(rows, () => nowA, noSleep);
		expect(await a.raise(scope, 1n)).toBe(1n);
		const aStamps: bigint[] = [];
		for (let i = 0; i < 50; i++) aStamps.push(await a.next(scope, 1n, "put"));
		// B's clock is far behind A's: ordering must not depend on it.
		const b = new FenceStamps(rows, () => 5n, noSleep);
		expect(await b.raise(scope, 2n)).toBe(2n);
		const firstB = await b.next(scope, 2n, "put");
		const ceilingA = decodeFenceRow(rows.rows.values().next().value as Uint8Array);
		expect(ceilingA.epoch).toBe(2n);
		for (const s of aStamps) expect(s).toBeLessThan(firstB);
		// A, still running on its reservation, keeps stamping below B's floor (its writes lose) ...
		nowA += 1n;
		const lateA = await a.next(scope, 1n, "put");
		expect(lateA).toBeLessThan(firstB);
		// ... until it must extend: then it learns it was superseded.
		nowA += STAMP_RESERVATION_MICROS;
		const e = await a.next(scope, 1n, "put").catch((x: unknown) => x);
		expect(fenced(e), String(e)).toBe(true);
	});

	it("nextAll takes a batch's stamps at its call: a write called after the batch stamps above all of them (F2)", async () => {
		const now = 10_000_000n;
		const s = new FenceStamps(memRows(), () => now, noSleep);
		await s.raise(scope, 1n);
		const f = { scope, epoch: 1n };
		const batch = s.nextAll([f, f, f], "putBatch");
		const after = s.next(scope, 1n, "put"); // called after the batch, before it resolved
		const stamps = await batch;
		expect(stamps).toHaveLength(3);
		expect(stamps[0] as bigint).toBeLessThan(stamps[1] as bigint);
		expect(stamps[1] as bigint).toBeLessThan(stamps[2] as bigint);
		for (const stamp of stamps) expect(stamp).toBeLessThan(await after);
		// An epoch this process has not raised yet: raised first, then every stamp taken at once.
		const g = { scope: new Uint8Array([7]), epoch: 3n };
		const raised = await s.nextAll([g, f, g], "putBatch");
		expect(raised).toHaveLength(3);
		expect(raised[0] as bigint).toBeLessThan(raised[2] as bigint);
		// A superseded epoch is refused.
		await s.raise(scope, 2n);
		const e = await s.nextAll([g, f], "putBatch").catch((x: unknown) => x);
		expect(fenced(e), String(e)).toBe(true);
	});

	it("stamps grow strictly within an epoch, even with a stopped or backward clock", async () => {
		let now = 10_000_000n;
		const s = new FenceStamps(memRows(), () => now, noSleep);
		await s.raise(scope, 7n);
		let last = 0n;
		for (let i = 0; i < 100; i++) {
			if (i === 50) now -= 3_000_000n;
			const stamp = await s.next(scope, 7n, "put");
			expect(stamp).toBeGreaterThan(last);
			last = stamp;
		}
	});

	it("extends its reservation in the background before it runs out, with one LWT at a time", async () => {
		const rows = memRows();
		let now = 0n;
		const s = new FenceStamps(rows, () => now, noSleep);
		await s.raise(scope, 1n);
		expect(rows.swaps).toBe(1);
		now = STAMP_RESERVATION_MICROS / 2n + 1n; // less than half left
		await Promise.all(Array.from({ length: 10 }, () => s.next(scope, 1n, "put")));
		await new Promise((r) => setImmediate(r));
		expect(rows.swaps).toBe(2);
		now = STAMP_RESERVATION_MICROS * 3n; // past the ceiling: the write waits for the extension
		const stamp = await s.next(scope, 1n, "put");
		expect(stamp).toBe(now + OFFSET); // above any Paxos timestamp of this millisecond
		expect(decodeFenceRow([...rows.rows.values()][0] as Uint8Array).ceiling).toBeGreaterThan(stamp);
	});

	it("a raise waits until its clock passed the old epoch's ceiling (at most one reservation), so its lightweight transactions land above every old stamp", async () => {
		const rows = memRows();
		let now = 1_000_000_000n;
		const waits: bigint[] = [];
		const sleep = async (micros: bigint): Promise<void> => {
			waits.push(micros);
			now += micros;
		};
		const a = new FenceStamps(rows, () => now, sleep);
		await a.raise(scope, 1n);
		expect(waits).toEqual([]); // nobody wrote before: nothing to wait for
		const lastA = await a.next(scope, 1n, "put");
		const ceilingA = decodeFenceRow([...rows.rows.values()][0] as Uint8Array).ceiling;
		expect(lastA).toBe(1_000_000_000n + OFFSET);
		now += 100_000n; // B takes over 0.1 s later
		const b = new FenceStamps(rows, () => now, sleep);
		await b.raise(scope, 2n);
		// Until the millisecond after the old ceiling: Paxos timestamps are whole milliseconds.
		expect(waits).toEqual([ceilingA + MS - (1_000_000_000n + 100_000n)]);
		expect(now).toBeGreaterThan(ceilingA);
		// B's stamps are back at its clock (its next millisecond), not ahead of it.
		expect(await b.next(scope, 2n, "put")).toBe(now + OFFSET);
		// A new epoch after one of this process's own starts above its last stamp: it waits only
		// until the clock has passed that stamp's millisecond (at most about two).
		const before = waits.length;
		now += 10n;
		await b.raise(scope, 3n);
		expect(waits.length).toBe(before + 1);
		expect(waits.at(-1)).toBeLessThanOrEqual(MS);
		expect(await b.next(scope, 3n, "put")).toBe((now / MS) * MS + OFFSET);
		// A clock far behind waits one reservation at most.
		const c = new FenceStamps(rows, () => 5n, sleep);
		await c.raise(scope, 4n);
		expect(waits.at(-1)).toBe(STAMP_RESERVATION_MICROS);
	});

	it("refuses a lower epoch at raise and at the first write, and counts without one", async () => {
		const rows = memRows();
		const s = new FenceStamps(rows, () => 1n, noSleep);
		expect(await s.raise(scope, undefined)).toBe(1n);
		expect(await s.raise(scope, undefined)).toBe(2n);
		expect(fenced(await s.raise(scope, 1n).catch((e: unknown) => e))).toBe(true);
		const other = new FenceStamps(rows, () => 1n, noSleep);
		expect(fenced(await other.next(scope, 1n, "put").catch((e: unknown) => e))).toBe(true);
		expect(() => s.check(scope, 1n, "compareAndSwap")).toThrow(/superseded by epoch 2/);
	});
	it("a raise in this process while a write of the old epoch waits for its extension: that write is refused, never stamped above the new epoch's floor", async () => {
		const rows = memRows();
		// The extension's swap is applied at once, its answer held until released.
		let holdReply: Promise<void> | undefined;
		let release!: () => void;
		let swapped!: () => void;
		const applied = new Promise<void>((r) => {
			swapped = r;
		});
		const store: FenceRowStore = {
			readFenceRow: (sc) => rows.readFenceRow(sc),
			async swapFenceRow(sc, stored, next) {
				const ok = await rows.swapFenceRow(sc, stored, next);
				if (holdReply !== undefined) {
					const held = holdReply;
					holdReply = undefined;
					swapped();
					await held;
				}
				return ok;
			},
		};
		let now = 1_000_000_000n;
		const s = new FenceStamps(store, () => now, noSleep);
		await s.raise(scope, 1n);
		await s.next(scope, 1n, "put");
		holdReply = new Promise<void>((r) => {
			release = r;
		});
		now += STAMP_RESERVATION_MICROS * 2n; // past the ceiling: the next write waits to extend
		const old = s.next(scope, 1n, "put").then(
			(stamp) => ({ stamp }),
			(error: unknown) => ({ error }),
		);
		await applied; // the extension is stored; its answer has not come back
		expect(await s.raise(scope, 2n)).toBe(2n);
		const floor = await s.next(scope, 2n, "put");
		release();
		const result = await old;
		expect(
			"error" in result && fenced(result.error),
			JSON.stringify(result, (_k, v) => (typeof v === "bigint" ? String(v) : v)),
		).toBe(true);
		expect(await s.next(scope, 2n, "put")).toBeGreaterThan(floor);
	});

	it("starts stamps in the middle of the millisecond and settles a stamp once the clock passed its millisecond, both moved by the skew", async () => {
		let now = 5_000_123n;
		const waits: bigint[] = [];
		const sleep = async (micros: bigint): Promise<void> => {
			waits.push(micros);
			now += micros;
		};
		const s = new FenceStamps(memRows(), () => now, sleep);
		await s.raise(scope, 1n);
		const stamp = await s.next(scope, 1n, "put");
		expect(stamp).toBe(5_000_500n);
		await s.settle(stamp);
		expect(now).toBe(5_001_000n); // every Paxos timestamp from here on is above the stamp
		await s.settle(stamp);
		expect(waits).toEqual([877n]); // settled: no second wait
		const skewed = new FenceStamps(memRows(), () => now, sleep, 3_000n);
		await skewed.raise(scope, 1n);
		const late = await skewed.next(scope, 1n, "put");
		expect(late).toBe(now + 3_000n + OFFSET);
		await skewed.settle(late);
		expect(now).toBe(late + OFFSET + 3_000n);
		// A clock set back by an hour: the wait is capped (1 ms + twice the skew), not an hour.
		const before = now;
		now -= 3_600_000_000n;
		await skewed.settle(await skewed.next(scope, 1n, "put"));
		expect(now - (before - 3_600_000_000n)).toBe(MS + 6_000n);
	});
	it("a write waiting for an extension whose outcome is unknown was never sent: UNAVAILABLE, not OUTCOME_UNKNOWN", async () => {
		const rows = memRows();
		let lost = false;
		const store: FenceRowStore = {
			readFenceRow: (sc) => rows.readFenceRow(sc),
			async swapFenceRow(sc, stored, next) {
				if (!lost) return rows.swapFenceRow(sc, stored, next);
				await rows.swapFenceRow(sc, stored, next); // applied, and its answer lost
				throw new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "timed out");
			},
		};
		let now = 1_000_000_000n;
		const s = new FenceStamps(store, () => now, noSleep);
		await s.raise(scope, 1n);
		lost = true;
		now += STAMP_RESERVATION_MICROS * 2n; // past the ceiling: the write waits for the extension
		const e = await s.next(scope, 1n, "put").catch((x: unknown) => x);
		expect(TTLStorageError.is(e) && e.code).toBe("TTLSTORAGE_UNAVAILABLE");
		lost = false;
		expect(rows.swaps).toBe(2); // the raise, and the extension whose answer was lost
		// The next write extends again (from the record, which holds the lost extension) and goes.
		expect(await s.next(scope, 1n, "put")).toBe(now + OFFSET);
	});
});
