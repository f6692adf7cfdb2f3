import { describe, expect, it } from "vitest";
import type { ShardHeader } from "../src/batch-codec.ts";
import {
	decodeRoot,
	decodeShard,
	decodeShardHeader,
	encodeRoot,
	encodeShard,
} from "../src/batch-codec.ts";
import { LeasesError } from "../src/errors.ts";
import { decodeHeartbeat, encodeHeartbeat } from "../src/heartbeat-codec.ts";
import { ShardSizer } from "../src/layout.ts";
import type { Lease, LeaseHolder } from "../src/model.ts";

const T = 1_700_000_000_000;
const holders: LeaseHolder[] = Array.from({ length: 40 }, (_, i) => ({
	address: `10.0.${i}.1:8080`,
	incarnation: `inc-${i}`,
}));

function lease(group: number, h: number, start: number, exp: number, flags = 3, term = 0): Lease {
	return {
		group,
		holder: holders[h] as LeaseHolder,
		startTime: start,
		expirationTime: exp,
		accepted: (flags & 1) !== 0,
		prolongable: (flags & 2) !== 0,
		term,
	};
}

const header = (from: number, count: number): ShardHeader => ({
	epoch: 3,
	version: 17,
	sealed: false,
	from,
	count,
	writer: "10.0.0.1:8080/inc-0",
	writtenAt: T,
});

describe("shard encoding", () => {
	it("round-trips absent and present leases, every flag, holders past the inline 31, times before and after writtenAt", () => {
		const leases: Array<Lease | undefined> = [];
		for (let g = 0; g < 100; g++) {
			leases.push(
				g % 7 === 0
					? undefined
					: lease(g, g % 40, T - 86_400_000 + g, T + 10_000 - g, g % 4, g % 256),
			);
		}
		const bytes = encodeShard(header(0, 100), leases);
		const decoded = decodeShard(bytes);
		expect(decoded.leases).toEqual(leases);
		expect(decodeShardHeader(bytes)).toEqual({ ...header(0, 100) });
		expect(decoded.sealed).toBe(false);
	});

	it("encodes a sub-range with its group numbers, from an offset array", () => {
		const leases = [lease(0, 0, T, T + 1), lease(1, 1, T, T + 2), lease(2, 2, T, T + 3)];
		const decoded = decodeShard(encodeShard({ ...header(1, 2), sealed: true }, leases));
		expect(decoded.leases).toEqual([leases[1], leases[2]]);
		expect(decoded.sealed).toBe(true);
		const offset = decodeShard(encodeShard(header(5, 2), [leases[1], leases[2]], 5));
		expect(offset.leases.map((l) => l?.holder)).toEqual([holders[1], holders[2]]);
	});

	it("takes about 4 bytes per lease for 10 000 groups over 3 hosts", () => {
		const leases = Array.from({ length: 10_000 }, (_, g) => lease(g, g % 3, T - 5_000, T + 9_000));
		const bytes = encodeShard({ ...header(0, 10_000) }, leases);
		expect(bytes.length).toBeLessThan(10_000 * 4 + 200);
		expect(decodeShard(bytes).leases).toEqual(leases);
	});

	it("rejects what it did not write with LEASES_CORRUPT_RECORD", () => {
		const bytes = encodeShard(header(0, 3), [
			lease(0, 0, T, T + 1),
			undefined,
			lease(2, 1, T, T + 2),
		]);
		const cases = [
			bytes.subarray(0, bytes.length - 1),
			Uint8Array.from([...bytes, 0]),
			Uint8Array.of(9, 2),
			encodeRoot({ epoch: 1, version: 1, groups: 3, starts: [0], writer: "w", writtenAt: T }),
			Uint8Array.from(bytes).fill(0xff, 20, 30),
		];
		for (const c of cases) {
			expect(() => decodeShard(c)).toThrow(
				expect.objectContaining({ code: "LEASES_CORRUPT_RECORD" }) as unknown as Error,
			);
		}
		try {
			decodeShard(Uint8Array.of(1));
		} catch (e) {
			expect(LeasesError.is(e)).toBe(true);
		}
	});

	it("refuses times that are not non-negative safe integers", () => {
		expect(() => encodeShard(header(0, 1), [lease(0, 0, -1, T)])).toThrow(RangeError);
		expect(() => encodeShard(header(0, 1), [lease(0, 0, 1.5, T)])).toThrow(RangeError);
	});
});

describe("root and heartbeat encoding", () => {
	it("round-trips the root and checks its layout", () => {
		const root = {
			epoch: 4,
			version: 9,
			groups: 10_000,
			starts: [0, 3000, 6500],
			writer: "w/1",
			writtenAt: T,
		};
		expect(decodeRoot(encodeRoot(root))).toEqual(root);
		expect(() => encodeRoot({ ...root, starts: [0, 6500, 3000] })).toThrow(RangeError);
		const twice = encodeRoot({ ...root, starts: [0, 3000, 3000] });
		expect(() => decodeRoot(twice)).toThrow(
			expect.objectContaining({ code: "LEASES_CORRUPT_RECORD" }) as unknown as Error,
		);
		expect(() => decodeRoot(encodeRoot({ ...root, starts: [5] }))).toThrow(LeasesError);
		expect(() => decodeRoot(encodeRoot({ ...root, starts: [0, 10_000] }))).toThrow(LeasesError);
	});

	it("round-trips a heartbeat with 20 000 acknowledgements in under 64 KiB", () => {
		const acks = new Map<number, number>();
		for (let g = 0; g < 25_000; g += 1 + (g % 3)) acks.set(g, g % 256);
		const bytes = encodeHeartbeat({ incarnation: "x", seq: 2 ** 40, acks });
		expect(bytes.length).toBeLessThan(65_536);
		const back = decodeHeartbeat(bytes);
		expect(back.seq).toBe(2 ** 40);
		expect([...back.acks]).toEqual([...acks].sort((a, b) => a[0] - b[0]));
	});

	it("carries deploying grants and 'not accepting' only when there are any (review 5, F1, F4)", () => {
		const acks = new Map([[3, 7]]);
		const plain = encodeHeartbeat({ incarnation: "x", seq: 5, acks });
		// A steady host's record keeps the first format's bytes.
		expect(
			encodeHeartbeat({ incarnation: "x", seq: 5, acks, deploying: new Map(), accepting: true }),
		).toEqual(plain);
		expect(decodeHeartbeat(plain)).toMatchObject({ accepting: true });
		expect(decodeHeartbeat(plain).deploying?.size).toBe(0);
		const deploying = new Map([
			[9, 1],
			[4, 255],
		]);
		const back = decodeHeartbeat(
			encodeHeartbeat({ incarnation: "x", seq: 6, acks, deploying, accepting: false }),
		);
		expect(back.accepting).toBe(false);
		expect([...(back.deploying ?? [])]).toEqual([
			[4, 255],
			[9, 1],
		]);
		expect([...back.acks]).toEqual([[3, 7]]);
		const withTail = encodeHeartbeat({ incarnation: "x", seq: 6, acks, accepting: false });
		expect(() => decodeHeartbeat(Uint8Array.of(...withTail, 0))).toThrow(LeasesError);
	});
});

describe("ShardSizer", () => {
	it("is an upper bound of the encoded size, within the header's slack", () => {
		let seed = 7;
		const rnd = () => {
			seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
			return seed / 2 ** 31;
		};
		for (let round = 0; round < 50; round++) {
			const n = 1 + Math.floor(rnd() * 400);
			const leases: Array<Lease | undefined> = [];
			for (let g = 0; g < n; g++) {
				if (rnd() < 0.1) leases.push(undefined);
				else {
					const start = T - Math.floor(rnd() * 10 ** (1 + Math.floor(rnd() * 9)));
					leases.push(
						lease(g, Math.floor(rnd() * 40), start, T + Math.floor(rnd() * 20_000), 3, g % 256),
					);
				}
			}
			const sizer = new ShardSizer("10.0.0.1:8080/inc-0", T);
			for (const l of leases) sizer.add(l);
			const actual = encodeShard({ ...header(0, n), version: 2 ** 40 }, leases).length;
			expect(sizer.size).toBeGreaterThanOrEqual(actual);
			expect(sizer.size - actual).toBeLessThan(40 + n); // index widths are bounded by the table size
		}
	});
});
