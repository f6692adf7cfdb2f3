import { describe, expect, it } from "vitest";
import { createLeaderValue, parseLeaderValue } from "../src/index.ts";

describe("leader value", () => {
	it("is the address plus a fresh nonce: never equal for the same address", () => {
		const a = createLeaderValue("127.0.0.1:8080");
		const b = createLeaderValue("127.0.0.1:8080");
		expect(a).not.toBe(b);
		expect(a).toMatch(/^127\.0\.0\.1:8080#[0-9a-f]{12}$/);
		expect(parseLeaderValue(a).address).toBe("127.0.0.1:8080");
		expect(createLeaderValue("h:1", "n")).toBe("h:1#n");
	});

	it("parses at the last #, and a value without # is all address", () => {
		expect(parseLeaderValue("a#b#c")).toEqual({ address: "a#b", nonce: "c" });
		expect(parseLeaderValue("10.0.0.9:8080")).toEqual({
			address: "10.0.0.9:8080",
			nonce: undefined,
		});
		expect(() => createLeaderValue("")).toThrow(TypeError);
		expect(() => createLeaderValue("a", "x#y")).toThrow(TypeError);
	});
});
