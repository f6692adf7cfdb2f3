import { MockClock } from "@vvm/clock";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { VVMServiceContext } from "../src/index.ts";
import { provideVVM } from "../src/index.ts";
import { FakeKiller } from "./fakes.ts";

describe("fencing tokens through the VVM", () => {
	it("services see the leadership's token; the next leader of the slot gets a greater one", async () => {
		const clock = new MockClock(1_000_000);
		const storage = vvmLeadershipStorage(createMemTTLStorage({ clock }));
		const seen: Array<number | undefined> = [];
		const service = {
			name: "probe",
			async start(ctx: VVMServiceContext) {
				seen.push(ctx.fencingToken);
			},
			async stop() {},
		};
		for (const address of ["a#1", "b#2"]) {
			const vvm = provideVVM({
				storage,
				address,
				clock,
				killer: new FakeKiller(),
				services: [service],
			});
			expect((await vvm.launch(20, 0)).aborted).toBe(false);
			expect(vvm.leadership()?.fencingToken).toBe(seen.at(-1));
			expect(await vvm.shutdown()).toBeUndefined();
		}
		expect(seen).toHaveLength(2);
		expect(seen[0]).toBeGreaterThanOrEqual(1);
		expect(seen[1]).toBeGreaterThan(seen[0] as number);
	});
});

describe("maxClockSkewMs through the VVM", () => {
	it("is validated before any I/O: in the config, and against the duration at launch", () => {
		const storage = vvmLeadershipStorage(createMemTTLStorage());
		expect(() => provideVVM({ storage, address: "a", maxClockSkewMs: -5 })).toThrow(
			/config.maxClockSkewMs must be an integer in 0..2147483647, got -5/,
		);
		const vvm = provideVVM({
			storage,
			address: "a",
			maxClockSkewMs: 3_000,
			killer: new FakeKiller(),
		});
		expect(() => vvm.launch(4, 0)).toThrow(
			/maxClockSkewMs 3000 is more than half of leadershipDurationSeconds 4 \(at most 2000 ms\)/,
		);
	});

	it("shortens the lease the services act on", async () => {
		const clock = new MockClock(1_000_000);
		const vvm = provideVVM({
			storage: vvmLeadershipStorage(createMemTTLStorage({ clock })),
			address: "a",
			clock,
			killer: new FakeKiller(),
			maxClockSkewMs: 2_000,
		});
		await vvm.launch(4, 0);
		// min(0.8 d, d - skew - 0.025 d) = min(3.2 s, 4 - 2 - 0.1 s)
		expect(vvm.leadership()?.leaseTimeLeftMs).toBe(1_900);
		await vvm.shutdown();
	});
});

describe("await using", () => {
	it("shuts a launched VVM down at the end of the scope and releases the slot", async () => {
		const clock = new MockClock(1_000_000);
		const storage = vvmLeadershipStorage(createMemTTLStorage({ clock }));
		{
			await using vvm = provideVVM({ storage, address: "a#1", clock, killer: new FakeKiller() });
			expect((await vvm.launch(20, 0)).aborted).toBe(false);
			expect(await storage.get(1)).toBe("a#1");
		}
		expect(await storage.get(1)).toBeUndefined();
		{
			await using idle = provideVVM({ storage, address: "b#2", clock, killer: new FakeKiller() });
			expect(idle.leadership()).toBeUndefined(); // never launched: disposing does nothing
		}
	});
});
