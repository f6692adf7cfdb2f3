// How the host logs a lease node's `slow-loop` event: a warning an operator can act on.
import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createHostLogger, logLeaseEvent } from "../src/logger.ts";

function capture() {
	const lines: Record<string, unknown>[] = [];
	const stream = new Writable({
		write(chunk, _encoding, done) {
			for (const l of String(chunk).split("\n")) if (l !== "") lines.push(JSON.parse(l));
			done();
		},
	});
	return { logger: createHostLogger("info", stream), lines };
}

describe("logLeaseEvent: slow-loop", () => {
	it("warns with what was slow, by how much, against which interval, and where to read on", async () => {
		const { logger, lines } = capture();
		logLeaseEvent(logger, {
			type: "slow-loop",
			at: 1_700_000_000_000,
			loop: "tick",
			durationMs: 1_843.6,
			runs: 5,
			intervalMs: 200,
			leaseIntervalMs: 2_000,
		});
		logLeaseEvent(logger, {
			type: "slow-loop",
			at: 1_700_000_000_000,
			loop: "heartbeat",
			durationMs: 260,
			runs: 1,
			intervalMs: 200,
			leaseIntervalMs: 2_000,
		});
		await new Promise((r) => setImmediate(r));
		expect(lines).toHaveLength(2);
		expect(lines[0]).toMatchObject({
			level: 40,
			event: "leases.slow-loop",
			loop: "tick",
			durationMs: 1_843.6,
			runs: 5,
			intervalMs: 200,
			leaseIntervalMs: 2_000,
		});
		expect(lines[0]?.msg).toBe(
			'leases: a placement-driver tick took 1844 ms, longer than its 200 ms interval (5 runs over it since the last warning); storage this slow for --lease-interval-ms 2000 lets leases lapse and partitions go dark (@vvm/leases README, "Slow storage")',
		);
		expect(lines[1]?.msg).toMatch(
			/^leases: a heartbeat write took 260 ms, longer than its 200 ms interval; storage/,
		);
	});
});
