// Defects found in review: each case fails on the code it was written against.
import type { Clock, TimerHandle } from "@vvm/clock";
import { MockClock } from "@vvm/clock";
import { LEADERSHIP_TIMINGS, VVM_LEADER_PREFIX, vvmLeadershipStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { provideVVM } from "../src/index.ts";
import { FakeKiller } from "./fakes.ts";

/**
 * A host clock as the OS gives it: timers run on monotonic time (Node timers), `now()` is the wall
 * clock (`Date.now()`), which NTP, a VM resume or an operator may step.
 */
class SteppingWallClock implements Clock {
	offsetMs = 0;
	readonly mono: MockClock;
	constructor(mono: MockClock) {
		this.mono = mono;
	}
	now(): number {
		return this.mono.now() + this.offsetMs;
	}
	monotonic(): number {
		return this.mono.monotonic();
	}
	setTimer(delayMs: number, callback: () => void): TimerHandle {
		return this.mono.setTimer(delayMs, callback);
	}
	sleep(delayMs: number, signal?: AbortSignal): Promise<void> {
		return this.mono.sleep(delayMs, signal);
	}
}

describe("review: a backward wall-clock step on the leader", () => {
	it("never leaves two VVMs with a valid lease on one slot, and the killer fires before the record expires", async () => {
		const mono = new MockClock(1_700_000_000_000);
		const wall = new SteppingWallClock(mono);
		// One shared storage whose clock does not step (Cassandra's server, or DynamoDB compared
		// with the other host's clock).
		const driver = withFaults(createMemTTLStorage({ clock: mono }), { clock: mono });
		const storage = vvmLeadershipStorage(driver);
		const killer = new RecordingKiller(mono); // records its deadlines in monotonic time
		const leader = provideVVM({ storage, address: "10.0.0.1:8080#a", clock: wall, killer });
		const t0 = mono.now();
		const d = 20;
		expect((await leader.launch(d, 0)).aborted).toBe(false);

		// The wall clock steps back 10 s while the first renewal (sent at t0 + 5 s) is in flight;
		// the renewal succeeds, so the record now expires at t0 + 25 s. Then storage trouble: the next
		// tick's first two attempts fail at once, the third hangs.
		driver.inject({
			on: "compareAndSwap",
			action: faults.hook(() => {
				wall.offsetMs -= 10_000;
			}),
			times: 1,
		});
		driver.inject({
			on: "compareAndSwap",
			action: faults.fail("TTLSTORAGE_UNAVAILABLE"),
			times: 2,
		});
		// (Only the leader record's: the fencing-token counter of the next leader is another key.)
		driver.inject({
			on: "compareAndSwap",
			match: (c) => (c.args[0] as Uint8Array)[3] === VVM_LEADER_PREFIX,
			action: faults.hook(() => new Promise<void>(() => {})),
		});
		await mono.advanceAsync(5_000);
		expect(leader.leadership()?.renewals).toBe(1);
		const renewalSentAt = t0 + 5_000;
		const recordExpiresAt = renewalSentAt + d * 1_000;

		// The record expired in storage: another VVM, on a host with a sane clock, takes the slot.
		await mono.advanceAsync(recordExpiresAt - mono.now());
		const other = provideVVM({
			storage,
			address: "10.0.0.2:8080#b",
			clock: mono,
			killer: new FakeKiller(),
		});
		expect((await other.launch(d, 0)).aborted).toBe(false);
		expect(other.leaseValid()).toBe(true);

		// The old leader's lease ended at renewalSentAt + 0.8 d (t0 + 21 s) and its killer must fire
		// no later than the record's expiry (t0 + 25 s).
		const killerFiresAfterRecordExpiryMs = (killer.deadline ?? 0) - recordExpiresAt;
		expect(leader.leaseValid()).toBe(false);
		// No later than the record's expiry (the review's bound) ...
		expect(killerFiresAfterRecordExpiryMs).toBeLessThanOrEqual(0);
		// ... and, since issue 14's second point, a margin before it (0.025 d).
		expect(killerFiresAfterRecordExpiryMs).toBe(-d * 1000 * LEADERSHIP_TIMINGS.killerMargin);

		await other.shutdown();
		await leader.shutdown();
	});
});
