import { vvmLeadershipStorage } from "@vvm/ielections";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { VVMError } from "../src/index.ts";
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
	it("at the local lease deadline of a hanging renewal, services must stop: leaseValid false, leadership lost, killer later", async () => {
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
		const casSentAt = clock.monotonic();
		await clock.advanceAsync(leaseDeadline - clock.monotonic() - 1);
		expect(vvm.leaseValid()).toBe(true);
		expect(problem.aborted).toBe(false);
		await clock.advanceAsync(1);
		expect(vvm.leaseValid()).toBe(false); // the services must refuse from here on
		expect(problem.aborted).toBe(true); // and the elections give the leadership up now
		expect((problem.reason as VVMError).code).toBe("VVM_LEADERSHIP_LOST");
		// the killer deadline armed before that CAS (0.75 d after it was sent, capped at 0.5 s
		// before the record's expiry) is later still
		const beforeCas = killer.scheduled.find((k) => k.delayMs === 14_500);
		expect(beforeCas).toBeDefined();
		expect(casSentAt + 14_500).toBeGreaterThan(leaseDeadline);
		const shutdown = vvm.shutdown();
		await clock.advanceAsync(60_000);
		expect(await shutdown).toBe(problem.reason);
	});

	it("shutdown while the insert is still in flight: cleanup undoes it, no leadership, no problem", async () => {
		const clock = newClock();
		const driver = withFaults(createMemTTLStorage({ clock }), { clock });
		driver.inject({ on: "insertIfNotExists", action: faults.delay(10_000), times: 1 });
		const storage = vvmLeadershipStorage(driver);
		const vvm = provideVVM({ storage, address: "a", clock, killer: new FakeKiller() });
		const armed = clock.nextTimerArmed(); // the delayed insert
		const launching = vvm.launch(20, 0);
		await armed;
		const shutdown = vvm.shutdown();
		await clock.advanceAsync(10_000); // the insert lands after cleanup began
		expect(await shutdown).toBeUndefined();
		expect((await launching).aborted).toBe(false);
		expect(vvm.leadership()).toBeUndefined();
		expect(await storage.get(1)).toBeUndefined();
		expect(clock.pendingTimers).toBe(0);
	});
});
