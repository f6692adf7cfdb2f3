import { MockClock } from "@vvm/clock";
import { describe, expect, it } from "vitest";
import type { LeaseEvent } from "../src/events.ts";
import type { LeaseEnd, LeaseGrant } from "../src/holder.ts";
import { LocalLeases } from "../src/holder.ts";
import type { Lease, LeaseHolder } from "../src/model.ts";

const T = 1_700_000_000_000;
const ME: LeaseHolder = { address: "me:1", incarnation: "i" };
const OTHER: LeaseHolder = { address: "other:1", incarnation: "i" };
const S = 500;

function lease(over: Partial<Lease> = {}): Lease {
	return {
		group: 3,
		holder: ME,
		startTime: T,
		expirationTime: T + 10_000,
		accepted: false,
		prolongable: true,
		term: 1,
		...over,
	};
}

function fixture(onGranted?: (g: LeaseGrant) => void | Promise<void>) {
	const clock = new MockClock(T);
	const grants: LeaseGrant[] = [];
	const ends: LeaseEnd[] = [];
	const events: LeaseEvent[] = [];
	let ackChanges = 0;
	const local = new LocalLeases(ME, clock, S, {
		onGranted: (g) => {
			grants.push(g);
			return onGranted?.(g);
		},
		onEnded: (e) => ends.push(e),
		onAcksChanged: () => ackChanges++,
		emit: (e) => events.push(e),
	});
	return { clock, local, grants, ends, events, acks: () => ackChanges };
}

describe("LocalLeases", () => {
	it("serves until expirationTime - maxClockSkewMs, converted once to its own monotonic clock", () => {
		const { clock, local, grants, ends } = fixture();
		clock.stepWall(-300); // this host's wall clock is 300 ms behind the driver's
		local.apply([{ group: 3, lease: lease() }]);
		const deadline = clock.monotonic() + 10_000 - S + 300 - 1; // 1 ms: the wall clock's resolution
		expect(grants[0]?.deadline).toBe(deadline);
		expect(local.serving(3)).toBe(true);
		// Wall-clock steps after the read do not move the deadline.
		clock.stepWall(+5_000);
		clock.advance(10_000 - S + 298);
		expect(local.serving(3)).toBe(true);
		clock.advance(1);
		expect(local.serving(3)).toBe(false);
		expect(ends).toMatchObject([{ group: 3, reason: "expired", deadline }]);
		expect(grants[0]?.signal.aborted).toBe(true);
	});

	it("stops by its own timer without any further read", () => {
		const { clock, local, ends } = fixture();
		local.apply([{ group: 3, lease: lease() }]);
		clock.advance(20_000);
		expect(ends.map((e) => e.reason)).toEqual(["expired"]);
		expect(local.groups()).toEqual([]);
	});

	it("extends on a prolongation of the same grant and never shrinks", () => {
		const { clock, local, grants } = fixture();
		local.apply([{ group: 3, lease: lease() }]);
		local.apply([{ group: 3, lease: lease({ expirationTime: T + 15_000, accepted: true }) }]);
		expect(local.deadline(3)).toBe(clock.monotonic() + 15_000 - S - 1);
		local.apply([{ group: 3, lease: lease({ expirationTime: T + 12_000 }) }]);
		expect(local.deadline(3)).toBe(clock.monotonic() + 15_000 - S - 1);
		expect(grants).toHaveLength(1);
	});

	it("ends a lease at once when the batch shows another grant of the group", () => {
		const { local, ends, grants } = fixture();
		local.apply([{ group: 3, lease: lease() }]);
		local.apply([{ group: 3, lease: lease({ holder: OTHER, term: 2 }) }]);
		expect(ends.map((e) => e.reason)).toEqual(["revoked"]);
		local.apply([{ group: 3, lease: lease({ term: 3, startTime: T + 1 }) }]);
		expect(grants).toHaveLength(2);
		local.apply([{ group: 3, lease: undefined }]);
		expect(ends.map((e) => e.reason)).toEqual(["revoked", "revoked"]);
	});

	it("does not start a lease that is already past its local deadline", () => {
		const { local, grants } = fixture();
		local.apply([{ group: 3, lease: lease({ expirationTime: T + S + 1 }) }]);
		expect(grants).toEqual([]);
		expect(local.serving(3)).toBe(false);
	});

	it("acknowledges a grant only once onGranted finished, with its term", async () => {
		let finish!: () => void;
		const { local, acks } = fixture(() => new Promise<void>((r) => (finish = r)));
		local.apply([{ group: 3, lease: lease({ term: 9 }) }]);
		expect(local.acks().size).toBe(0);
		// Meanwhile the heartbeat says "deploying" (the driver prolongs it: review 5, F1).
		expect([...local.deploying()]).toEqual([[3, 9]]);
		expect(acks()).toBe(1);
		finish();
		await Promise.resolve();
		await Promise.resolve();
		expect([...local.acks()]).toEqual([[3, 9]]);
		expect(local.deploying().size).toBe(0);
		expect(acks()).toBe(2);
	});

	it("declines a grant whose onGranted throws or rejects", async () => {
		const sync = fixture(() => {
			throw new Error("no");
		});
		sync.local.apply([{ group: 3, lease: lease() }]);
		expect(sync.ends).toMatchObject([{ reason: "declined", error: new Error("no") }]);
		const async = fixture(() => Promise.reject(new Error("later")));
		async.local.apply([{ group: 3, lease: lease() }]);
		await new Promise((r) => setImmediate(r));
		expect(async.ends.map((e) => e.reason)).toEqual(["declined"]);
		expect(async.local.acks().size).toBe(0);
	});

	it("release() ends an accepted lease at once (released), drops its ack, and is a no-op after", async () => {
		const { local, grants, ends, acks } = fixture();
		local.apply([{ group: 3, lease: lease({ term: 4 }) }]);
		await Promise.resolve();
		expect([...local.acks()]).toEqual([[3, 4]]);
		const before = acks();
		const why = new Error("fenced out by a newer holder");
		grants[0]?.release(why);
		expect(local.serving(3)).toBe(false);
		expect(local.acks().size).toBe(0);
		expect(acks()).toBeGreaterThan(before);
		expect(grants[0]?.signal.aborted).toBe(true);
		expect(ends).toMatchObject([{ group: 3, reason: "released", error: why }]);
		grants[0]?.release(why);
		expect(ends).toHaveLength(1);
	});

	it("never takes up a released or declined grant again, even when a prolongation shows it as ours; the next grant it takes", () => {
		for (const how of ["released", "declined"] as const) {
			let refuse = how === "declined";
			const { local, grants, ends } = fixture(() => {
				if (refuse) throw new Error("cannot deploy");
			});
			local.apply([{ group: 3, lease: lease() }]);
			if (how === "released") grants[0]?.release(new Error("closed on its own"));
			expect(ends.map((e) => e.reason)).toEqual([how]);
			// The driver prolonged the same grant before it saw the acknowledgement go.
			local.apply([{ group: 3, lease: lease({ expirationTime: T + 20_000, accepted: true }) }]);
			expect(grants).toHaveLength(1);
			expect(local.serving(3)).toBe(false);
			// It expired and was granted again (a new startTime), here: taken up.
			refuse = false;
			local.apply([
				{ group: 3, lease: lease({ startTime: T + 25_000, expirationTime: T + 35_000 }) },
			]);
			expect(grants).toHaveLength(2);
			expect(local.serving(3)).toBe(true);
		}
	});

	it("ends everything on endAll, and a throwing onEnded does not keep a lease", () => {
		const clock = new MockClock(T);
		const local = new LocalLeases(ME, clock, S, {
			onEnded: () => {
				throw new Error("listener");
			},
			onAcksChanged: () => {},
			emit: () => {},
		});
		local.apply([
			{ group: 1, lease: lease({ group: 1 }) },
			{ group: 2, lease: lease({ group: 2 }) },
		]);
		expect(local.groups()).toEqual([1, 2]);
		local.endAll("closed");
		expect(local.groups()).toEqual([]);
	});
});
