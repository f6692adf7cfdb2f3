import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { CoalescingStorage } from "../src/write-coalescer.ts";

const item = (k: string, v = k) => ({ pKey: utf8("p"), cCols: utf8(k), value: utf8(v) });

describe("CoalescingStorage", () => {
	it("sends the first write at once and the ones arriving meanwhile as one batch, in order", async () => {
		const inner = withFaults(createMemTTLStorage());
		const c = new CoalescingStorage(inner, { maxInFlight: 1 });
		await Promise.all([
			c.put(utf8("p"), utf8("a"), utf8("1")),
			c.putBatch([item("b"), item("c")]),
			c.putBatch([item("d")]),
		]);
		expect(inner.calls.map((x) => (x.args[0] as unknown[]).length)).toEqual([1, 3]);
		expect(c.batches).toBe(2);
		expect(await inner.get(utf8("p"), utf8("d"))).toEqual(utf8("d"));
	});

	it("a key already waiting starts a new batch, so a later write never overtakes an earlier one", async () => {
		const inner = withFaults(createMemTTLStorage());
		const c = new CoalescingStorage(inner, { maxInFlight: 1 });
		await Promise.all([
			c.putBatch([item("x", "0")]),
			c.putBatch([item("k", "1")]),
			c.putBatch([item("k", "2")]),
			c.putBatch([item("j")]),
		]);
		expect(
			inner.calls.map((x) =>
				(x.args[0] as Array<{ cCols: Uint8Array }>).map((i) => new TextDecoder().decode(i.cCols)),
			),
		).toEqual([["x"], ["k"], ["k", "j"]]);
		expect(await inner.get(utf8("p"), utf8("k"))).toEqual(utf8("2"));
	});

	it("with two batches in flight, a batch waits while one in flight holds any of its keys", async () => {
		const inner = withFaults(createMemTTLStorage());
		const c = new CoalescingStorage(inner, { maxInFlight: 2 });
		const gates: Array<() => void> = [];
		inner.inject({
			on: "putBatch",
			action: faults.hook(() => new Promise<void>((r) => gates.push(r))),
		});
		const names = (n: number): string[] =>
			((inner.calls[n]?.args[0] ?? []) as Array<{ cCols: Uint8Array }>).map((i) =>
				new TextDecoder().decode(i.cCols),
			);
		const all = Promise.all([
			c.putBatch([item("a", "1")]),
			c.putBatch([item("b")]),
			c.putBatch([item("a", "2")]),
		]);
		await new Promise((r) => setImmediate(r));
		// "a" and "b" went out at once; the second "a" waits for the first.
		expect([inner.calls.length, names(0), names(1)]).toEqual([2, ["a"], ["b"]]);
		gates.shift()?.();
		await new Promise((r) => setImmediate(r));
		expect([inner.calls.length, names(2)]).toEqual([3, ["a"]]);
		for (const g of gates.splice(0)) g();
		await new Promise((r) => setImmediate(r));
		for (const g of gates.splice(0)) g();
		await all;
		expect(await inner.get(utf8("p"), utf8("a"))).toEqual(utf8("2"));
	});

	it("a failed batch fails every caller in it and no other; bad items fail only their caller", async () => {
		const inner = withFaults(createMemTTLStorage());
		const c = new CoalescingStorage(inner, { maxInFlight: 1 });
		inner.inject({
			on: "putBatch",
			match: (x) => x.callNumber === 2,
			action: faults.fail("TTLSTORAGE_UNAVAILABLE"),
		});
		const results = await Promise.allSettled([
			c.putBatch([item("a")]),
			c.putBatch([item("b")]),
			c.putBatch([item("c")]),
		]);
		expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "rejected"]);
		const reason = (results[1] as PromiseRejectedResult).reason;
		expect(TTLStorageError.is(reason) && reason.code).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(() =>
			c.putBatch([{ pKey: new Uint8Array(0), cCols: utf8("a"), value: utf8("v") }]),
		).toThrow(RangeError);
		await c.putBatch([item("d")]);
		expect(await inner.get(utf8("p"), utf8("d"))).toEqual(utf8("d"));
		await c.close();
		expect(await inner.get(utf8("p"), utf8("a"))).toEqual(utf8("a"));
	});
});
