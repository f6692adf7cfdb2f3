import { describe, expect, it } from "vitest";
import type { Swap } from "./cas-history.ts";
import { checkSwaps } from "./cas-history.ts";

// The checker of the cluster tests must be able to fail: each wrong answer below is caught.
describe("checkSwaps: swap answers against the value the register holds afterwards", () => {
	const chain: Swap[] = [
		{ old: "init", next: "a-0", answer: true },
		{ old: "init", next: "b-0", answer: false },
		{ old: "a-0", next: "b-1", answer: "TTLSTORAGE_OUTCOME_UNKNOWN" },
		{ old: "b-1", next: "a-1", answer: true },
		{ old: "a-0", next: "b-2", answer: "TTLSTORAGE_UNAVAILABLE" },
	];

	it("accepts a history whose answers agree with the final value", () => {
		expect(checkSwaps("init", chain, "a-1")).toEqual([]);
		expect(checkSwaps("init", [], "init")).toEqual([]);
		// An ambiguous swap that did not land is fine too.
		expect(checkSwaps("init", chain.slice(0, 3), "a-0")).toEqual([]);
	});

	it("catches a swap answered false that was applied", () => {
		const history: Swap[] = [{ old: "init", next: "x", answer: false }];
		expect(checkSwaps("init", history, "x")).toEqual([
			"swap init -> x answered false, but was applied",
		]);
	});

	it("catches a swap answered true that was not applied", () => {
		const history: Swap[] = [{ old: "init", next: "x", answer: true }];
		expect(checkSwaps("init", history, "init")).toEqual([
			"swap init -> x answered true, but was not applied",
		]);
	});

	it("catches UNAVAILABLE for a swap that was applied (it promises nothing was written)", () => {
		const history: Swap[] = [{ old: "init", next: "x", answer: "TTLSTORAGE_UNAVAILABLE" }];
		expect(checkSwaps("init", history, "x")).toEqual([
			"swap init -> x answered TTLSTORAGE_UNAVAILABLE, but was applied",
		]);
	});

	it("catches a final value nobody wrote, a rewritten value, and other failure codes", () => {
		expect(checkSwaps("init", [], "ghost")).toEqual([
			"the register holds ghost, which no swap wrote",
		]);
		expect(
			checkSwaps(
				"init",
				[
					{ old: "init", next: "x", answer: true },
					{ old: "x", next: "x", answer: "TTLSTORAGE_FAILED" },
				],
				"x",
			),
		).toContain("value x written twice");
	});
});
