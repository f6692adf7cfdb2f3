import { MockClock } from "@vvm/clock";
import type { SeqValue } from "@vvm/isequencer";
import { createSequencer } from "@vvm/isequencer";
import { TTLStorageError } from "@vvm/ttlstorage";

import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { createMemPLog, createSeqStorage, SeqStorageError } from "../src/index.ts";

function make(appId = 1, partitionId = 0, atomicBatches = true) {
	const clock = new MockClock(0);
	// "ordered" fencing: batches are not all or nothing (as on Cassandra).
	const mem = createMemTTLStorage({ clock, ...(atomicBatches ? {} : { fencing: "ordered" }) });
	const ttl = withFaults(mem, { clock });
	const plog = createMemPLog();
	const storage = createSeqStorage({ storage: ttl, appId, partitionId, plog });
	return { ttl, plog, storage, clock };
}

const bytes = (...xs: number[]) => Uint8Array.from(xs);

describe("ReadWrite (voedger TestReadWrite)", () => {
	it("reads 1 as the next offset and 0 for missing numbers on a fresh storage", async () => {
		const { storage } = make();
		expect(await storage.readNextPLogOffset()).toBe(1);
		expect(await storage.readNumbers(1, [])).toEqual([]);
		expect(await storage.readNumbers(1, [1])).toEqual([0]);
		expect(await storage.readNumbers(1, [1, 2])).toEqual([0, 0]);
	});

	it("writes numbers and offsets and reads them back positionally", async () => {
		const { storage } = make();
		for (let c = 0; c < 5; c++) {
			await storage.writeValuesAndNextPLogOffset(
				[
					{ wsid: 1, seqId: 1, value: 1 + c },
					{ wsid: 1, seqId: 2, value: 6 + c },
					{ wsid: 1, seqId: 3, value: 8 + c },
					{ wsid: 2, seqId: 1, value: 3 + c },
					{ wsid: 2, seqId: 2, value: 1 + c },
				],
				42 + c,
			);
			expect(await storage.readNumbers(1, [])).toEqual([]);
			expect(await storage.readNumbers(1, [1])).toEqual([1 + c]);
			expect(await storage.readNumbers(1, [2])).toEqual([6 + c]);
			expect(await storage.readNumbers(1, [3])).toEqual([8 + c]);
			expect(await storage.readNumbers(1, [4])).toEqual([0]);
			expect(await storage.readNumbers(1, [1, 2])).toEqual([1 + c, 6 + c]);
			expect(await storage.readNumbers(1, [1, 2, 3])).toEqual([1 + c, 6 + c, 8 + c]);
			expect(await storage.readNumbers(1, [1, 2, 3, 4])).toEqual([1 + c, 6 + c, 8 + c, 0]);
			expect(await storage.readNumbers(1, [4, 3, 2, 1])).toEqual([0, 8 + c, 6 + c, 1 + c]);
			expect(await storage.readNumbers(2, [2, 1, 3])).toEqual([1 + c, 3 + c, 0]);
			expect(await storage.readNextPLogOffset()).toBe(42 + c);
		}
	});

	it("round-trips numbers above 2^32 (voedger record IDs)", async () => {
		const { storage } = make();
		await storage.writeValuesAndNextPLogOffset(
			[{ wsid: 2 ** 40 + 7, seqId: 65535, value: 322_685_000_131_072 }],
			2 ** 33,
		);
		expect(await storage.readNumbers(2 ** 40 + 7, [65535])).toEqual([322_685_000_131_072]);
		expect(await storage.readNextPLogOffset()).toBe(2 ** 33);
	});
});

describe("key layout (reference §4.2)", () => {
	it("stores numbers and the offset under voedger's keys, big-endian", async () => {
		const { storage, ttl } = make(0x01020304, 0x0506);
		await storage.writeValuesAndNextPLogOffset(
			[{ wsid: 0x0a0b0c0d0e0f, seqId: 0x0102, value: 0x0102030405 }],
			0x0708,
		);
		const numberPKey = bytes(0, 0, 0, 3, 1, 2, 3, 4, 0, 0, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f);
		expect(await ttl.get(numberPKey, bytes(1, 2))).toEqual(bytes(0, 0, 0, 1, 2, 3, 4, 5));
		const offsetPKey = bytes(0, 0, 0, 2, 1, 2, 3, 4, 5, 6);
		expect(await ttl.get(offsetPKey, bytes(0, 0, 0, 0))).toEqual(bytes(0, 0, 0, 0, 0, 0, 7, 8));
		expect(await ttl.queryTTL(offsetPKey, bytes(0, 0, 0, 0))).toBe(0);
	});

	it("keeps offsets per (app, partition) and numbers per (app, workspace)", async () => {
		const clock = new MockClock(0);
		const ttl = createMemTTLStorage({ clock });
		const plog = createMemPLog();
		const a0 = createSeqStorage({ storage: ttl, appId: 1, partitionId: 0, plog });
		const a1 = createSeqStorage({ storage: ttl, appId: 1, partitionId: 1, plog });
		const b0 = createSeqStorage({ storage: ttl, appId: 2, partitionId: 0, plog });
		await a0.writeValuesAndNextPLogOffset([{ wsid: 5, seqId: 1, value: 10 }], 11);
		expect(await a1.readNextPLogOffset()).toBe(1);
		expect(await b0.readNextPLogOffset()).toBe(1);
		expect(await a1.readNumbers(5, [1])).toEqual([10]);
		expect(await b0.readNumbers(5, [1])).toEqual([0]);
	});

	it("reports a corrupted value instead of decoding garbage", async () => {
		const { storage, ttl } = make();
		await ttl.put(bytes(0, 0, 0, 2, 0, 0, 0, 1, 0, 0), bytes(0, 0, 0, 0), bytes(1, 2, 3));
		await expect(storage.readNextPLogOffset()).rejects.toSatisfy(
			(e: unknown) => SeqStorageError.is(e) && e.code === "SEQSTORAGE_CORRUPTED_VALUE",
		);
	});
});

describe("errors and validation", () => {
	it("writes the numbers and the offset in one batch over an atomic storage; errors propagate", async () => {
		const { storage, ttl } = make();
		ttl.inject({ on: "putBatch", action: faults.fail("TTLSTORAGE_UNAVAILABLE"), times: 1 });
		await expect(
			storage.writeValuesAndNextPLogOffset([{ wsid: 1, seqId: 1, value: 9 }], 5),
		).rejects.toSatisfy(
			(e: unknown) => TTLStorageError.is(e) && e.code === "TTLSTORAGE_UNAVAILABLE",
		);
		// All or nothing: neither landed.
		expect(await storage.readNumbers(1, [1])).toEqual([0]);
		expect(await storage.readNextPLogOffset()).toBe(1);
		await storage.writeValuesAndNextPLogOffset([{ wsid: 1, seqId: 1, value: 10 }], 6);
		expect(ttl.count("put")).toBe(0);
		expect(ttl.count("putBatch")).toBe(2);
		expect(await storage.readNumbers(1, [1])).toEqual([10]);
		expect(await storage.readNextPLogOffset()).toBe(6);
	});

	it("writes the numbers first, then the offset over a non-atomic storage; errors propagate", async () => {
		const { storage, ttl } = make(1, 0, false);
		ttl.inject({ on: "put", action: faults.fail("TTLSTORAGE_UNAVAILABLE"), times: 1 });
		await expect(
			storage.writeValuesAndNextPLogOffset([{ wsid: 1, seqId: 1, value: 9 }], 5),
		).rejects.toSatisfy(
			(e: unknown) => TTLStorageError.is(e) && e.code === "TTLSTORAGE_UNAVAILABLE",
		);
		expect(await storage.readNumbers(1, [1])).toEqual([9]);
		expect(await storage.readNextPLogOffset()).toBe(1);
		ttl.inject({ on: "putBatch", action: faults.fail(), times: 1 });
		await expect(
			storage.writeValuesAndNextPLogOffset([{ wsid: 1, seqId: 1, value: 10 }], 6),
		).rejects.toBeInstanceOf(TTLStorageError);
		expect(ttl.count("put")).toBe(1);
		expect(await storage.readNextPLogOffset()).toBe(1);
	});

	it("rejects bad arguments before any I/O", async () => {
		const { storage, ttl } = make();
		await expect(storage.readNumbers(-1, [1])).rejects.toBeInstanceOf(RangeError);
		await expect(storage.readNumbers(1, [70_000])).rejects.toBeInstanceOf(RangeError);
		await expect(
			storage.writeValuesAndNextPLogOffset([{ wsid: 1, seqId: 1, value: 1.5 }], 2),
		).rejects.toBeInstanceOf(RangeError);
		await expect(storage.writeValuesAndNextPLogOffset([], 0)).rejects.toBeInstanceOf(RangeError);
		expect(ttl.calls).toHaveLength(0);
		expect(() =>
			createSeqStorage({ storage: ttl, appId: -1, partitionId: 0, plog: createMemPLog() }),
		).toThrow(RangeError);
		expect(() =>
			createSeqStorage({ storage: ttl, appId: 1, partitionId: 65536, plog: createMemPLog() }),
		).toThrow(RangeError);
	});
});

describe("SequenceActualization", () => {
	const v = (wsid: number, seqId: number, value: number): SeqValue => ({ wsid, seqId, value });

	it("sends every event from the offset, in order, with its offset; awaits an async batcher", async () => {
		const { storage, plog } = make();
		plog.append(1, [v(1, 1, 1)]);
		plog.append(2, []);
		plog.append(3, [v(2, 5, 2), v(2, 4, 9)]);
		plog.append(4, [v(3, 1, 3)]);
		const seen: Array<[number, SeqValue[]]> = [];
		let inside = false;
		await storage.actualizeSequencesFromPLog(
			2,
			async (batch, offset) => {
				expect(inside).toBe(false);
				inside = true;
				await new Promise((r) => setImmediate(r));
				seen.push([offset, [...batch]]);
				inside = false;
			},
			new AbortController().signal,
		);
		expect(seen).toEqual([
			[2, []],
			[3, [v(2, 5, 2), v(2, 4, 9)]],
			[4, [v(3, 1, 3)]],
		]);
	});

	it("stops when the signal aborts", async () => {
		const { storage, plog } = make();
		for (let o = 1; o <= 10; o++) plog.append(o, [v(1, 1, o)]);
		const ctl = new AbortController();
		const seen: number[] = [];
		await expect(
			storage.actualizeSequencesFromPLog(
				1,
				(_b, offset) => {
					seen.push(offset);
					if (offset === 3) ctl.abort(new Error("stop"));
				},
				ctl.signal,
			),
		).rejects.toThrow("stop");
		expect(seen).toEqual([1, 2, 3]);
	});

	it("the mem PLog refuses offsets that do not increase", () => {
		const plog = createMemPLog();
		plog.append(1);
		expect(() => plog.append(1)).toThrow(RangeError);
		expect(() => plog.append(0)).toThrow(RangeError);
		expect(plog.lastOffset).toBe(1);
	});
});

describe("with @vvm/isequencer", () => {
	it("a sequencer continues where the previous one stopped, from storage and the PLog", async () => {
		const { storage, plog, clock } = make();
		const seqTypes = { 1: { 1: 1, 2: 200_001 } };
		const waitStart = async (
			s: { start(k: number, w: number): number | undefined },
			ws: number,
		) => {
			for (let i = 0; i < 200; i++) {
				const o = s.start(1, ws);
				if (o !== undefined) return o;
				await new Promise((r) => setImmediate(r));
			}
			throw new Error("start not ok");
		};
		const first = createSequencer({ seqTypes }, storage, { clock });
		let o = await waitStart(first.sequencer, 10);
		expect(o).toBe(1);
		const wlog = await first.sequencer.next(1);
		const rec = await first.sequencer.next(2);
		expect([wlog, rec]).toEqual([1, 200_001]);
		plog.append(o, [
			{ wsid: 10, seqId: 1, value: wlog },
			{ wsid: 10, seqId: 2, value: rec },
		]);
		first.sequencer.flush();
		for (let i = 0; i < 100 && first.sequencer.stats().unflushedValues > 0; i++)
			await new Promise((r) => setImmediate(r));
		expect(await storage.readNextPLogOffset()).toBe(2);
		// One more event reaches the PLog but its flush is lost in a crash.
		o = await waitStart(first.sequencer, 10);
		plog.append(o, [{ wsid: 10, seqId: 2, value: await first.sequencer.next(2) }]);
		await first.cleanup();
		const second = createSequencer({ seqTypes }, storage, { clock });
		expect(await waitStart(second.sequencer, 10)).toBe(3);
		expect(await second.sequencer.next(1)).toBe(2);
		expect(await second.sequencer.next(2)).toBe(200_003);
		await second.cleanup();
	});
});

describe("with a workspace log: stored numbers are a hint, the log is the truth", () => {
	/** A workspace log in memory: entries (offset → the values it took) per workspace. */
	function memWLog() {
		const logs = new Map<number, Map<number, SeqValue[]>>();
		return {
			append(wsid: number, offset: number, values: SeqValue[]) {
				const log = logs.get(wsid) ?? new Map<number, SeqValue[]>();
				log.set(offset, values);
				logs.set(wsid, log);
			},
			wlog: {
				seqId: 1,
				async *read(wsid: number, from: number) {
					const log = logs.get(wsid);
					for (let o = Math.max(1, from); log?.has(o); o++) yield log.get(o) as SeqValue[];
				},
			},
		};
	}
	const take = (wsid: number, wlog: number, id: number): SeqValue[] => [
		{ wsid, seqId: 1, value: wlog },
		{ wsid, seqId: 2, value: id },
	];

	it("a deposed writer's late, lower numbers are healed from the log on the next read", async () => {
		const ttl = createMemTTLStorage({ clock: new MockClock(0) });
		const plog = createMemPLog();
		const log = memWLog();
		const storage = createSeqStorage({
			storage: ttl,
			appId: 1,
			partitionId: 0,
			plog,
			wlog: log.wlog,
		});
		for (let w = 1; w <= 5; w++) log.append(7, w, take(7, w, 100 + w));
		await storage.writeValuesAndNextPLogOffset(take(7, 5, 105), 11);
		expect(await storage.readNumbers(7, [1, 2])).toEqual([5, 105]);
		// The late flush of a deposed writer: numbers as of WLog offset 2.
		await storage.writeValuesAndNextPLogOffset(take(7, 2, 102), 6);
		expect(await storage.readNumbers(7, [1, 2])).toEqual([5, 105]);
		// Only one of the keys went back (a batch applied in part, late).
		await storage.writeValuesAndNextPLogOffset(take(7, 5, 105), 11);
		await storage.writeValuesAndNextPLogOffset([{ wsid: 7, seqId: 2, value: 101 }], 11);
		expect(await storage.readNumbers(7, [1, 2])).toEqual([5, 105]);
		// Without the log, the stored numbers are what is read: the control.
		const trusting = createSeqStorage({ storage: ttl, appId: 1, partitionId: 0, plog });
		expect(await trusting.readNumbers(7, [1, 2])).toEqual([5, 101]);
	});

	it("pointReads: the same numbers and healing, with one get per needed number and no range read", async () => {
		const clock = new MockClock(0);
		const ttl = withFaults(createMemTTLStorage({ clock }), { clock });
		const log = memWLog();
		const starts: number[] = [];
		const storage = createSeqStorage({
			storage: ttl,
			appId: 1,
			partitionId: 0,
			plog: createMemPLog(),
			pointReads: true,
			wlog: {
				seqId: 1,
				read(wsid, from) {
					starts.push(from);
					return log.wlog.read(wsid, from);
				},
			},
		});
		expect(await storage.readNumbers(7, [2])).toEqual([0]);
		for (let w = 1; w <= 5; w++) log.append(7, w, take(7, w, 100 + w));
		await storage.writeValuesAndNextPLogOffset(
			[...take(7, 5, 105), { wsid: 7, seqId: 3, value: 9 }],
			11,
		);
		// A deposed writer's late flush, as of WLog offset 2: healed from the log.
		await storage.writeValuesAndNextPLogOffset(take(7, 2, 102), 6);
		const gets = ttl.count("get");
		expect(await storage.readNumbers(7, [2])).toEqual([105]);
		// The asked number and the log's: two gets, not the unasked sequence 3.
		expect(ttl.count("get") - gets).toBe(2);
		expect(starts).toEqual([3]);
		expect(await storage.readNumbers(7, [1, 2, 3])).toEqual([5, 105, 9]);
		expect(ttl.count("read")).toBe(0);
	});

	it("reads the log only from where the asked numbers are valid: a number taken long ago and not asked does not move the start", async () => {
		const ttl = createMemTTLStorage({ clock: new MockClock(0) });
		const log = memWLog();
		const starts: number[] = [];
		const storage = createSeqStorage({
			storage: ttl,
			appId: 1,
			partitionId: 0,
			plog: createMemPLog(),
			wlog: {
				seqId: 1,
				read(wsid, from) {
					starts.push(from);
					return log.wlog.read(wsid, from);
				},
			},
		});
		// Sequence 3 was last taken at WLog offset 1; 1 and 2 move on to offset 50.
		log.append(9, 1, [...take(9, 1, 301), { wsid: 9, seqId: 3, value: 7 }]);
		await storage.writeValuesAndNextPLogOffset(
			[...take(9, 1, 301), { wsid: 9, seqId: 3, value: 7 }],
			2,
		);
		for (let w = 2; w <= 50; w++) log.append(9, w, take(9, w, 300 + w));
		await storage.writeValuesAndNextPLogOffset(take(9, 50, 350), 51);
		expect(await storage.readNumbers(9, [1, 2])).toEqual([50, 350]);
		expect(starts).toEqual([51]);
		// Asked for, sequence 3 is read from where it is valid.
		expect(await storage.readNumbers(9, [1, 2, 3])).toEqual([50, 350, 7]);
		expect(starts).toEqual([51, 2]);
	});

	it("reads numbers stored before the log offset was (8-byte values): valid as of the stored log number", async () => {
		const ttl = createMemTTLStorage({ clock: new MockClock(0) });
		const old = createSeqStorage({ storage: ttl, appId: 1, partitionId: 0, plog: createMemPLog() });
		await old.writeValuesAndNextPLogOffset(take(8, 3, 203), 4);
		const log = memWLog();
		for (let w = 1; w <= 4; w++) log.append(8, w, take(8, w, 200 + w));
		const storage = createSeqStorage({
			storage: ttl,
			appId: 1,
			partitionId: 0,
			plog: createMemPLog(),
			wlog: log.wlog,
		});
		expect(await storage.readNumbers(8, [1, 2])).toEqual([4, 204]);
	});

	it("refuses a bad workspace log option", () => {
		const ttl = createMemTTLStorage();
		const plog = createMemPLog();
		expect(() =>
			createSeqStorage({
				storage: ttl,
				appId: 1,
				partitionId: 0,
				plog,
				wlog: { seqId: 1 } as never,
			}),
		).toThrow(TypeError);
		expect(() =>
			createSeqStorage({
				storage: ttl,
				appId: 1,
				partitionId: 0,
				plog,
				wlog: { seqId: 70_000, read: async function* () {} },
			}),
		).toThrow(RangeError);
	});
});
