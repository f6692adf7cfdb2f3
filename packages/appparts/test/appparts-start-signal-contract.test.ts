// Review 5, defect F5 (Low): the two placements read PartitionPlacement.start(signal) differently.
// The leases placement uses the signal for the start only (the README starts it with
// `placement.start(AbortSignal.timeout(60_000))`, examples/cp-over-leases does the same), while the
// static placement closes itself when the signal aborts, at any time later: started the README's
// way, a static placement undeploys every partition 60 s after it started.
//
// Copy into packages/appparts/test/ and run from the repository root:
//   pnpm vitest run --project appparts test/appparts-start-signal-contract.test.ts
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { PlacementHandlers } from "../src/index.ts";
import { createStaticPlacement } from "../src/index.ts";

describe("review 5: PartitionPlacement.start(signal)", () => {
	it("a start signal that aborts after start() resolved (a start timeout) does not stop the static placement", async () => {
		const ended: Array<[number, string]> = [];
		const handlers: PlacementHandlers = {
			onGranted: async () => {},
			onEnded: (p, reason) => ended.push([p, reason]),
		};
		const placement = createStaticPlacement({
			partitions: 2,
			numVVM: 1,
			handlers,
			leadership: () => ({
				slot: 1,
				address: "10.0.0.1:8080#n",
				durationSeconds: 20,
				acquiredAt: 0,
				renewals: 0,
				lastRenewedAt: 0,
				leaseDeadline: Number.MAX_SAFE_INTEGER,
				leaseTimeLeftMs: Number.MAX_SAFE_INTEGER,
				fencingToken: 1,
			}),
			leaderOf: async () => undefined,
			storage: createMemTTLStorage(), // adapted: the placement keeps numVVM and epochs there
		});
		const startTimeout = new AbortController(); // AbortSignal.timeout(60_000), fired by hand
		await placement.start(startTimeout.signal);
		await placement.service.start({
			signal: new AbortController().signal,
			leaseValid: () => true,
			fencingToken: 1,
		});
		await new Promise((r) => setImmediate(r));
		expect(placement.served()).toEqual([0, 1]);
		startTimeout.abort(new Error("start timeout elapsed")); // 60 s later: start() is long done
		await new Promise((r) => setImmediate(r));
		// Adapted: a copy of `ended`, since the close() below rightly ends both partitions.
		const after = { served: placement.served(), ended: [...ended] };
		await placement.close();
		expect(after).toEqual({ served: [0, 1], ended: [] });
	});
});
