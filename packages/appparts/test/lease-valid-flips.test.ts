// Found by review of 98b2628 (placement safety, finding A; now a prolongation read past the local
// deadline ends the lease and starts the grant again as a new one, which deploys the partition): a grant's `leaseValid()` is documented "false from the
// grant's local deadline on, for good" (`PartitionGrant`, and `@vvm/cp`'s `PartitionLease.valid`:
// "and forever after"). The leases placement breaks it: a same-grant prolongation read between the
// local deadline and the (always somewhat late) timer that ends the lease moves the deadline
// forward again (`LocalLeases.apply`, the `sameGrant` branch). A command whose PLog write returns
// in that window sees `valid()` false and closes the cp partition (`#commit` -> `close()`); the
// placement never learns it (no `onEnded`), keeps the lease, keeps acknowledging it in the
// heartbeat, the driver keeps prolonging it, and `locate(p)` answers `served` for ever while the
// host has no partition deployed: every request 503 "being deployed", for good.
//
// Timer lateness is what real Node timers have (a busy event loop, GC); `MockClock` fires every
// timer exactly at its deadline and synchronously, so no existing test or the simulator can see
// the window. `lateTimers` adds 30 ms to every timer of host A.
import { lateTimers, MockClock } from "@vvm/clock";
import { createCommandProcessor } from "@vvm/cp";
import { createLeaseNode } from "@vvm/leases";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { expect, it } from "vitest";
import { createLeasesPlacement, deployCpPartitions } from "../src/index.ts";

const T = 1_700_000_000_000;
const I = 1_000;
const SKEW = 100;
const LATE = 30;

/** A gate: `hold()` makes calls wait, `release()` lets them through. */
class Gate {
	#p: Promise<void> | undefined;
	#r: (() => void) | undefined;
	waiting = 0;
	hold(): void {
		this.#p = new Promise((r) => {
			this.#r = r;
		});
	}
	release(): void {
		this.#r?.();
		this.#p = undefined;
	}
	async pass(): Promise<void> {
		if (this.#p === undefined) return;
		this.waiting++;
		await this.#p;
		this.waiting--;
	}
}

const LEASES_PKEY = new TextEncoder().encode("vvm-test/leases");
const sameBytes = (a: Uint8Array, b: Uint8Array): boolean =>
	a.length === b.length && a.every((x, i) => x === b[i]);

/** Host A's link: batch reads wait at `reads`, fenced writes (the cp's) at `fenced`. */
function gated(inner: TTLStorage, reads: Gate, fenced: Gate): TTLStorage {
	return new Proxy(inner, {
		get(target, prop, receiver) {
			const v = Reflect.get(target, prop, receiver);
			if (typeof v !== "function") return v;
			if (prop === "read") {
				return (pKey: Uint8Array, ...rest: unknown[]) => {
					if (!sameBytes(pKey, LEASES_PKEY)) return v.call(target, pKey, ...rest);
					return (async function* () {
						await reads.pass();
						yield* v.call(target, pKey, ...rest);
					})();
				};
			}
			if (prop === "raiseFence") return v.bind(target);
			return async (...args: unknown[]) => {
				const hasFence = (a: unknown): boolean =>
					a !== null && typeof a === "object" && "fence" in (a as object);
				if (args.some((a) => hasFence(a) || (Array.isArray(a) && a.some(hasFence))))
					await fenced.pass();
				return v.apply(target, args);
			};
		},
	});
}

async function settle(): Promise<void> {
	for (let k = 0; k < 10; k++) await new Promise((r) => setImmediate(r));
}

it("a same-grant prolongation read after the local deadline revives leaseValid(); the cp partition that closed meanwhile is never deployed again while locate() says served", async () => {
	const mc = new MockClock(T);
	const mem = createMemTTLStorage({ clock: mc });
	const reads = new Gate();
	const fenced = new Gate();
	const step = async (ms: number): Promise<void> => {
		mc.advance(ms);
		await settle();
	};

	// B: the placement driver (started first, so it is the active one), on a prompt link.
	const b = createLeaseNode({
		storage: mem,
		address: "b:1",
		namespace: "vvm-test",
		leaseIntervalMs: I,
		maxClockSkewMs: SKEW,
		placementDriver: { groups: 2 },
		clock: mc,
	});
	await b.start();
	for (let k = 0; k < 10; k++) await step(I / 10);

	// A: a leases host with a real command processor, timers 30 ms late.
	const cp = createCommandProcessor({
		storage: gated(mem, reads, fenced),
		appId: 1,
		partitions: 2,
	});
	const parts = deployCpPartitions(cp);
	const ended: Array<{ p: number; reason: string }> = [];
	const pa = createLeasesPlacement({
		storage: gated(mem, reads, fenced),
		address: "a:1",
		partitions: 2,
		leaseIntervalMs: I,
		maxClockSkewMs: SKEW,
		namespace: "vvm-test",
		handlers: {
			onGranted: (p, g) => parts.handlers.onGranted(p, g),
			onEnded: (p, reason) => {
				ended.push({ p, reason });
				parts.handlers.onEnded(p, reason);
			},
		},
		clock: lateTimers(mc, () => LATE),
	});
	await pa.start(AbortSignal.timeout(60_000));
	for (let t = 0; t < 40 * I && pa.served().length === 0; t += I / 10) await step(I / 10);
	for (let k = 0; k < 30; k++) await step(I / 10); // settled, accepted, prolonged by B
	const p = pa.served()[0];
	if (p === undefined) throw new Error("A serves nothing");
	const part = parts.partition(p);
	if (part === undefined) throw new Error("not deployed");
	expect(
		(await part.createRecord({ wsid: p, table: "app1pkg.Customer", fields: { name: "x" } }))
			.plogOffset,
	).toBeGreaterThan(0);

	// A stops reading the batch (a slow poll); B keeps prolonging A's lease (A still acks it).
	reads.hold();
	await step(I / 10);
	// A command is admitted while the lease is valid; its PLog write is slow.
	fenced.hold();
	const cmd = part.createRecord({ wsid: p, table: "app1pkg.Customer", fields: { name: "y" } }).then(
		() => "ok",
		(e: unknown) => (e as { code?: string }).code ?? String(e),
	);
	await settle();
	// Walk to the local deadline: serving turns false; the (late) timer has not ended the lease yet.
	let guard = 0;
	while (pa.locate(p).kind === "served") {
		await step(5);
		if (++guard > 1000) throw new Error("the lease never reached its deadline");
	}
	expect(ended).toEqual([]); // the timer is 30 ms late: the lease is past its deadline, not ended
	// In that window the PLog write returns: valid() is false, the cp partition closes itself.
	fenced.release();
	await settle();
	expect(await cmd).toBe("CP_CLOSED");
	// And the slow poll returns with B's prolongation of the same grant.
	expect(reads.waiting).toBe(1);
	expect(pa.locate(p).kind).not.toBe("served");
	reads.release();
	await settle();
	await step(I / 10);

	// Property (README "What locate(p) promises": served only while deployed) and liveness: a
	// partition A says it serves must be deployed, or be handed back, within a few intervals.
	let darkSince: number | undefined;
	for (let k = 0; k < 600; k++) {
		await step(I / 10);
		const served = pa.locate(p).kind === "served";
		const deployed = parts.partition(p) !== undefined;
		if (served && !deployed) darkSince ??= mc.monotonic();
		else darkSince = undefined;
	}
	const darkMs = darkSince === undefined ? 0 : mc.monotonic() - darkSince;
	expect(
		darkMs,
		`partition ${p}: locate=${pa.locate(p).kind}, deployed=${parts.partition(p) !== undefined}, onEnded calls=${JSON.stringify(ended)}`,
	).toBeLessThan(3 * I);

	await pa.close();
	await b.close();
	await parts.close();
}, 60_000);
