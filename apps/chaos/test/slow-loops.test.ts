import { describe, expect, it } from "vitest";
import { SlowLoops, slowLoopsText } from "../src/slow-loops.ts";

describe("SlowLoops", () => {
	it("tallies the hosts' slow-loop warnings, keeps the longest run per loop, ignores other lines", () => {
		const slow = new SlowLoops();
		expect(slow.report()).toBeUndefined();
		slow.record({ event: "leases.granted", partition: 1 });
		slow.record({
			event: "leases.slow-loop",
			loop: "tick",
			durationMs: 840.2,
			runs: 3,
			intervalMs: 200,
		});
		slow.record({
			event: "leases.slow-loop",
			loop: "tick",
			durationMs: 2_210,
			runs: 1,
			intervalMs: 200,
		});
		slow.record({
			event: "leases.slow-loop",
			loop: "heartbeat",
			durationMs: 410,
			runs: 2,
			intervalMs: 200,
		});
		slow.record({ event: "leases.slow-loop", loop: "poll" }); // malformed: ignored
		const report = slow.report();
		expect(report).toEqual({
			warnings: 3,
			runs: 6,
			worst: {
				tick: { durationMs: 2_210, intervalMs: 200 },
				heartbeat: { durationMs: 410, intervalMs: 200 },
			},
		});
		expect(slowLoopsText(report!)).toBe(
			'3 warning(s) from the hosts, 6 heartbeat/poll/tick run(s) longer than their interval; longest: heartbeat 410 ms (interval 200 ms), tick 2210 ms (interval 200 ms). Storage this slow lets leases lapse (@vvm/leases README, "Slow storage")',
		);
	});
});
