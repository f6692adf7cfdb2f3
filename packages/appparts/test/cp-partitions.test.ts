// The command processor deployed as a placement grants partitions: under the grant's fencing
// token, one deployment at a time per partition, nothing deployed for a grant that already ended;
// and every option refused before anything runs.
import { MockClock } from "@vvm/clock";
import { createCommandProcessor } from "@vvm/cp";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { PartitionGrant } from "../src/index.ts";
import { createLeasesPlacement, createStaticPlacement, deployCpPartitions } from "../src/index.ts";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
	for (const close of closers.splice(0)) await close();
});

function setup() {
	const storage = createMemTTLStorage();
	const cp = createCommandProcessor({ storage, appId: 1, partitions: 4 });
	const parts = deployCpPartitions(cp);
	closers.push(() => parts.close());
	return { storage, cp, parts };
}

function grant(fencingToken: bigint): PartitionGrant & { readonly ctl: AbortController } {
	const ctl = new AbortController();
	return { ctl, signal: ctl.signal, fencingToken, leaseValid: () => !ctl.signal.aborted };
}

describe("deployCpPartitions", () => {
	it("deploys a granted partition under the grant's token and serves commands until the grant ends", async () => {
		const { parts } = setup();
		const g = grant(7n);
		await parts.handlers.onGranted(1, g);
		expect(parts.fencingToken(1)).toBe(7n);
		const p = parts.partition(1);
		if (p === undefined) throw new Error("partition 1 not deployed");
		const answer = await p.createRecord({
			wsid: 1001,
			table: "app1pkg.Customer",
			fields: { name: "Ada" },
		});
		expect(answer.CurrentWLogOffset).toBe(1);
		g.ctl.abort();
		parts.handlers.onEnded(1, "lease ended");
		expect(parts.fencingToken(1)).toBeUndefined();
		// The next grant (a higher token) waits for the undeploy, then sees the first command.
		const next = grant(8n);
		await parts.handlers.onGranted(1, next);
		const again = parts.partition(1);
		if (again === undefined) throw new Error("partition 1 not deployed again");
		expect(again).not.toBe(p);
		const second = await again.createRecord({
			wsid: 1001,
			table: "app1pkg.Customer",
			fields: { name: "Bob" },
		});
		expect(second.CurrentWLogOffset).toBe(2);
	});

	it("deploys nothing for a grant that ended before it arrived", async () => {
		const { parts } = setup();
		const g = grant(3n);
		g.ctl.abort(new Error("lease ended"));
		await expect(parts.handlers.onGranted(2, g)).rejects.toThrow("lease ended");
		expect(parts.partition(2)).toBeUndefined();
	});

	it("refuses what is not a command processor", () => {
		expect(() => deployCpPartitions({} as never)).toThrow(TypeError);
	});
});

describe("placement options are checked before anything runs", () => {
	const handlers = { onGranted: async () => {}, onEnded: () => {} };
	const base = {
		partitions: 4,
		numVVM: 2,
		handlers,
		leadership: () => undefined,
		leaderOf: async () => undefined,
		storage: createMemTTLStorage(),
		clock: new MockClock(),
	};

	it.each([
		["partitions 0", { partitions: 0 }, /partitions must be an integer in 1\.\.65536, got 0/],
		["partitions 1.5", { partitions: 1.5 }, /partitions must be an integer/],
		["numVVM 0", { numVVM: 0 }, /numVVM must be an integer in 1\.\.4294967295, got 0/],
		["holderRefreshMs 0", { holderRefreshMs: 0 }, /holderRefreshMs must be at least 1/],
		["handlers missing", { handlers: {} }, /handlers must have onGranted and onEnded/],
		["storage missing", { storage: undefined }, /storage must be a TTLStorage/],
		["namespace empty", { namespace: " " }, /namespace must be a non-empty string/],
	])("static: %s", (_, bad, message) => {
		expect(() => createStaticPlacement({ ...base, ...(bad as object) })).toThrow(message);
	});

	it("leases: partitions and handlers here, lease timings by @vvm/leases", () => {
		const leases = {
			storage: createMemTTLStorage(),
			address: "127.0.0.1:1",
			partitions: 4,
			leaseIntervalMs: 2_000,
			maxClockSkewMs: 400,
			namespace: "vvm",
			handlers,
			clock: new MockClock(),
		};
		expect(() => createLeasesPlacement({ ...leases, partitions: 70_000 })).toThrow(
			/partitions must be an integer in 1\.\.65536, got 70000/,
		);
		expect(() => createLeasesPlacement({ ...leases, handlers: {} as never })).toThrow(TypeError);
		expect(() => createLeasesPlacement({ ...leases, leaseIntervalMs: -1 })).toThrow(
			/leaseIntervalMs/,
		);
	});
});
