import { MockClock } from "@vvm/clock";
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createMemTTLStorage } from "../src/index.ts";

describe("createMemTTLStorage", () => {
	it("removes expired records so memory stays bounded by live records", async () => {
		const clock = new MockClock(0);
		const storage = createMemTTLStorage({ clock, sweepEveryWrites: 100 });
		for (let round = 0; round < 50; round++) {
			for (let i = 0; i < 100; i++)
				await storage.put(utf8(`p${round}`), utf8(`c${i}`), utf8("v"), 1);
			clock.advance(1_000);
		}
		// Each round's records expired before the next round's writes triggered a sweep.
		expect(storage.size).toBeLessThanOrEqual(100);
		expect(storage.sweep()).toBe(100);
		expect(storage.size).toBe(0);
	});

	it("keeps live records through sweeps", async () => {
		const clock = new MockClock(0);
		const storage = createMemTTLStorage({ clock, sweepEveryWrites: 1 });
		await storage.put(utf8("p"), utf8("forever"), utf8("v"));
		await storage.put(utf8("p"), utf8("long"), utf8("v"), 100);
		clock.advance(50_000);
		await storage.put(utf8("p"), utf8("x"), utf8("v"), 1);
		expect(storage.size).toBe(3);
		expect(await storage.get(utf8("p"), utf8("long"))).toEqual(utf8("v"));
	});

	it("stores copies, so later mutation of caller buffers changes nothing", async () => {
		const storage = createMemTTLStorage();
		const value = utf8("abc");
		await storage.put(utf8("p"), utf8("c"), value);
		value[0] = 0;
		const got = await storage.get(utf8("p"), utf8("c"));
		expect(got).toEqual(utf8("abc"));
		got?.fill(0);
		expect(await storage.get(utf8("p"), utf8("c"))).toEqual(utf8("abc"));
	});

	it("rejects a bad sweep setting", () => {
		expect(() => createMemTTLStorage({ sweepEveryWrites: 0 })).toThrow(RangeError);
	});
});
