import { describe, expect, it } from "vitest";
import {
	bytesEqual,
	closedError,
	compareBytes,
	concatBytes,
	expireAtMs,
	fromUtf8,
	inRange,
	isExpired,
	NO_EXPIRY,
	remainingSeconds,
	TTL_STORAGE_ERROR_CODES,
	TTLStorageError,
	u32,
	utf8,
} from "../src/index.ts";

const b = (...x: number[]) => new Uint8Array(x);

describe("bytes", () => {
	it("orders byte strings lexicographically, prefixes first", () => {
		const sorted = [b(1, 0), b(), b(0xff), b(1), b(0, 5)].sort(compareBytes);
		expect(sorted).toEqual([b(), b(0, 5), b(1), b(1, 0), b(0xff)]);
	});

	it("compares, ranges, encodes", () => {
		expect(bytesEqual(b(1, 2), b(1, 2))).toBe(true);
		expect(bytesEqual(b(1, 2), b(1, 3))).toBe(false);
		expect(bytesEqual(b(1), b(1, 0))).toBe(false);
		expect(inRange(b(1), b(1), b(2))).toBe(true);
		expect(inRange(b(2), b(1), b(2))).toBe(false);
		expect(inRange(b(0), undefined, b(1))).toBe(true);
		expect(u32(1)).toEqual(b(0, 0, 0, 1));
		expect(u32(0xdeadbeef)).toEqual(b(0xde, 0xad, 0xbe, 0xef));
		expect(() => u32(-1)).toThrow(RangeError);
		expect(() => u32(2 ** 32)).toThrow(RangeError);
		expect(concatBytes(b(1), b(), b(2, 3))).toEqual(b(1, 2, 3));
		expect(fromUtf8(utf8("ünï"))).toBe("ünï");
		expect(() => fromUtf8(b(0xff, 0xfe))).toThrow(TypeError);
	});
});

describe("expiry", () => {
	it("expires exactly at expireAt and never for ttl 0", () => {
		const at = expireAtMs(1_000, 10);
		expect(at).toBe(11_000);
		expect(isExpired(at, 10_999)).toBe(false);
		expect(isExpired(at, 11_000)).toBe(true);
		expect(expireAtMs(1_000, 0)).toBe(NO_EXPIRY);
		expect(isExpired(NO_EXPIRY, Number.MAX_SAFE_INTEGER)).toBe(false);
	});

	it("reports remaining seconds rounded up", () => {
		expect(remainingSeconds(11_000, 1_000)).toBe(10);
		expect(remainingSeconds(11_000, 10_001)).toBe(1);
		expect(remainingSeconds(11_000, 11_000)).toBeUndefined();
		expect(remainingSeconds(NO_EXPIRY, 5)).toBe(0);
	});
});

describe("TTLStorageError", () => {
	it("carries a stable code, a prefixed message and the cause", () => {
		const cause = new Error("socket hang up");
		const e = new TTLStorageError("TTLSTORAGE_UNAVAILABLE", "no host", {
			driver: "cas",
			operation: "get",
			cause,
		});
		expect(e.code).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(e.message).toBe("[@vvm/ttlstorage-cas] get: no host");
		expect(e.cause).toBe(cause);
		expect(e).toBeInstanceOf(Error);
		expect(TTLStorageError.is(e)).toBe(true);
	});

	it("is() recognises errors from another copy of the package and nothing else", () => {
		const foreign = Object.assign(new Error("x"), {
			[Symbol.for("vvm.error.TTLStorageError")]: true,
		});
		expect(TTLStorageError.is(foreign)).toBe(true);
		expect(TTLStorageError.is(new Error("x"))).toBe(false);
		expect(TTLStorageError.is(null)).toBe(false);
		expect(TTLStorageError.is("TTLSTORAGE_CLOSED")).toBe(false);
	});

	it("lists every code once and builds the closed error", () => {
		expect(new Set(TTL_STORAGE_ERROR_CODES).size).toBe(TTL_STORAGE_ERROR_CODES.length);
		expect([...TTL_STORAGE_ERROR_CODES].sort()).toEqual([
			"TTLSTORAGE_CLOSED",
			"TTLSTORAGE_FAILED",
			"TTLSTORAGE_FENCED",
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			"TTLSTORAGE_THROTTLED",
			"TTLSTORAGE_UNAVAILABLE",
		]);
		const closed = closedError("mem", "put");
		expect(closed.code).toBe("TTLSTORAGE_CLOSED");
		expect(closed.message).toContain("[@vvm/ttlstorage-mem] put:");
	});
});
