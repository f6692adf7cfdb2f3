import { MockClock } from "@vvm/clock";
import { campaign, createElections, ElectionsError, vvmLeadershipStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

const settle = async (): Promise<void> => {
	for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

function setup() {
	const clock = new MockClock(1_000_000);
	const driver = withFaults(createMiniTTLStorage(clock), { clock });
	const storage = vvmLeadershipStorage(driver);
	const elections = () => createElections(storage, { clock, killer: new RecordingKiller(clock) });
	return { clock, storage, elections };
}

describe("campaign", () => {
	it("follows while another leads, then leads once the record is free; stop() releases", async () => {
		const { clock, storage, elections } = setup();
		expect(await storage.insertIfNotExist(1, "other", 20)).toBe(true);
		const events: string[] = [];
		const e = elections();
		const run = campaign(e, {
			key: 1,
			value: "me",
			durationSeconds: 20,
			clock,
			onNewLeader: (v) => events.push(`leader:${v ?? "none"}`),
			onStartedLeading: (signal) => {
				events.push("started");
				signal.addEventListener("abort", () => events.push("signal-aborted"));
			},
			onStoppedLeading: (reason) => events.push(`stopped:${reason.code}`),
		});
		await settle();
		expect(events).toEqual(["leader:other"]);
		await clock.advanceAsync(15_000); // the other's record still lives: attempts every 5 s
		expect(events).toEqual(["leader:other"]);
		await clock.advanceAsync(5_000); // expired at +20 s: the next attempt acquires
		await settle();
		expect(events).toEqual(["leader:other", "leader:me", "started"]);
		expect(await e.currentLeader(1)).toBe("me");
		await run.stop();
		expect(events.slice(3)).toEqual(["signal-aborted", "stopped:ELECTIONS_RELEASED"]);
		expect(await storage.get(1)).toBeUndefined();
		await e.cleanup();
	});

	it("after a loss it goes back to following and campaigns again", async () => {
		const { clock, storage, elections } = setup();
		const e = elections();
		const stopped: string[] = [];
		let started = 0;
		const run = campaign(e, {
			key: 2,
			value: "me",
			durationSeconds: 20,
			clock,
			onStartedLeading: () => {
				started++;
			},
			onStoppedLeading: (reason) => stopped.push(reason.code),
		});
		await settle();
		expect(started).toBe(1);
		// Someone overwrites the record: the next renewal loses.
		expect(await storage.compareAndSwap(2, "me", "thief", 20)).toBe(true);
		await clock.advanceAsync(5_000);
		await settle();
		expect(stopped).toEqual(["ELECTIONS_LOST"]);
		expect(ElectionsError.is(new ElectionsError("ELECTIONS_LOST", "x"))).toBe(true);
		// The thief's record expires 20 s after its write; the campaign takes the key back.
		await clock.advanceAsync(20_000);
		await settle();
		expect(started).toBe(2);
		await run.stop();
		await e.cleanup();
	});

	it("ends when its signal aborts, and with await using", async () => {
		const { clock, storage, elections } = setup();
		const e = elections();
		const ac = new AbortController();
		const run = campaign(e, { key: 3, value: "me", durationSeconds: 20, clock, signal: ac.signal });
		await settle();
		expect(await storage.get(3)).toBe("me");
		ac.abort();
		await run.done;
		expect(await storage.get(3)).toBeUndefined();
		{
			await using scoped = campaign(e, { key: 4, value: "me", durationSeconds: 20, clock });
			await settle();
			expect(await storage.get(4)).toBe("me");
			expect(scoped.done).toBeInstanceOf(Promise);
		}
		expect(await storage.get(4)).toBeUndefined();
		await e.cleanup();
	});

	it("rejects bad options before any I/O", () => {
		const { elections } = setup();
		const e = elections();
		expect(() => campaign(e, { key: 1, value: "v", durationSeconds: 0 })).toThrow(RangeError);
		expect(() => campaign(e, { key: 1, value: "v", durationSeconds: 5, retryMs: 0 })).toThrow(
			RangeError,
		);
	});

	it("await using on elections runs cleanup", async () => {
		const { storage, elections } = setup();
		{
			await using e = elections();
			expect(await e.acquireLeadership(5, "me", 20)).toBeDefined();
		}
		expect(await storage.get(5)).toBeUndefined();
	});
});
