import { describe, expect, it } from "vitest";
import type { Lease, LeaseHolder, LeaseSlots } from "../src/model.ts";
import type { PlacementInput, PlacementMember } from "../src/placement.ts";
import { computePlacement, UNKNOWN_HOLDER } from "../src/placement.ts";

const T = 1_700_000_000_000;
const I = 10_000;
const h = (name: string): LeaseHolder => ({ address: `${name}:1`, incarnation: "i1" });
const A = h("a");
const B = h("b");
const C = h("c");

function member(holder: LeaseHolder, over: Partial<PlacementMember> = {}): PlacementMember {
	return { holder, fresh: true, aliveWall: T, acks: new Map(), ...over };
}

function members(...ms: PlacementMember[]): Map<string, PlacementMember> {
	return new Map(ms.map((m) => [m.holder.address, m]));
}

function input(over: Partial<PlacementInput>): PlacementInput {
	return {
		leases: [],
		groups: 4,
		members: members(member(A), member(B)),
		now: T,
		leaseIntervalMs: I,
		prolongBelowMs: 0.75 * I,
		...over,
	};
}

function held(holder: LeaseHolder, group: number, over: Partial<Lease> = {}): Lease {
	return {
		group,
		holder,
		startTime: T - 60_000,
		expirationTime: T + 5_000,
		accepted: true,
		prolongable: true,
		term: 4,
		...over,
	};
}

/** The acknowledgements `holder`'s heartbeat carries for its leases in `leases`. */
const acksOf = (leases: LeaseSlots, holder: LeaseHolder): Map<number, number> =>
	new Map(
		leases.flatMap((l, g) => (l?.holder.address === holder.address ? [[g, l.term] as const] : [])),
	);

const holdersOf = (leases: LeaseSlots): Array<string | undefined> =>
	leases.map((l) => l?.holder.address);

describe("computePlacement", () => {
	it("grants every free group to the live host with the fewest leases, unaccepted, for one interval", () => {
		const r = computePlacement(input({ groups: 5 }));
		expect(holdersOf(r.leases)).toEqual(["a:1", "b:1", "a:1", "b:1", "a:1"]);
		for (const l of r.leases) {
			expect(l).toMatchObject({
				startTime: T,
				expirationTime: T + I,
				accepted: false,
				prolongable: true,
				term: 0,
			});
		}
		expect(r.granted).toHaveLength(5);
	});

	it("never grants a group whose lease has not expired, even when its holder left", () => {
		const old = held(C, 0, { expirationTime: T + 1 });
		const r = computePlacement(input({ leases: [old], groups: 1 }));
		expect(r.leases[0]).toBe(old);
		expect(r.granted).toEqual([]);
		const at = computePlacement(input({ leases: [old], groups: 1, now: T + 1 }));
		expect(at.leases[0]?.holder).not.toEqual(C);
		expect(at.leases[0]?.startTime).toBe(T + 1);
		expect(at.leases[0]?.term).toBe(5);
		expect(at.expired).toEqual([0]);
	});

	it("counts terms modulo 256 and starts each new grant after the old one's start", () => {
		const old = held(C, 0, { term: 255, expirationTime: T });
		const r = computePlacement(input({ leases: [old], groups: 1 }));
		expect(r.leases[0]?.term).toBe(0);
		expect(r.leases[0]?.startTime).toBeGreaterThan(old.startTime);
	});

	it("prolongs an accepted, prolongable lease of a live holder once less than 3/4 of an interval is left", () => {
		const early = held(A, 0, { expirationTime: T + 0.8 * I });
		const late = held(A, 1, { expirationTime: T + 0.7 * I });
		const r = computePlacement(
			input({
				leases: [early, late],
				groups: 2,
				members: members(member(A, { aliveWall: T - 500, acks: acksOf([early, late], A) })),
			}),
		);
		expect(r.leases[0]).toBe(early);
		// Up to a lease interval after the last moment the holder was seen alive.
		expect(r.leases[1]?.expirationTime).toBe(T - 500 + I);
		expect(r.leases[1]?.startTime).toBe(late.startTime);
		expect(r.prolonged).toBe(1);
	});

	it("does not prolong for a holder that is not fresh, not accepted, not prolongable, or another incarnation", () => {
		const soon = { expirationTime: T + 1000 };
		const leases = [
			held(A, 0, soon),
			held(B, 1, { ...soon, accepted: false }),
			held(B, 2, { ...soon, prolongable: false }),
			held({ address: "b:1", incarnation: "old" }, 3, soon),
		];
		const r = computePlacement(
			input({
				leases,
				members: members(
					member(A, { fresh: false, acks: acksOf(leases, A) }),
					// b acknowledges every lease it has but the unaccepted one
					member(B, { acks: new Map([...acksOf(leases, B)].filter(([g]) => g !== 1)) }),
				),
			}),
		);
		expect(r.leases.map((l) => l?.expirationTime)).toEqual(leases.map((l) => l.expirationTime));
		expect(r.prolonged).toBe(0);
	});

	it("does not prolong an accepted lease whose holder no longer acknowledges it (review 5, F4)", () => {
		const l = held(A, 0, { expirationTime: T + 1000 });
		const silent = computePlacement(input({ leases: [l], groups: 1, members: members(member(A)) }));
		expect(silent.leases[0]).toBe(l);
		const stale = computePlacement(
			input({
				leases: [l],
				groups: 1,
				members: members(member(A, { acks: new Map([[0, l.term - 1]]) })),
			}),
		);
		expect(stale.leases[0]).toBe(l);
		const acked = computePlacement(
			input({ leases: [l], groups: 1, members: members(member(A, { acks: acksOf([l], A) })) }),
		);
		expect(acked.prolonged).toBe(1);
	});

	it("prolongs an unaccepted lease while its holder is deploying it, not an older grant (review 5, F1)", () => {
		const l = held(A, 0, { accepted: false, expirationTime: T + 1000, term: 9 });
		const old = computePlacement(
			input({
				leases: [l],
				groups: 1,
				members: members(member(A, { deploying: new Map([[0, 8]]) })),
			}),
		);
		expect(old.prolonged).toBe(0);
		const r = computePlacement(
			input({
				leases: [l],
				groups: 1,
				members: members(member(A, { deploying: new Map([[0, 9]]) })),
			}),
		);
		expect(r.prolonged).toBe(1);
		expect(r.leases[0]).toMatchObject({ accepted: false, expirationTime: T + I, term: 9 });
	});

	it("grants nothing to and prolongs nothing of a host that does not accept leases (review 5, F4)", () => {
		const l = held(A, 0, { expirationTime: T + 1000 });
		const r = computePlacement(
			input({
				leases: [l],
				groups: 3,
				members: members(member(A, { accepting: false, acks: acksOf([l], A) }), member(B)),
			}),
		);
		expect(r.leases[0]).toBe(l);
		expect(r.prolonged).toBe(0);
		expect(r.granted.map((g) => g.holder.address)).toEqual(["b:1", "b:1"]);
	});

	it("never moves an expiration back", () => {
		const l = held(A, 0, { expirationTime: T + 1000 });
		const r = computePlacement(
			input({ leases: [l], groups: 1, members: members(member(A, { aliveWall: T - I })) }),
		);
		expect(r.leases[0]).toBe(l);
	});

	it("marks a grant accepted when the holder acknowledges its term, not an older one", () => {
		const l = held(A, 0, { accepted: false, term: 7, expirationTime: T + I });
		const stale = computePlacement(
			input({ leases: [l], groups: 1, members: members(member(A, { acks: new Map([[0, 6]]) })) }),
		);
		expect(stale.leases[0]?.accepted).toBe(false);
		const ok = computePlacement(
			input({ leases: [l], groups: 1, members: members(member(A, { acks: new Map([[0, 7]]) })) }),
		);
		expect(ok.leases[0]?.accepted).toBe(true);
		expect(ok.accepted).toBe(1);
	});

	it("balances 64 groups over 3 hosts as 22/21/21 and sheds surplus when a fourth joins", () => {
		const three = members(member(A), member(B), member(C));
		const first = computePlacement(input({ groups: 64, members: three }));
		const count = (leases: LeaseSlots, holder: LeaseHolder, prolongable = true) =>
			leases.filter((l) => l?.holder.address === holder.address && l.prolongable === prolongable)
				.length;
		expect([count(first.leases, A), count(first.leases, B), count(first.leases, C)].sort()).toEqual(
			[21, 21, 22],
		);
		const D = h("d");
		const accepted = first.leases.map((l) => (l === undefined ? l : { ...l, accepted: true }));
		const four = members(member(A), member(B), member(C), member(D));
		const next = computePlacement(input({ leases: accepted, groups: 64, members: four }));
		// Nothing is taken away early: the surplus is only marked not prolongable.
		expect(next.granted).toEqual([]);
		expect(next.shed).toBe(64 - 3 * 16);
		for (const x of [A, B, C]) expect(count(next.leases, x)).toBe(16);
		// After the surplus expires, d gets it; the others' leases were prolonged meanwhile.
		const seen = (at: number) =>
			members(
				...[A, B, C, D].map((x) => member(x, { aliveWall: at, acks: acksOf(next.leases, x) })),
			);
		const prolonged = computePlacement(
			input({ leases: next.leases, groups: 64, members: seen(T + I / 2), now: T + I / 2 }),
		);
		expect(prolonged.prolonged).toBe(48);
		const later = computePlacement(
			input({ leases: prolonged.leases, groups: 64, members: seen(T + I), now: T + I }),
		);
		expect(count(later.leases, D)).toBe(16);
		expect(later.granted).toHaveLength(16);
	});

	it("sheds unaccepted leases first, then the highest groups", () => {
		const leases = [held(A, 0), held(A, 1, { accepted: false }), held(A, 2), held(A, 3)];
		const r = computePlacement(
			input({ leases, groups: 4, members: members(member(A), member(B)) }),
		);
		expect(r.leases.map((l) => l?.prolongable)).toEqual([true, false, true, false]);
	});

	it("takes back a lease it was letting go when its holder falls below its share", () => {
		const leases = [held(A, 0), held(A, 1, { prolongable: false }), held(B, 2), held(B, 3)];
		const r = computePlacement(input({ leases, groups: 4 }));
		expect(r.leases[1]?.prolongable).toBe(true);
		expect(r.kept).toBe(1);
	});

	it("treats groups of a missing shard as leased to nobody known until the bound", () => {
		const r = computePlacement(input({ groups: 4, missing: [[1, 3]], unknownUntil: T + I + 500 }));
		expect(r.leases[1]?.holder).toBe(UNKNOWN_HOLDER);
		expect(r.leases[2]?.expirationTime).toBe(T + I + 500);
		expect(holdersOf([r.leases[0], r.leases[3]])).toEqual(["a:1", "b:1"]);
	});

	it("keeps covering removed groups until their leases expire, and never prolongs them", () => {
		const leases = [held(A, 0), held(A, 1), held(B, 2, { expirationTime: T + 1000 })];
		const r = computePlacement(input({ leases, groups: 2 }));
		expect(r.coverage).toBe(3);
		expect(r.leases[2]).toBe(leases[2]);
		const later = computePlacement(input({ leases: r.leases, groups: 2, now: T + 1000 }));
		expect(later.coverage).toBe(2);
	});

	it("grants nothing and rebalances nothing while settling, but still accepts and prolongs", () => {
		const l = held(A, 0, { accepted: false, expirationTime: T + 1000 });
		const r = computePlacement(
			input({
				leases: [l],
				groups: 3,
				grants: false,
				members: members(member(A, { acks: new Map([[0, 4]]) })),
			}),
		);
		expect(r.granted).toEqual([]);
		expect(r.leases[0]?.accepted).toBe(true);
		expect(r.leases[0]?.expirationTime).toBe(T + I);
	});

	it("grants nothing without a fresh member", () => {
		const r = computePlacement(input({ members: members(member(A, { fresh: false })) }));
		expect(r.granted).toEqual([]);
	});
});
