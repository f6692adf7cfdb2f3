import type { PlacementHandlers } from "@vvm/appparts";
import { MockClock } from "@vvm/clock";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createPlacement } from "../src/create-placement.ts";

const logger = pino({ level: "silent" });
const handlers: PlacementHandlers = { onGranted: async () => {}, onEnded: () => {} };

describe("createPlacement", () => {
	it("is what createPlacement builds for --placement static, with its service", () => {
		const created = createPlacement("static", {
			partitions: 4,
			numVVM: 1,
			handlers: handlers,
			leadership: () => undefined,
			leaderOf: async () => undefined,
			storage: {} as never,
			address: () => "127.0.0.1:1",
			clock: new MockClock(),
			logger,
			leases: { leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "vvm" },
		});
		expect(created.placement.mode).toBe("static");
		expect(created.services.map((s) => s.name)).toEqual(["partitions"]);
	});
});
