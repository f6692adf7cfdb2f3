import { describe, expect, it } from "vitest";
import {
	MAX_KEY_BYTES,
	MAX_TTL_SECONDS,
	MAX_VALUE_BYTES,
	validateBatch,
	validateKey,
	validateRange,
	validateTTL,
	validateValue,
} from "../src/index.ts";

const b = (n: number) => new Uint8Array(n);

describe("validation", () => {
	it("accepts keys up to the limit and an empty cCols", () => {
		expect(() => validateKey(b(1), b(0))).not.toThrow();
		expect(() => validateKey(b(MAX_KEY_BYTES - 4), b(4))).not.toThrow();
	});

	it("rejects an empty pKey, an oversized key and non-bytes, naming the problem", () => {
		expect(() => validateKey(b(0), b(1))).toThrow(/pKey must not be empty/);
		expect(() => validateKey(b(MAX_KEY_BYTES), b(1))).toThrow(/1025 bytes.*limit is 1024/);
		expect(() => validateKey("p" as unknown as Uint8Array, b(1))).toThrow(TypeError);
		expect(() => validateKey(b(1), [1] as unknown as Uint8Array)).toThrow(
			/cCols must be a Uint8Array/,
		);
	});

	it("checks value sizes", () => {
		expect(() => validateValue(b(MAX_VALUE_BYTES))).not.toThrow();
		expect(() => validateValue(b(0))).not.toThrow();
		expect(() => validateValue(b(MAX_VALUE_BYTES + 1), "newValue")).toThrow(
			/newValue is 65537 bytes/,
		);
		expect(() => validateValue(null as unknown as Uint8Array)).toThrow(TypeError);
	});

	it("allows TTL 0..MAX_TTL_SECONDS integers only", () => {
		for (const ok of [0, 1, MAX_TTL_SECONDS]) expect(() => validateTTL(ok)).not.toThrow();
		for (const bad of [
			-1,
			0.5,
			MAX_TTL_SECONDS + 1,
			Number.NaN,
			Number.POSITIVE_INFINITY,
			"5" as unknown as number,
		]) {
			expect(() => validateTTL(bad)).toThrow(RangeError);
		}
	});

	it("names the bad item of a batch", () => {
		const good = { pKey: b(1), cCols: b(1), value: b(1) };
		expect(() => validateBatch([good, good])).not.toThrow();
		expect(() => validateBatch([good, { ...good, ttlSeconds: -1 }])).toThrow(/putBatch item 1/);
		expect(() => validateBatch("x" as unknown as [])).toThrow(TypeError);
	});

	it("checks range bounds", () => {
		expect(() => validateRange(undefined, b(1))).not.toThrow();
		expect(() => validateRange("a" as unknown as Uint8Array, undefined)).toThrow(TypeError);
	});
});
