import { describe, expect, it } from "vitest";
import { encodeShard } from "../src/batch-codec.ts";
import { packShards } from "../src/layout.ts";
import type { Lease } from "../src/model.ts";

const T = 1_700_000_000_000;

function leases(n: number, distinctStarts: number): Lease[] {
	return Array.from({ length: n }, (_, g) => ({
		group: g,
		holder: { address: `host-${g % 3}:8080`, incarnation: "i" },
		startTime: T - (g % distinctStarts) * 1000,
		expirationTime: T + 9_000,
		accepted: true,
		prolongable: true,
		term: 1,
	}));
}

function sizes(all: Lease[], starts: number[], writer: string): number[] {
	return starts.map((from, i) => {
		const to = starts[i + 1] ?? all.length;
		return encodeShard(
			{ epoch: 1, version: 1, sealed: false, from, count: to - from, writer, writtenAt: T },
			all,
		).length;
	});
}

describe("packShards", () => {
	it("keeps 10 000 leases over 3 hosts in one record", () => {
		const all = leases(10_000, 3);
		expect(packShards(all, all.length, { writer: "w", writtenAt: T, limit: 65_520 })).toEqual([0]);
	});

	it("splits into the fewest records that fit, of about equal size", () => {
		const all = leases(10_000, 10_000); // every lease started at a different time: ~8 bytes each
		const starts = packShards(all, all.length, { writer: "w", writtenAt: T, limit: 65_520 });
		const s = sizes(all, starts, "w");
		const total = s.reduce((a, b) => a + b, 0);
		for (const x of s) expect(x).toBeLessThanOrEqual(65_520);
		expect(starts.length).toBe(Math.ceil(total / 65_520));
		expect(Math.max(...s) - Math.min(...s)).toBeLessThan(200);
	});

	it("packs tight small limits exactly up to the limit", () => {
		const all = leases(300, 300);
		for (const limit of [256, 1000, 4096]) {
			const starts = packShards(all, all.length, { writer: "w", writtenAt: T, limit });
			for (const x of sizes(all, starts, "w")) expect(x).toBeLessThanOrEqual(limit);
		}
	});

	it("refuses a limit that not even one lease fits in", () => {
		expect(() => packShards(leases(2, 1), 2, { writer: "w", writtenAt: T, limit: 20 })).toThrow(
			RangeError,
		);
	});
});
