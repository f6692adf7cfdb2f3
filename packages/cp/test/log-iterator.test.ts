import { utf8 } from "@vvm/ttlstorage";
import { withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { plogPKey, u64 } from "../src/keys.ts";
import { iterateLog } from "../src/log-iterator.ts";

async function logOf(offsets: Iterable<number>) {
	const storage = withFaults(createMemTTLStorage());
	const items = [...offsets].map((o) => ({
		pKey: plogPKey(1, 0, Math.floor(o / 4096)),
		cCols: u64(o),
		value: utf8(`e${o}`),
	}));
	for (let i = 0; i < items.length; i += 500) await storage.putBatch(items.slice(i, i + 500));
	const read = async (from: number): Promise<number[]> => {
		const out: number[] = [];
		for await (const e of iterateLog(storage, (b) => plogPKey(1, 0, b), from)) out.push(e.offset);
		return out;
	};
	return { storage, read };
}

const range = (a: number, b: number): number[] =>
	Array.from({ length: b - a + 1 }, (_, i) => a + i);

describe("iterateLog", () => {
	it("crosses buckets in order, one range read per bucket, starting at the wanted offset", async () => {
		const { storage, read } = await logOf(range(1, 4100));
		expect(await read(1)).toEqual(range(1, 4100));
		expect(storage.count("read")).toBe(2);
		expect(await read(4090)).toEqual(range(4090, 4100));
		expect(storage.count("read")).toBe(4);
		expect(storage.calls.at(-2)?.args[1]).toEqual({ from: u64(4090) });
		expect(await read(4096)).toEqual(range(4096, 4100));
		expect(storage.count("read")).toBe(5);
		expect(await read(4101)).toEqual([]);
	});

	it("ends at the first gap, even across buckets", async () => {
		expect(await (await logOf([1, 2, 3, 5, 6])).read(1)).toEqual([1, 2, 3]);
		const full = await logOf([...range(1, 4095), 4097]);
		expect(await full.read(1)).toEqual(range(1, 4095));
		// The bucket was full, so the next one was read too (and offset 4096 was missing).
		expect(full.storage.count("read")).toBe(2);
		expect(await (await logOf([2, 3])).read(1)).toEqual([]);
	});
});
