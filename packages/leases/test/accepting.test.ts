// A holder says what it can do in its heartbeat (review 5, F1 and F4): "deploying" while
// onGranted runs, "not accepting" once it has not read the lease batch for half a lease interval;
// it accepts again, and gets its share back, once it reads again.
import { MockClock } from "@vvm/clock";
import { faults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { decodeHeartbeat } from "../src/heartbeat-codec.ts";
import { createLeaseNode } from "../src/index.ts";
import { leaseKeys } from "../src/keys.ts";
import { LeaseCluster } from "../src/testing/index.ts";

const T = 1_700_000_000_000;
const I = 10_000;
const keys = leaseKeys("ns");

describe("a holder's heartbeat", () => {
	it("stops accepting while it cannot read the batch, and accepts (and holds) again after", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		const cluster = new LeaseCluster({
			storage,
			clock,
			namespace: "ns",
			groups: 4,
			leaseIntervalMs: I,
			maxClockSkewMs: 500,
		});
		const a = await cluster.add("a", { placementDriver: false });
		await cluster.add("z");
		await cluster.until("balanced", () => a.node.servedGroups().length === 2, 4 * I);
		const heartbeat = async () =>
			decodeHeartbeat((await storage.get(keys.members, keys.member(a.node.address))) as Uint8Array);
		expect((await heartbeat()).accepting).toBe(true);
		const heal = a.link.inject({
			on: "read",
			match: (c) => new TextDecoder().decode(c.args[0] as Uint8Array) === "ns/leases",
			action: faults.fail(),
		});
		await cluster.step(I / 2 + 2 * (I / 10));
		expect((await heartbeat()).accepting).toBe(false);
		// Its groups move to z at their expiry; nobody serves a group twice meanwhile.
		await cluster.until("z serves everything", () => a.node.servedGroups().length === 0, 2 * I);
		await cluster.until(
			"z serves every group",
			() => [...cluster.served().values()].every((h) => h.join() === "z"),
			2 * I,
		);
		heal();
		await cluster.step(2 * (I / 10));
		expect((await heartbeat()).accepting).toBe(true);
		// It gets its share back by rebalancing.
		await cluster.until("balanced again", () => a.node.servedGroups().length === 2, 4 * I);
		expect(cluster.log.overlaps()).toEqual([]);
		expect([...cluster.violations]).toEqual([]);
		await cluster.close();
	});

	it("says 'deploying' while onGranted runs, and the lease is prolonged meanwhile", async () => {
		const clock = new MockClock(T);
		const storage = createMemTTLStorage({ clock });
		let finish!: () => void;
		let grants = 0;
		const a = createLeaseNode({
			storage,
			address: "a:1",
			namespace: "ns",
			clock,
			leaseIntervalMs: I,
			placementDriver: { groups: 1 },
			onGranted: () => {
				grants++;
				return new Promise<void>((resolve) => {
					finish = resolve;
				});
			},
		});
		await a.start();
		const settle = async () => {
			for (let k = 0; k < 8; k++) await new Promise((r) => setImmediate(r));
		};
		const heartbeat = async () =>
			decodeHeartbeat((await storage.get(keys.members, keys.member("a:1"))) as Uint8Array);
		for (let t = 0; t < 3 * I && grants === 0; t += 100) {
			clock.advance(100);
			await settle();
		}
		expect(grants).toBe(1);
		const first = a.table().leases[0];
		await settle();
		expect((await heartbeat()).deploying?.get(0)).toBe(first?.term);
		// Two lease intervals of deployment: the grant is prolonged, never granted again.
		for (let t = 0; t < 2 * I; t += 100) {
			clock.advance(100);
			await settle();
		}
		const during = a.table().leases[0];
		expect(during?.startTime).toBe(first?.startTime);
		expect(during?.accepted).toBe(false);
		expect(during?.expirationTime).toBeGreaterThan((first?.expirationTime ?? 0) + I);
		expect(a.serving(0)).toBe(true);
		finish();
		for (let t = 0; t < I; t += 100) {
			clock.advance(100);
			await settle();
		}
		const hb = await heartbeat();
		expect(hb.deploying?.size).toBe(0);
		expect(hb.acks.get(0)).toBe(first?.term);
		expect(a.table().leases[0]?.accepted).toBe(true);
		expect(grants).toBe(1);
		const closing = a.close();
		for (let k = 0; k < 20; k++) {
			clock.advance(10);
			await settle();
		}
		await closing;
	});
});
