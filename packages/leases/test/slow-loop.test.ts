// Storage too slow for the lease interval: a run of a background loop longer than its interval is
// reported as a `slow-loop` event, at most once per loop per lease interval, and counted.

import { MockClock } from "@vvm/clock";
import type { LeaseEvent } from "@vvm/leases";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { createLeaseNode } from "../src/index.ts";
import { Loop } from "../src/loop.ts";
import { SlowRuns } from "../src/slow-runs.ts";

const T = 1_700_000_000_000;
const flush = async (): Promise<void> => {
	for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
};
type Slow = Extract<LeaseEvent, { type: "slow-loop" }>;

describe("slow loops", () => {
	it("Loop reports each run's duration on the monotonic clock, a failed run too", async () => {
		const clock = new MockClock(T);
		const durations: number[] = [];
		let fail = false;
		const loop = new Loop(
			clock,
			10_000, // runs only when triggered here
			async () => {
				await clock.sleep(250);
				if (fail) throw new Error("storage down");
			},
			() => {},
			(ms) => durations.push(ms),
		);
		loop.start();
		loop.trigger();
		await flush();
		clock.advance(250);
		await flush();
		fail = true;
		loop.trigger();
		await flush();
		clock.advance(250);
		await flush();
		await loop.stop();
		expect(durations).toEqual([250, 250]);
	});

	it("SlowRuns: nothing at or below the interval; the first slow run at once; then one event per lease interval with the longest run and the count", () => {
		const clock = new MockClock(T);
		const events: Slow[] = [];
		let counted = 0;
		const slow = new SlowRuns({
			loop: "poll",
			intervalMs: 100,
			leaseIntervalMs: 1_000,
			clock,
			emit: (e) => events.push(e as Slow),
			count: () => {
				counted++;
			},
		});
		slow.record(100);
		expect(events).toEqual([]);
		slow.record(140);
		expect(events).toMatchObject([
			{
				type: "slow-loop",
				loop: "poll",
				durationMs: 140,
				runs: 1,
				intervalMs: 100,
				leaseIntervalMs: 1_000,
				at: T,
			},
		]);
		clock.advance(500);
		slow.record(900);
		slow.record(50);
		slow.record(300);
		clock.advance(499);
		slow.record(120);
		expect(events).toHaveLength(1); // 999 ms after the first: still within one lease interval
		clock.advance(1);
		slow.record(101);
		expect(events).toHaveLength(2);
		expect(events[1]).toMatchObject({ durationMs: 900, runs: 4, at: T + 1_000 });
		expect(counted).toBe(5);
	});

	it("a node on storage slower than its loops warns once per loop per lease interval and counts every slow run; on prompt storage it never does", async () => {
		const clock = new MockClock(T);
		const storage = withFaults(createMemTTLStorage({ clock }), { clock });
		const events: Slow[] = [];
		const node = createLeaseNode({
			storage,
			address: "a:1",
			clock,
			leaseIntervalMs: 1_000, // heartbeat, poll and tick every 100 ms
			maxClockSkewMs: 100,
			placementDriver: { groups: 2 },
			onEvent: (e) => {
				if (e.type === "slow-loop") events.push(e);
			},
		});
		await node.start();
		const run = async (ms: number): Promise<void> => {
			for (let t = 0; t < ms; t += 10) {
				clock.advance(10);
				await flush();
			}
		};
		await run(2_000);
		expect(events).toEqual([]);
		expect(node.metrics().slowRuns).toBe(0);

		storage.inject({ on: "*", action: faults.delay(150) });
		await run(3_000);
		storage.clear();
		const loops = new Set(events.map((e) => e.loop));
		expect([...loops].sort()).toEqual(["heartbeat", "poll", "tick"]);
		for (const loop of loops) {
			const mine = events.filter((e) => e.loop === loop);
			// 3 s of slow storage, at most one event per lease interval (1 s) of each loop.
			expect(mine.length).toBeGreaterThanOrEqual(1);
			expect(mine.length).toBeLessThanOrEqual(4);
			for (const e of mine) {
				expect(e.durationMs).toBeGreaterThan(e.intervalMs);
				expect(e.intervalMs).toBe(100);
				expect(e.leaseIntervalMs).toBe(1_000);
			}
		}
		const reported = events.reduce((n, e) => n + e.runs, 0);
		expect(node.metrics().slowRuns).toBeGreaterThanOrEqual(reported);
		const closed = node.close();
		await run(500); // the runs still waiting on the delay finish
		await closed;
	});
});
