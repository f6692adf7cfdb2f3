// The checker of the multi-process leases test must be able to fail.
import { describe, expect, it } from "vitest";
import type { ServedLine } from "./support/served-log.ts";
import { checkNoOverlap, summarize } from "./support/served-log.ts";

const line = (host: string, mono: number, fencingToken: number, partition = 0): ServedLine => ({
	host,
	partition,
	mono,
	incarnation: `${host}-i`,
	fencingToken,
});

describe("checkNoOverlap", () => {
	it("accepts disjoint holders in token order and measures the gap", () => {
		const check = checkNoOverlap([
			line("A", 1, 10),
			line("A", 5, 10),
			line("B", 9, 20),
			line("B", 12, 20),
		]);
		expect(check).toEqual({ overlaps: [], tokenRegressions: [], handovers: 1, minGapMs: 4 });
	});

	it("reports interleaved holders, a holder inside another's interval, and a token going back", () => {
		expect(
			checkNoOverlap([line("A", 1, 10), line("B", 3, 20), line("A", 5, 10)]).overlaps,
		).toHaveLength(1);
		expect(
			checkNoOverlap([line("A", 1, 10), line("B", 2, 20), line("C", 3, 30), line("A", 9, 10)])
				.overlaps,
		).toHaveLength(2);
		expect(checkNoOverlap([line("A", 1, 20), line("B", 5, 10)]).tokenRegressions).toHaveLength(1);
		expect(checkNoOverlap([line("A", 1, 10), line("B", 2, 20, 1)]).overlaps).toEqual([]);
	});

	it("summarizes min/median/max", () => {
		expect(summarize([3, 1, 2])).toEqual([1, 2, 3]);
		expect(summarize([4, 1, 2, 3])).toEqual([1, 2.5, 4]);
	});
});
