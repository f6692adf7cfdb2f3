import { describe, expect, it } from "vitest";
import {
	BUCKET_SIZE,
	cpKeys,
	PKEY_PREFIX_PLOG,
	PKEY_PREFIX_RECORDS,
	PKEY_PREFIX_WLOG,
	partitionOf,
} from "../src/index.ts";
import { hex, readU64, u64 } from "../src/keys.ts";

describe("key layouts", () => {
	it("prefixes follow the VVM storage's 1..4 and never collide", () => {
		expect([PKEY_PREFIX_PLOG, PKEY_PREFIX_WLOG, PKEY_PREFIX_RECORDS]).toEqual([5, 6, 7]);
		expect(BUCKET_SIZE).toBe(4096);
	});

	it("PLog: u32(5) u32(appId) u16(partition) u64(offset / 4096), cCols u64(offset)", () => {
		const k = cpKeys.plog(0x01020304, 0x0506, 4097);
		expect(hex(k.pKey)).toBe(`00000005010203040506${"0000000000000001"}`);
		expect(hex(k.cCols)).toBe("0000000000001001");
		expect(hex(cpKeys.plog(1, 0, 4095).pKey).endsWith("0000000000000000")).toBe(true);
	});

	it("WLog and records: u32(prefix) u32(appId) u64(wsid) u64(n / 4096), cCols u64(n)", () => {
		const w = cpKeys.wlog(7, 1001, 1);
		expect(hex(w.pKey)).toBe("00000006" + "00000007" + "00000000000003e9" + "0000000000000000");
		expect(hex(w.cCols)).toBe("0000000000000001");
		const r = cpKeys.record(7, 1001, 322_685_000_131_072);
		expect(hex(r.pKey)).toBe(
			"00000007" +
				"00000007" +
				"00000000000003e9" +
				Math.floor(322_685_000_131_072 / 4096)
					.toString(16)
					.padStart(16, "0"),
		);
		expect(readU64(r.cCols)).toBe(322_685_000_131_072);
	});

	it("u64 round-trips safe integers; anything else reads as undefined", () => {
		for (const n of [0, 1, 4095, 2 ** 32, 2 ** 53 - 1]) expect(readU64(u64(n))).toBe(n);
		expect(readU64(new Uint8Array(7))).toBeUndefined();
		expect(readU64(new Uint8Array(8).fill(0xff))).toBeUndefined();
	});

	it("partitionOf is wsid mod partitions, with checked arguments", () => {
		expect(partitionOf(1001, 10)).toBe(1);
		expect(partitionOf(7, 1)).toBe(0);
		expect(() => partitionOf(0, 10)).toThrow(RangeError);
		expect(() => partitionOf(1.5, 10)).toThrow(RangeError);
		expect(() => partitionOf(1, 0)).toThrow(RangeError);
		expect(() => partitionOf(1, 65_537)).toThrow(RangeError);
	});
});
