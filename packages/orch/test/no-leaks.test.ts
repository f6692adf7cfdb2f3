import { systemClock } from "@vvm/clock";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { expect, it } from "vitest";
import { provideVVM } from "../src/index.ts";
import { FakeKiller } from "./fakes.ts";

const timers = (): number =>
	process.getActiveResourcesInfo().filter((r) => r === "Timeout" || r === "Immediate").length;

it("leaves no timer of ours behind after shutdown (real clock, real elections)", async () => {
	const baseline = timers();
	const storage = vvmLeadershipStorage(createMemTTLStorage());
	const killer = new FakeKiller();
	const leader = provideVVM({ storage, address: "a", clock: systemClock, killer });
	await leader.launch(4, 0);
	// a second VVM waiting for the slot: its retry pause is a timer too
	let refused: () => void = () => {};
	const firstRefusal = new Promise<void>((resolve) => {
		refused = resolve;
	});
	const waiter = provideVVM({
		storage,
		address: "b",
		clock: systemClock,
		killer,
		acquireRetryMs: 50,
		onEvent: (e) => {
			if (e.type === "acquire-failed") refused();
		},
	});
	const waiting = waiter.launch(4, 60_000);
	await firstRefusal;
	await new Promise((resolve) => setImmediate(resolve)); // its retry pause is armed now
	expect(timers()).toBeGreaterThan(baseline); // renewal timer and retry pause are armed
	expect(await waiter.shutdown()).toBeUndefined();
	expect((await waiting).aborted).toBe(false);
	expect(await leader.shutdown()).toBeUndefined();
	expect(timers()).toBe(baseline);
});
