// Found by review of 98b2628 (placement safety, finding A, static side): `leaseDeadline` / `leaseTimeLeftMs` (and so
// `@vvm/orch`'s `leaseValid()`, which the static placement hands to `@vvm/cp` as the grant's
// `valid()`, documented "false from the local deadline on, and forever after") comes back to life:
// a renewal compare-and-swap sent before the deadline whose answer is processed after it, before
// the (late, as real timers are) lease timer fired, moves the deadline forward again (`#renew`
// set `leaseDeadline = sentAt + lease` without looking at whether the old one had passed). Now a
// renewal answered past the deadline ends the leadership, as the lease timer would.
import type { Clock } from "@vvm/clock";
import { lateTimers, MockClock } from "@vvm/clock";
import { createElections, vvmLeadershipStorage } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import type { TTLStorage } from "@vvm/ttlstorage";
import { expect, it } from "vitest";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

const LATE = 30;

/** Every timer of the elections 30 ms late (a busy event loop). */
const late = (inner: MockClock): Clock => lateTimers(inner, () => LATE);

async function settle(): Promise<void> {
	for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
}

it("a renewal answered past the lease deadline ends the leadership; leaseTimeLeftMs never comes back above 0", async () => {
	const mc = new MockClock(1_000_000);
	const mini = createMiniTTLStorage(mc);
	let hold: Promise<void> | undefined;
	let release: () => void = () => {};
	const driver = new Proxy(mini, {
		get(t, prop, r) {
			const v = Reflect.get(t, prop, r);
			if (prop !== "compareAndSwap" || typeof v !== "function") return v;
			return async (...args: unknown[]) => {
				if (hold !== undefined) await hold;
				return v.apply(t, args);
			};
		},
	}) as TTLStorage;
	const elections = createElections(vvmLeadershipStorage(driver), {
		clock: late(mc),
		killer: new RecordingKiller(mc),
	});
	const signal = await elections.acquireLeadership(1, "a#1", 4); // lease 3.2 s, ticks every 1 s
	if (signal === undefined) throw new Error("not acquired");
	// The first renewal (sent at ~1.03 s) hangs.
	hold = new Promise((r) => {
		release = r;
	});
	const seen: number[] = [];
	while ((elections.leadership(1)?.leaseTimeLeftMs ?? -1) > 0) {
		mc.advance(5);
		await settle();
	}
	seen.push(elections.leadership(1)?.leaseTimeLeftMs ?? Number.NaN);
	expect(signal.aborted).toBe(false); // the lease timer is late
	// Its answer arrives now: applied, the record is renewed.
	hold = undefined;
	release();
	await settle();
	const after = elections.leadership(1);
	// "false from the local deadline on, for good": once past, the leadership is not valid again.
	expect(seen[0]).toBeLessThanOrEqual(0);
	expect(after === undefined ? "ended" : after.leaseTimeLeftMs).toBe("ended");
	expect(signal.aborted).toBe(true);
	await elections.cleanup();
});
