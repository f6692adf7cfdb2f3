import { MockClock } from "@vvm/clock";
import type { LeadershipEvent } from "@vvm/ielections";
import {
	createElections,
	createElectionsStorage,
	ElectionsError,
	LEADERSHIP_TIMINGS,
	VVM_LEADER_PREFIX,
	vvmLeadershipStorage,
} from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { fromUtf8, TTLStorageError, u32, utf8 } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

function setup() {
	const clock = new MockClock(1_000_000);
	const driver = withFaults(createMiniTTLStorage(clock), { clock });
	const storage = vvmLeadershipStorage(driver);
	const killer = new RecordingKiller(clock);
	const events: LeadershipEvent<number, string>[] = [];
	const elections = createElections(storage, {
		clock,
		killer,
		onEvent: (e) => events.push(e),
	});
	return { clock, driver, storage, killer, events, elections };
}

describe("vvmLeadershipStorage", () => {
	it("uses the voedger layout: pKey u32(1), cCols u32(slot), value UTF-8 address", async () => {
		const { driver, elections } = setup();
		expect(VVM_LEADER_PREFIX).toBe(1);
		expect(await elections.acquireLeadership(7, "10.0.0.1:8822", 20)).toBeDefined();
		const raw = await driver.get(u32(1), u32(7));
		expect(raw).toBeDefined();
		expect(fromUtf8(raw as Uint8Array)).toBe("10.0.0.1:8822");
		expect([...u32(7)]).toEqual([0, 0, 0, 7]);
		expect(await driver.queryTTL(u32(1), u32(7))).toBe(20);
		await elections.cleanup();
		expect(await driver.get(u32(1), u32(7))).toBeUndefined();
	});

	it("rejects a slot that is not a u32 before any I/O", async () => {
		const { driver, storage, elections, events } = setup();
		await expect(storage.insertIfNotExist(-1, "a", 5)).rejects.toBeInstanceOf(RangeError);
		await expect(elections.acquireLeadership(2 ** 32, "a", 5)).rejects.toBeInstanceOf(RangeError);
		expect(driver.calls).toHaveLength(0);
		expect(events).toEqual([]);
	});
});

describe("createElectionsStorage", () => {
	it("maps keys and values through the codec and decodes get", async () => {
		const clock = new MockClock(0);
		const driver = createMiniTTLStorage(clock);
		const storage = createElectionsStorage<{ app: string; n: number }, { ip: string }>(driver, {
			pKey: (k) => utf8(`leaders/${k.app}`),
			cCols: (k) => u32(k.n),
			encodeValue: (v) => utf8(JSON.stringify(v)),
			decodeValue: (b) => JSON.parse(fromUtf8(b)) as { ip: string },
		});
		const key = { app: "a", n: 2 };
		expect(await storage.insertIfNotExist(key, { ip: "x" }, 5)).toBe(true);
		expect(await storage.get(key)).toEqual({ ip: "x" });
		expect(await storage.compareAndSwap(key, { ip: "y" }, { ip: "z" }, 5)).toBe(false);
		expect(await storage.compareAndSwap(key, { ip: "x" }, { ip: "z" }, 5)).toBe(true);
		expect(await storage.compareAndDelete(key, { ip: "x" })).toBe(false);
		expect(await storage.compareAndDelete(key, { ip: "z" })).toBe(true);
		expect(await storage.get(key)).toBeUndefined();
		clock.advance(1);
	});
});

describe("createElections", () => {
	it("keeps working when the event listener throws", async () => {
		const clock = new MockClock(0);
		const storage = vvmLeadershipStorage(createMiniTTLStorage(clock));
		const elections = createElections(storage, {
			clock,
			killer: new RecordingKiller(clock),
			onEvent: () => {
				throw new Error("listener bug");
			},
		});
		const signal = await elections.acquireLeadership(1, "a", 4);
		expect(signal).toBeDefined();
		await clock.advanceAsync(1_000);
		expect(elections.leadership(1)?.renewals).toBe(1);
		await elections.releaseLeadership(1);
		expect(signal?.aborted).toBe(true);
	});

	it("identifies object keys with keyToString", async () => {
		const clock = new MockClock(0);
		const driver = createMiniTTLStorage(clock);
		const storage = createElectionsStorage<{ slot: number }, string>(driver, {
			pKey: () => utf8("p"),
			cCols: (k) => u32(k.slot),
			encodeValue: utf8,
			decodeValue: fromUtf8,
		});
		const elections = createElections(storage, {
			clock,
			killer: new RecordingKiller(clock),
			keyToString: (k) => `slot-${k.slot}`,
		});
		expect(await elections.acquireLeadership({ slot: 1 }, "a", 10)).toBeDefined();
		expect(elections.leadership({ slot: 1 })?.value).toBe("a");
		expect(await elections.acquireLeadership({ slot: 1 }, "a", 10)).toBeUndefined();
		await elections.releaseLeadership({ slot: 1 });
		expect(elections.leadership({ slot: 1 })).toBeUndefined();
		await elections.cleanup();
	});

	it("removes a maybe-applied insert when the outcome is unknown", async () => {
		const { driver, storage, elections, events } = setup();
		driver.inject({ on: "insertIfNotExists", action: faults.unknownOutcome(true), times: 1 });
		expect(await elections.acquireLeadership(1, "me", 10)).toBeUndefined();
		const failed = events.find((e) => e.type === "acquire-failed");
		expect(failed?.type === "acquire-failed" && failed.reason).toBe("storage-error");
		expect(TTLStorageError.is(failed?.type === "acquire-failed" ? failed.error : undefined)).toBe(
			true,
		);
		expect(await storage.get(1)).toBeUndefined();
		expect(await elections.acquireLeadership(1, "me", 10)).toBeDefined();
		await elections.cleanup();
	});

	it("does not delete another's record after an unknown insert outcome", async () => {
		const { driver, storage, elections } = setup();
		expect(await storage.insertIfNotExist(1, "other", 10)).toBe(true);
		driver.inject({ on: "insertIfNotExists", action: faults.unknownOutcome(false), times: 1 });
		expect(await elections.acquireLeadership(1, "me", 10)).toBeUndefined();
		expect(await storage.get(1)).toBe("other");
	});

	it("waits for a pending acquisition before releasing the same key", async () => {
		const { driver, storage, elections } = setup();
		let open!: () => void;
		const gate = new Promise<void>((r) => {
			open = r;
		});
		driver.inject({ on: "insertIfNotExists", action: faults.hook(() => gate), times: 1 });
		const acquiring = elections.acquireLeadership(1, "me", 10);
		const releasing = elections.releaseLeadership(1);
		open();
		const signal = await acquiring;
		await releasing;
		expect(signal?.aborted).toBe(true);
		expect(ElectionsError.is(signal?.reason) && signal.reason.code).toBe("ELECTIONS_RELEASED");
		expect(await storage.get(1)).toBeUndefined();
	});

	it("with several keys, a healthy key's renewals never push back a failing key's deadline", async () => {
		const { clock, killer, elections, driver } = setup();
		const t0 = clock.monotonic();
		await elections.acquireLeadership(1, "a", 10);
		await elections.acquireLeadership(2, "a", 4);
		// Key 1's renewal hangs from t0 + 2.5 s, so its deadline stays t0 + 10 s - 250 ms (its
		// record's expiry minus the margin). Key 2
		// renews every second, each time asking for a deadline 3.2 s later (t0 + 10.2 s at t0 + 7 s).
		driver.inject({
			on: "compareAndSwap",
			match: (c) => (c.args[1] as Uint8Array)[3] === 1,
			action: faults.hook(() => new Promise<void>(() => {})),
		});
		await clock.advanceAsync(9_700);
		expect(elections.leadership(2)?.renewals).toBe(9);
		expect(killer.deadline).toBe(t0 + 9_750);
		expect(killer.firedAt()).toBeUndefined();
		expect(killer.firedAt(t0 + 9_750)).toBe(t0 + 9_750);
		await elections.cleanup();
	});

	it("exposes the seed 001 timings", () => {
		expect(LEADERSHIP_TIMINGS).toEqual({
			renewFraction: 0.25,
			retryFraction: 0.05,
			maxRetries: 2,
			killerAfterRenewal: 0.8,
			killerBeforeCAS: 0.75,
			killerMargin: 0.025,
		});
		expect(Object.isFrozen(LEADERSHIP_TIMINGS)).toBe(true);
	});

	it("ElectionsError.is recognises the reason across copies by its marker", () => {
		const e = new ElectionsError("ELECTIONS_LOST", "x", { cause: 1 });
		expect(ElectionsError.is(e)).toBe(true);
		expect(ElectionsError.is(new Error("x"))).toBe(false);
		expect(e.message).toBe("[@vvm/ielections] x");
		expect(e.cause).toBe(1);
	});
});

describe("lease deadline (beyond seed 001)", () => {
	it("aborts the signal at the lease deadline when a renewal hangs, not when the call returns", async () => {
		const { clock, driver, elections, killer } = setup();
		const d = 20;
		const t0 = clock.monotonic();
		const signal = await elections.acquireLeadership(3, "a", d);
		expect(signal).toBeDefined();
		let release: () => void = () => {};
		driver.inject({
			on: "compareAndSwap",
			action: faults.hook(() => new Promise<void>((r) => (release = r))),
			times: 1,
		});
		// First tick at d/4: the compare-and-swap is sent and hangs.
		clock.advance(d * 250);
		await driver.count("compareAndSwap");
		expect(driver.count("compareAndSwap")).toBe(1);
		// 1 ms before the lease deadline (0.8 d after acquisition) the signal is still live.
		clock.advance(d * 800 - d * 250 - 1);
		expect(signal?.aborted).toBe(false);
		clock.advance(1);
		expect(signal?.aborted).toBe(true);
		const reason = signal?.reason as ElectionsError;
		expect(ElectionsError.is(reason)).toBe(true);
		expect(reason.code).toBe("ELECTIONS_STORAGE_ERROR");
		expect(String((reason.cause as Error).message)).toContain("lease deadline");
		// The cause carries a code too: it is the `lost` event's `error`.
		expect(ElectionsError.is(reason.cause) && reason.cause.code).toBe("ELECTIONS_STORAGE_ERROR");
		// The killer stays armed (never cancelled), at the pre-CAS deadline of the hanging attempt:
		// the record's expiry (d after the insert was sent) minus the margin, and it says why.
		expect(killer.deadline).toBe(t0 + d * 1000 - d * 25);
		expect(killer.scheduled.at(-1)?.reason).toContain(
			"leadership of 3 was lost (ELECTIONS_STORAGE_ERROR)",
		);
		release();
		await elections.cleanup();
	});

	it("moves with every successful renewal, so a healthy leader is never aborted", async () => {
		const { clock, elections } = setup();
		const signal = await elections.acquireLeadership(4, "a", 8);
		for (let i = 0; i < 20; i++) {
			const armed = clock.waitForTimers(2);
			await clock.advanceAsync(2_000);
			await armed;
		}
		expect(signal?.aborted).toBe(false);
		expect(elections.leadership(4)?.renewals).toBe(20);
		await elections.cleanup();
	});
});

describe("review fixes", () => {
	it("a slow compare-and-delete of a lost leadership never deletes the same key's next record", async () => {
		const { clock, driver, elections, storage } = setup();
		const d = 20;
		const first = await elections.acquireLeadership(5, "A", d);
		let releaseDelete: () => void = () => {};
		driver.inject({
			on: "compareAndDelete",
			action: faults.hook(() => new Promise<void>((r) => (releaseDelete = r))),
			times: 1,
		});
		// Someone else changes the record: the next renewal loses, and the delete of "A" hangs.
		expect(await storage.compareAndSwap(5, "A", "B", d)).toBe(true);
		clock.advance(d * 250);
		await new Promise((r) => setImmediate(r));
		expect(first?.aborted).toBe(true);
		expect(await storage.compareAndDelete(5, "B")).toBe(true);
		// A acquires the key again while its old delete is still in flight: it must wait for it.
		const inserts = driver.count("insertIfNotExists");
		const again = elections.acquireLeadership(5, "A", d);
		await new Promise((r) => setImmediate(r));
		expect(driver.count("insertIfNotExists")).toBe(inserts);
		releaseDelete();
		const second = await again;
		expect(second).toBeDefined();
		expect(await storage.get(5)).toBe("A");
		expect(second?.aborted).toBe(false);
		await elections.cleanup();
	});

	it("an insert that returns after its lease deadline does not lead, and is undone", async () => {
		const { clock, driver, elections, events, killer } = setup();
		driver.inject({
			on: "insertIfNotExists",
			action: faults.hook(async () => {
				clock.advance(16_000); // d = 20: the insert took the whole 0.8 d lease
			}),
			times: 1,
		});
		expect(await elections.acquireLeadership(6, "A", 20)).toBeUndefined();
		expect(await driver.get(u32(1), u32(6))).toBeUndefined();
		expect(killer.scheduled).toEqual([]);
		expect(events.at(-1)).toMatchObject({ type: "acquire-failed", reason: "storage-error" });
	});
});

describe("the killer after a voluntary release", () => {
	it("cleanup() disarms it, and it never fires afterwards", async () => {
		const { clock, elections, killer } = setup();
		await elections.acquireLeadership(1, "a", 20);
		await clock.advanceAsync(5_000); // one renewal
		await elections.cleanup();
		expect(killer.disarmed).toBe(true);
		await clock.advanceAsync(60_000);
		expect(killer.firedAt()).toBeUndefined();
	});

	it("releasing one key keeps the other key's deadline; releasing the last disarms it", async () => {
		const { clock, elections, killer } = setup();
		const t0 = clock.monotonic();
		await elections.acquireLeadership(1, "a", 10); // deadline t0 + 8 s
		await elections.acquireLeadership(2, "a", 20); // deadline t0 + 16 s
		expect(killer.deadline).toBe(t0 + 8_000);
		await elections.releaseLeadership(1);
		expect({ deadline: killer.deadline, reason: killer.scheduled.at(-1)?.reason }).toEqual({
			deadline: t0 + 16_000,
			reason: expect.stringContaining("leadership of 2:"),
		});
		await elections.releaseLeadership(2);
		expect(killer.disarmed).toBe(true);
	});

	it("a lost leadership stays armed even when the other key is released", async () => {
		const { clock, elections, killer, storage } = setup();
		const t0 = clock.monotonic();
		await elections.acquireLeadership(1, "a", 20);
		await elections.acquireLeadership(2, "a", 40);
		expect(await storage.compareAndSwap(1, "a", "b", 20)).toBe(true);
		await clock.advanceAsync(5_000); // key 1's renewal returns false: lost
		expect(elections.leadership(1)).toBeUndefined();
		await elections.releaseLeadership(2);
		await elections.cleanup();
		expect(killer.disarmed).toBe(false);
		// The floor is key 1's pre-CAS deadline: its record's expiry minus the margin.
		expect(killer.deadline).toBe(t0 + 20_000 - 500);
		expect(killer.scheduled.at(-1)?.reason).toContain("leadership of 1 was lost (ELECTIONS_LOST)");
		expect(killer.firedAt(t0 + 20_000)).toBe(t0 + 19_500);
	});
});

describe("maxClockSkewMs", () => {
	it("shortens the lease and the killer so both end that long before the record expires", async () => {
		const clock = new MockClock(1_000_000);
		const driver = withFaults(createMiniTTLStorage(clock), { clock });
		const killer = new RecordingKiller(clock);
		const elections = createElections(vvmLeadershipStorage(driver), {
			clock,
			killer,
			maxClockSkewMs: 6_000,
		});
		const t0 = clock.monotonic();
		await elections.acquireLeadership(1, "a", 20);
		// min(0.8 d, d - skew - 0.025 d) = min(16 s, 20 - 6 - 0.5 s)
		expect(elections.leadership(1)?.leaseDeadline).toBe(t0 + 13_500);
		expect(killer.deadline).toBe(t0 + 13_500);
		driver.inject({ on: "compareAndSwap", action: faults.hook(() => new Promise(() => {})) });
		clock.advance(5_000); // the renewal hangs: its killer is capped at the same limit
		await new Promise((r) => setImmediate(r));
		expect(killer.deadline).toBe(t0 + 13_500);
		clock.advance(8_500);
		expect(elections.leadership(1)).toBeUndefined(); // the signal aborted at the lease deadline
		expect(killer.firedAt(t0 + 13_500)).toBe(t0 + 13_500);
	});

	it("a skew below 0.2 d - 0.025 d leaves the seed's 0.8 d lease as it is", async () => {
		const clock = new MockClock(1_000_000);
		const elections = createElections(vvmLeadershipStorage(createMiniTTLStorage(clock)), {
			clock,
			killer: new RecordingKiller(clock),
			maxClockSkewMs: 3_500,
		});
		await elections.acquireLeadership(1, "a", 20);
		expect(elections.leadership(1)?.leaseTimeLeftMs).toBe(16_000);
	});

	it("rejects a bad skew before any I/O", async () => {
		const clock = new MockClock(1_000_000);
		const driver = withFaults(createMiniTTLStorage(clock), { clock });
		const storage = vvmLeadershipStorage(driver);
		expect(() => createElections(storage, { maxClockSkewMs: -1 })).toThrow(RangeError);
		expect(() => createElections(storage, { maxClockSkewMs: 1.5 })).toThrow(RangeError);
		const elections = createElections(storage, {
			clock,
			killer: new RecordingKiller(clock),
			maxClockSkewMs: 10_001,
		});
		await expect(elections.acquireLeadership(1, "a", 20)).rejects.toThrow(/at most half/);
		expect(driver.count("insertIfNotExists")).toBe(0);
	});
});

describe("logger", () => {
	it("logs leadership events at their levels; nothing without a logger", async () => {
		const clock = new MockClock(1_000_000);
		const driver = withFaults(createMiniTTLStorage(clock), { clock });
		const lines: Array<[string, Record<string, unknown>, string | undefined]> = [];
		const at =
			(level: string) =>
			(fields: object, message?: string): void => {
				lines.push([level, fields as Record<string, unknown>, message]);
			};
		const elections = createElections(vvmLeadershipStorage(driver), {
			clock,
			killer: new RecordingKiller(clock),
			logger: { error: at("error"), warn: at("warn"), info: at("info"), debug: at("debug") },
		});
		await elections.acquireLeadership(1, "a", 20);
		driver.inject({ on: "compareAndSwap", action: faults.fail(), times: 1 });
		await clock.advanceAsync(6_000); // one failed attempt, then a successful retry
		await elections.cleanup();
		expect(lines.map(([level, f]) => `${level}:${String(f.event)}`)).toEqual([
			"info:acquired",
			"warn:renewal-failed",
			"debug:renewed",
			"info:released",
		]);
		expect(lines[0]?.[1]).toMatchObject({ pkg: "@vvm/ielections", key: "1", value: "a" });
		expect(lines[0]?.[2]).toBe("acquired leadership of 1");
	});
});
