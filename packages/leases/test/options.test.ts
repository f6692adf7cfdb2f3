// The options every host of a lease cluster agrees on are checked once, here, for createLeaseNode
// and for callers that take them from elsewhere (the host's CLI), with the caller's names.
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { checkLeaseTimings, createLeaseNode, LEASE_DEFAULTS } from "../src/index.ts";

describe("checkLeaseTimings", () => {
	it("fills the defaults and returns what it checked", () => {
		expect(checkLeaseTimings({})).toEqual({
			leaseIntervalMs: LEASE_DEFAULTS.leaseIntervalMs,
			maxClockSkewMs: LEASE_DEFAULTS.maxClockSkewMs,
			namespace: LEASE_DEFAULTS.namespace,
		});
		expect(
			checkLeaseTimings({ leaseIntervalMs: 2_000, maxClockSkewMs: 499, namespace: "n" }),
		).toEqual({
			leaseIntervalMs: 2_000,
			maxClockSkewMs: 499,
			namespace: "n",
		});
	});

	it.each([
		[
			{ leaseIntervalMs: 99 },
			RangeError,
			"leaseIntervalMs must be an integer in 100..86400000, got 99",
		],
		[{ leaseIntervalMs: 1_000.5 }, RangeError, "leaseIntervalMs must be an integer"],
		[{ maxClockSkewMs: -1 }, RangeError, "maxClockSkewMs must be a number >= 0, got -1"],
		[
			{ leaseIntervalMs: 2_000, maxClockSkewMs: 500 },
			RangeError,
			"maxClockSkewMs 500 must be below a quarter of leaseIntervalMs 2000 (below 500)",
		],
		[{ namespace: " " }, TypeError, "namespace must not be empty"],
		[{ namespace: "x".repeat(201) }, RangeError, "namespace must be at most 200 bytes, got 201"],
	])("refuses %j", (timings, type, message) => {
		expect(() => checkLeaseTimings(timings)).toThrow(type);
		expect(() => checkLeaseTimings(timings)).toThrow(message);
	});

	it("names the options as the caller does", () => {
		expect(() =>
			checkLeaseTimings({ leaseIntervalMs: 2_000, maxClockSkewMs: 600 }, (o) => `--${o}`),
		).toThrow("--maxClockSkewMs 600 must be below a quarter of --leaseIntervalMs 2000");
	});

	it("is what createLeaseNode applies, before any I/O", () => {
		const storage = createMemTTLStorage();
		const base = { storage, address: "h:1" };
		expect(() => createLeaseNode({ ...base, leaseIntervalMs: 2_000, maxClockSkewMs: 500 })).toThrow(
			"maxClockSkewMs 500 must be below a quarter of leaseIntervalMs 2000",
		);
		expect(() => createLeaseNode({ ...base, namespace: "" })).toThrow(
			"namespace must not be empty",
		);
	});
});
