import { vvmLeadershipStorage } from "@vvm/ielections";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { provideVVM } from "../src/index.ts";
import { FakeKiller } from "./fakes.ts";
import { newClock, vvmCases } from "./vvm-cases.ts";

// The same cases over the real @vvm/ielections on the mem driver, sharing one MockClock.
vvmCases("real elections over ttlstorage-mem", () => {
	const clock = newClock();
	return {
		clock,
		storage: vvmLeadershipStorage(createMemTTLStorage({ clock })),
		killer: new FakeKiller(),
	};
});

describe("VVM lease (real elections)", () => {
	it("leaseValid turns false at the local lease deadline while a renewal hangs, before any loss", async () => {
		const clock = newClock();
		const driver = withFaults(createMemTTLStorage({ clock }), { clock });
		const killer = new FakeKiller();
		const vvm = provideVVM({ storage: vvmLeadershipStorage(driver), address: "a", clock, killer });
		const problem = await vvm.launch(20, 0);
		const { leaseDeadline, lastRenewedAt } = vvm.leadership() ?? {
			leaseDeadline: 0,
			lastRenewedAt: 0,
		};
		expect(leaseDeadline - lastRenewedAt).toBe(16_000);
		driver.inject({ on: "compareAndSwap", action: faults.delay(60_000), times: 1 });
		await clock.advanceAsync(5_000); // the renewal is now in flight and hangs
		await clock.advanceAsync(leaseDeadline - clock.now() - 1);
		expect(vvm.leaseValid()).toBe(true);
		await clock.advanceAsync(1);
		expect(vvm.leaseValid()).toBe(false); // the services must refuse from here on
		expect(vvm.leadership()).toBeDefined(); // although the leadership is not lost yet
		expect(problem.aborted).toBe(false);
		// the killer deadline armed before that CAS is 0.75 d after it was sent: later than the lease
		const beforeCas = killer.scheduled.at(-1);
		expect(beforeCas?.delayMs).toBe(15_000);
		const shutdown = vvm.shutdown();
		await clock.advanceAsync(60_000);
		await shutdown;
	});
});
