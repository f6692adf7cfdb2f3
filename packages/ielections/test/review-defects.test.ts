// Defects found in review: each case fails on the code it was written against.

import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { Clock, TimerHandle } from "@vvm/clock";
import { MockClock } from "@vvm/clock";
import { createElections, vvmLeadershipStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

/**
 * A host clock as the OS gives it: timers run on monotonic time (Node timers), `now()` is the wall
 * clock (`Date.now()`), which NTP, a VM resume or an operator may step by `stepMs`.
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

const settle = async (): Promise<void> => {
	for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("review: lease arithmetic on the wall clock", () => {
	it("a forward wall-clock step during a successful renewal neither fires the killer nor drops the lease", async () => {
		const mono = new MockClock(1_000_000);
		const wall = new SteppingWallClock(mono);
		// The storage's clock (a server, or this host's monotonic time) does not step.
		const driver = withFaults(createMiniTTLStorage(mono), { clock: mono });
		const killer = new RecordingKiller(mono);
		const elections = createElections(vvmLeadershipStorage(driver), { clock: wall, killer });
		const d = 20;
		const signal = await elections.acquireLeadership(1, "a#1", d);
		expect(signal).toBeDefined();
		// NTP steps the wall clock 20 s forward while the first renewal is in flight.
		driver.inject({
			on: "compareAndSwap",
			action: faults.hook(() => {
				wall.offsetMs += 20_000;
			}),
			times: 1,
		});
		mono.advance(d * 250);
		await settle();
		expect(elections.leadership(1)?.renewals).toBe(1);
		// The record was just renewed in storage: it lives 20 s of real time from now.
		expect(await driver.queryTTL(new Uint8Array([0, 0, 0, 1]), new Uint8Array([0, 0, 0, 1]))).toBe(
			20,
		);
		mono.advance(0);
		await settle();
		// A healthy leader: the killer must stay 0.8 d (16 s) after the renewal was sent, and the
		// leadership must stay held.
		expect({
			killerDelayAfterRenewalMs: killer.scheduled.at(-1)?.delayMs,
			signalAborted: signal?.aborted,
		}).toEqual({ killerDelayAfterRenewalMs: 16_000, signalAborted: false });
		await elections.cleanup();
	});
});

describe("review: memory held by a leadership", () => {
	it("renewals do not accumulate memory while the leadership is held", async () => {
		setFlagsFromString("--expose-gc");
		const gc = runInNewContext("gc") as () => void;
		const heap = (): number => {
			gc();
			gc();
			return process.memoryUsage().heapUsed;
		};
		const clock = new MockClock(1_000_000);
		const storage = vvmLeadershipStorage(createMiniTTLStorage(clock));
		let renewals = 0;
		const elections = createElections(storage, {
			clock,
			killer: { schedule: () => {} },
			onEvent: (e) => {
				if (e.type === "renewed") renewals++;
			},
		});
		const signal = await elections.acquireLeadership(1, "a#1", 20);
		const renew = async (n: number): Promise<void> => {
			const until = renewals + n;
			while (renewals < until) {
				clock.advance(5_000);
				for (let i = 0; i < 20; i++) await null;
			}
		};
		await renew(1_000);
		const before = heap();
		const N = 20_000; // 20 000 renewals = 27.8 hours of a 20 s leadership
		await renew(N);
		const grownBytes = heap() - before;
		expect(signal?.aborted).toBe(false);
		// Nothing per renewal should outlive the renewal: allow 1 MB of noise for 20 000 renewals.
		expect(
			grownBytes,
			`heap grew ${grownBytes} bytes over ${N} renewals (${Math.round(grownBytes / N)} bytes per renewal)`,
		).toBeLessThan(1_000_000);
		await elections.cleanup();
	}, 60_000);
});
