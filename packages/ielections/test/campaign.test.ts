import { MockClock } from "@vvm/clock";
import { campaign, createElections, ElectionsError, vvmLeadershipStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

const settle = async (): Promise<void> => {
	for (let i = 0; i < 10; i++) await new Promise<void>((r) => setImmediate(r));
};

function setup() {
	const clock = new MockClock(1_000_000);
	const driver = withFaults(createMiniTTLStorage(clock), { clock });
	const storage = vvmLeadershipStorage(driver);
	const elections = (killer = new RecordingKiller(clock)) =>
		createElections(storage, { clock, killer });
	return { clock, driver, storage, elections };
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

	// Issue 35: a lost leadership's killer stays armed (its work may still run), so a campaign that
	// led again in the same process was SIGKILLed while leading, its fresh record blocking every
	// other candidate. A loss now ends the campaign: done rejects, and the process is to exit.
	it("after a lost renewal (record stolen) it ends: done rejects with ELECTIONS_LOST, never leads again", async () => {
		const { clock, storage, elections } = setup();
		const killer = new RecordingKiller(clock);
		const e = elections(killer);
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
		const ended = run.done.then(
			() => "resolved",
			(error: unknown) => (ElectionsError.is(error) ? error.code : String(error)),
		);
		await settle();
		expect(started).toBe(1);
		// Someone overwrites the record: the next renewal loses.
		expect(await storage.compareAndSwap(2, "me", "thief", 20)).toBe(true);
		await clock.advanceAsync(5_000);
		await settle();
		expect(stopped).toEqual(["ELECTIONS_LOST"]);
		expect(await ended).toBe("ELECTIONS_LOST");
		// The killer stays armed: the lost leadership's deadline is still pending.
		expect(killer.disarmed).toBe(false);
		expect(killer.deadline).toBeLessThan(Number.POSITIVE_INFINITY);
		// The thief's record expires 20 s after its write: the ended campaign does not take the key.
		await clock.advanceAsync(40_000);
		await settle();
		expect(started).toBe(1);
		expect(await storage.get(2)).toBeUndefined();
		await run.stop(); // after a loss: resolves, the loss was reported by done
		await e.cleanup();
	});

	it("after its record is gone (the issue's sequence) it does not re-acquire the free key", async () => {
		const { clock, storage, elections } = setup();
		const killer = new RecordingKiller(clock);
		const e = elections(killer);
		const led: number[] = [];
		const run = campaign(e, {
			key: 6,
			value: "me",
			durationSeconds: 20,
			retryMs: 10,
			clock,
			onStartedLeading: () => led.push(clock.monotonic()),
		});
		const rejection = run.done.catch((error: unknown) => error);
		await settle();
		await clock.advanceAsync(5_000); // one good renewal
		await settle();
		expect(e.leadership(6)?.renewals).toBe(1);
		expect(await storage.compareAndDelete(6, "me")).toBe(true);
		await clock.advanceAsync(5_000); // the renewal finds the record gone: lost
		await settle();
		const error = await rejection;
		expect(ElectionsError.is(error) && error.code).toBe("ELECTIONS_LOST");
		await clock.advanceAsync(1_000); // 100 retry periods: the key stays free
		await settle();
		expect(led).toHaveLength(1);
		expect(await storage.get(6)).toBeUndefined();
		expect(killer.firedAt()).toBeUndefined();
		expect(killer.deadline).toBeLessThan(Number.POSITIVE_INFINITY);
		await e.cleanup();
	});

	it("after renewals fail (ELECTIONS_STORAGE_ERROR) it ends once its record is deleted", async () => {
		const { clock, driver, storage, elections } = setup();
		const e = elections(new RecordingKiller(clock));
		const stopped: string[] = [];
		const run = campaign(e, {
			key: 7,
			value: "me",
			durationSeconds: 20,
			clock,
			onStoppedLeading: (reason) => stopped.push(reason.code),
		});
		let settled: unknown = "pending";
		run.done.then(
			() => {
				settled = "resolved";
			},
			(error: unknown) => {
				settled = error;
			},
		);
		await settle();
		driver.inject({ on: "compareAndSwap", action: faults.fail(), times: 3 });
		await clock.advanceAsync(5_000); // attempt 1 fails
		await settle();
		await clock.advanceAsync(1_000); // attempt 2
		await settle();
		await clock.advanceAsync(1_000); // attempt 3: given up
		await settle();
		expect(stopped).toEqual(["ELECTIONS_STORAGE_ERROR"]);
		expect(ElectionsError.is(settled) && settled.code).toBe("ELECTIONS_STORAGE_ERROR");
		// done rejected only after the compare-and-delete of the lost record.
		expect(await storage.get(7)).toBeUndefined();
		await clock.advanceAsync(60_000);
		await settle();
		expect(await storage.get(7)).toBeUndefined();
		await e.cleanup();
	});

	it("a voluntary release campaigns on; a cleanup of the elections ends it (done resolves)", async () => {
		const { clock, storage, elections } = setup();
		const e = elections();
		let started = 0;
		const run = campaign(e, {
			key: 8,
			value: "me",
			durationSeconds: 20,
			clock,
			onStartedLeading: () => {
				started++;
			},
		});
		await settle();
		await e.releaseLeadership(8); // someone gave the key up on purpose: not a loss
		await settle();
		expect(started).toBe(2);
		expect(await storage.get(8)).toBe("me");
		await e.cleanup();
		await expect(run.done).resolves.toBeUndefined();
		expect(await storage.get(8)).toBeUndefined();
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
