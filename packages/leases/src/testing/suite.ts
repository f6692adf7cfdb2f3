import type { Clock } from "@vvm/clock";
import { MockClock, systemClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { SuiteCase } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { BatchStore, EMPTY_BATCH } from "../batch-store.ts";
import { LeasesError } from "../errors.ts";
import { leaseKeys } from "../keys.ts";
import { MemberView } from "../member-view.ts";
import { newCounters } from "../metrics.ts";
import { createLeaseNode, internals, kCandidate } from "../node.ts";
import { PlacementActor } from "../placement-actor.ts";
import { repairLeaseRoot } from "../repair.ts";
import type { TestHost } from "./cluster.ts";
import { LeaseCluster } from "./cluster.ts";

export type { SuiteCase } from "@vvm/ttlstorage/testing";

/**
 * Options of {@link leasesTestSuite}.
 *
 * @example
 * ```ts
 * const options: LeasesSuiteOptions = { time: "real", skip: false, createStorage: () => storage };
 * ```
 */
export interface LeasesSuiteOptions {
	/**
	 * A fresh `TTLStorage` driver for one case (all hosts of the case share it). In `"mock"` time
	 * the driver must compare expiry with `ctx.clock`, the `MockClock` the suite moves.
	 */
	readonly createStorage: (ctx: { clock: Clock }) => TTLStorage | Promise<TTLStorage>;
	/** Called after each case; default `storage.close()`. */
	readonly disposeStorage?: (s: TTLStorage) => void | Promise<void>;
	/**
	 * `"mock"` (default): one `MockClock` drives every host and the driver, each host with its own
	 * wall-clock skew. `"real"`: the server enforces TTL in real time (Cassandra); a reduced set of
	 * cases runs with a 5 s lease interval and real waits.
	 */
	readonly time?: "mock" | "real";
	/** Skip the whole suite with this reason (`false` runs it). */
	readonly skip?: false | string;
	/** Case names to leave out, each with a reason in the caller's code. */
	readonly skipTests?: readonly string[];
	/** Per-case timeout; default 60 s (120 s in real time). */
	readonly timeoutMs?: number;
	/** Lease intervals the randomized case runs (mock time); default 200. Slow drivers pass fewer. */
	readonly randomizedIntervals?: number;
}

interface Params {
	readonly mode: "mock" | "real";
	readonly I: number;
	readonly S: number;
	readonly tick: number;
	/** Slack for liveness waits: a few ticks. */
	readonly slack: number;
}

const MOCK: Params = { mode: "mock", I: 10_000, S: 500, tick: 1_000, slack: 4_000 };
// Real time: 5 s leases with a 1 s placement-driver leadership (the TTL floor). A driver's
// failover must fit in what its last prolongation left (README, "Placement-driver failover"):
// 1 000 + 1 000 (Cassandra drops a record up to a second late, so the dead driver's leadership
// lasts up to 2 s) + 2 × 200 + 200 + 100 = 2 700 ms of 0.75 I = 3 750: 1 050 ms for storage
// latency. At I = 3 s that late second was not counted: the CI's Cassandra made the successor
// active 2 045 ms after the crash, and the survivors' leases lapsed 160 ms later, before its
// first prolongation landed.
const REAL: Params = { mode: "real", I: 5_000, S: 100, tick: 200, slack: 2_500 };

let runCounter = 0;
const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;

interface Fixture {
	readonly p: Params;
	readonly clock: Clock;
	readonly storage: TTLStorage;
	readonly namespace: string;
	cluster(overrides?: {
		groups?: number;
		maxClockSkewMs?: number;
		recordLimit?: number;
	}): LeaseCluster;
}

async function withFixture(
	options: LeasesSuiteOptions,
	body: (f: Fixture) => Promise<void>,
): Promise<void> {
	const p = options.time === "real" ? REAL : MOCK;
	// Mock time starts at the real time: DynamoDB (Local too) reaps an item once its native TTL
	// attribute lies in the server's real past, so mock time behind the real one would see a
	// case's records vanish mid-case (DynamoDB Local reaps within about a second).
	const clock: Clock = p.mode === "mock" ? new MockClock() : systemClock;
	const storage = await options.createStorage({ clock });
	const namespace = `leases-suite-${runId}-${++runCounter}`;
	const clusters: LeaseCluster[] = [];
	try {
		await body({
			p,
			clock,
			storage,
			namespace,
			cluster: (o = {}) => {
				const c = new LeaseCluster({
					storage,
					clock,
					namespace,
					groups: o.groups ?? 64,
					leaseIntervalMs: p.I,
					maxClockSkewMs: o.maxClockSkewMs ?? p.S,
					...(p.mode === "real"
						? { tickIntervalMs: p.tick, heartbeatTtlSeconds: 3, leadershipSeconds: 1 }
						: {}),
					...(o.recordLimit === undefined ? {} : { recordLimit: o.recordLimit }),
				});
				clusters.push(c);
				return c;
			},
		});
	} finally {
		for (const c of clusters) await c.close();
		await (options.disposeStorage ?? ((s) => s.close()))(storage);
	}
}

/** The safety checks every case ends with. */
function assertSafe(cluster: LeaseCluster): void {
	expect(cluster.violations).toEqual([]);
	const overlaps = cluster.log.overlaps();
	expect(
		overlaps.map(
			(o) =>
				`group ${o.group}: ${o.a.host} [${o.a.from}, ${o.a.to}) and ${o.b.host} from ${o.b.from}`,
		),
	).toEqual([]);
}

async function threeHosts(cluster: LeaseCluster): Promise<TestHost[]> {
	return [await cluster.add("a"), await cluster.add("b"), await cluster.add("c")];
}

/**
 * What happened after a crash, in ms from it: drivers becoming active, leases ended (with how long
 * each had been stored to last). Printed when a failover case fails.
 */
function failoverTimeline(cluster: LeaseCluster, crashedAt: number): string {
	const lines: string[] = [];
	for (const h of cluster.hosts)
		for (const e of h.events) {
			if (e.at < crashedAt) continue;
			const t = Math.round(e.at - crashedAt);
			if (e.type === "placement-driver") lines.push(`+${t} ${h.label}: driver active ${e.active}`);
			if (e.type === "lease-ended")
				lines.push(
					`+${t} ${h.label}: group ${e.lease.group} ended (${e.reason}), stored until +${Math.round(e.lease.expirationTime - crashedAt)}`,
				);
			if (e.type === "storage-error")
				lines.push(`+${t} ${h.label}: storage error in ${e.operation}`);
		}
	return `leases ended after the driver's host crashed:\n${lines.join("\n")}`;
}

/** How many leases each host has stopped serving so far. */
function endedCounts(hosts: readonly TestHost[]): number[] {
	return hosts.map((h) => h.events.filter((e) => e.type === "lease-ended").length);
}

function spread(counts: Map<string, number>): number {
	const v = [...counts.values()];
	return Math.max(...v) - Math.min(...v);
}

/**
 * Waits until every group is served by exactly one host, every lease is accepted and
 * prolongable (no rebalancing under way) and the hosts' counts differ by at most one.
 */
async function stable(cluster: LeaseCluster, f: Fixture, within: number): Promise<void> {
	await cluster.until(
		"every group served once, accepted, balanced",
		() => {
			if (!cluster.allServedOnce() || spread(cluster.counts()) > 1) return false;
			const t = cluster.hosts.find((h) => !h.crashed && !h.partitioned)?.node.table();
			return (
				t !== undefined &&
				t.leases.filter((l) => l.live && l.accepted && l.prolongable).length === t.groups
			);
		},
		within + f.p.I,
	);
}

/** A seeded PRNG (mulberry32), so a failing randomized run can be replayed. */
function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

type CaseBody = (f: Fixture) => Promise<void>;

const CASES: ReadonlyArray<readonly [string, CaseBody, { mockOnly?: boolean }?]> = [
	[
		"GrantsEveryGroupOnce",
		async (f) => {
			const cluster = f.cluster();
			const hosts = await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			// Every host polls once more: its table then shows the last grant (a poll and a write
			// due at the same instant may otherwise be ordered either way).
			await cluster.step(2 * f.p.tick);
			expect(cluster.activeDrivers()).toHaveLength(1);
			const table = hosts[0]?.node.table();
			expect(table?.leases).toHaveLength(64);
			for (const [g, labels] of cluster.served()) {
				expect(hosts[1]?.node.holderOf(g)?.holder.address).toBe(`${labels[0]}:8080`);
			}
			const granted = hosts.reduce((n, h) => n + h.node.metrics().granted, 0);
			if (f.p.mode === "mock") expect(granted).toBe(64);
			else expect(granted).toBeGreaterThanOrEqual(64);
			const active = cluster.activeDrivers()[0];
			for (const h of hosts) expect(h.node.metrics().activeActor).toContain(active?.node.address);
			assertSafe(cluster);
		},
	],
	[
		"ProlongationKeepsHolder",
		async (f) => {
			const cluster = f.cluster();
			const hosts = await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const before = hosts[0]?.node.table().leases ?? [];
			const intervals = cluster.log.intervals.length;
			const ended = endedCounts(hosts);
			await cluster.step((f.p.mode === "mock" ? 20 : 4) * f.p.I);
			const after = hosts[0]?.node.table().leases ?? [];
			expect(after).toHaveLength(64);
			for (const l of after) {
				const b = before[l.group];
				expect(l.holder).toEqual(b?.holder);
				expect(l.startTime).toBe(b?.startTime);
				expect(l.expirationTime).toBeGreaterThan(b?.expirationTime ?? 0);
			}
			// Nobody stopped serving anything, nobody started anything new.
			expect(cluster.log.intervals.length).toBe(intervals);
			expect(endedCounts(hosts)).toEqual(ended);
			expect(cluster.allServedOnce()).toBe(true);
			expect(hosts.reduce((n, h) => n + h.node.metrics().prolonged, 0)).toBeGreaterThan(64);
			assertSafe(cluster);
		},
	],
	[
		"HolderThatLeftLosesLeaseOnlyAfterExpiry",
		async (f) => {
			const cluster = f.cluster();
			await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const pd = cluster.activeDrivers()[0];
			const victim = cluster.hosts.find((h) => h !== pd) as TestHost;
			const groups = victim.node.servedGroups();
			expect(groups.length).toBeGreaterThan(0);
			await cluster.crash(victim);
			const crashedAt = f.clock.monotonic();
			const crashWall = f.clock.now();
			const took = await cluster.until(
				"the crashed host's groups served elsewhere",
				() => groups.every((g) => cluster.served().get(g)?.length === 1),
				f.p.I + f.p.slack,
			);
			const batch = await cluster.readBatch();
			for (const g of groups) {
				const lease = batch.leases[g];
				expect(lease?.holder.address).not.toBe(victim.node.address);
				// Granted no earlier than a lease interval after the last moment the victim was
				// known alive, which is before the crash.
				expect(lease?.startTime).toBeGreaterThan(crashWall - f.p.I);
			}
			expect(took).toBeLessThanOrEqual(f.p.I + f.p.slack);
			expect(f.clock.monotonic() - crashedAt).toBeGreaterThan(0);
			assertSafe(cluster);
		},
	],
	[
		"PartitionedHolderStopsByItsOwnClock",
		async (f) => {
			const cluster = f.cluster();
			await cluster.add("a");
			await cluster.add("b");
			// c's wall clock runs S/2 behind: within the bound, so it must still stop in time.
			const c = await cluster.add("c", { skewMs: -f.p.S / 2 });
			await stable(cluster, f, 3 * f.p.I);
			const groups = c.node.servedGroups();
			expect(groups.length).toBeGreaterThan(0);
			cluster.partition(c, true);
			// While cut off, c serves a group only while its own clock is before expiration - S.
			await cluster.until(
				"the partitioned host serves nothing",
				() => {
					for (const g of groups) {
						// Wall time first: if c serves at a later instant, its clock read at most this then.
						const expiration = c.node.table().leases[g]?.expirationTime ?? 0;
						const wall = c.clock.now();
						if (!c.node.serving(g)) continue;
						expect(wall).toBeLessThan(expiration - f.p.S);
					}
					return c.node.servedGroups().length === 0;
				},
				f.p.I + f.p.slack,
				50,
			);
			expect(c.node.signal.aborted).toBe(false);
			await cluster.until(
				"the others took every group",
				() =>
					cluster.hosts.filter((h) => h !== c).every((h) => h.node.servedGroups().length > 0) &&
					[...Array(64).keys()].every((g) => cluster.served().get(g)?.length === 1),
				2 * f.p.I,
			);
			cluster.partition(c, false);
			await cluster.until(
				"the healed host serves again",
				() => c.node.servedGroups().length > 0,
				4 * f.p.I,
			);
			assertSafe(cluster);
		},
	],
	[
		"BalancedWithinOne",
		async (f) => {
			const cluster = f.cluster();
			await threeHosts(cluster);
			const balanced = (): boolean => cluster.allServedOnce() && spread(cluster.counts()) <= 1;
			await cluster.until("64 groups balanced over 3 hosts", balanced, 4 * f.p.I);
			await cluster.step(2 * f.p.I);
			expect(spread(cluster.counts())).toBeLessThanOrEqual(1);
			expect([...cluster.counts().values()].sort()).toEqual([21, 21, 22]);
			await cluster.add("d");
			await cluster.until("balanced over 4 hosts", balanced, 6 * f.p.I);
			expect([...cluster.counts().values()]).toEqual([16, 16, 16, 16]);
			const pd = cluster.activeDrivers()[0];
			await cluster.crash(cluster.hosts.find((h) => h !== pd) as TestHost);
			await cluster.until("balanced again over 3 hosts", balanced, 6 * f.p.I);
			await cluster.step(2 * f.p.I);
			expect(spread(cluster.counts())).toBeLessThanOrEqual(1);
			assertSafe(cluster);
		},
	],
	[
		"PlacementDriverFailover",
		async (f) => {
			const cluster = f.cluster();
			await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const pd = cluster.activeDrivers()[0] as TestHost;
			const survivors = cluster.hosts.filter((h) => h !== pd);
			const held = new Map<number, number>(); // group -> startTime, of the survivors' leases
			for (const h of survivors)
				for (const g of h.node.servedGroups()) held.set(g, h.node.holderOf(g)?.startTime ?? -1);
			const lost = pd.node.servedGroups();
			const endedBefore = endedCounts(survivors);
			const crashedAt = f.clock.now();
			await cluster.crash(pd);
			await cluster.until(
				"another placement driver active",
				() => cluster.activeDrivers().length === 1,
				3 * f.p.I,
			);
			await cluster.until(
				"every group served again",
				() => cluster.allServedOnce(),
				f.p.I + f.p.slack,
			);
			await cluster.step(2 * f.p.I);
			// The new driver took over from the stored batch: the survivors' leases were prolonged,
			// never granted again, and nobody stopped serving them.
			for (const [g, start] of held) {
				const owner = survivors.find((h) => h.node.serving(g));
				expect(owner?.node.holderOf(g)?.startTime).toBe(start);
			}
			expect(endedCounts(survivors), failoverTimeline(cluster, crashedAt)).toEqual(endedBefore);
			const next = cluster.activeDrivers()[0] as TestHost;
			if (f.p.mode === "mock") expect(next.node.metrics().granted).toBe(lost.length);
			assertSafe(cluster);
		},
	],
	[
		"TwoActorsForcedActiveOneWriteWins",
		async (f) => {
			const cluster = f.cluster();
			// Holders only: the test drives two placement-driver actors by hand, both active.
			for (const l of ["a", "b", "c"]) await cluster.add(l, { placementDriver: false });
			const keys = leaseKeys(f.namespace);
			const make = (writer: string) => {
				const link = withFaults(cluster.storage, { clock: f.clock });
				const counters = newCounters();
				const actor = new PlacementActor({
					store: new BatchStore(link, keys),
					writer,
					clock: f.clock,
					groups: 64,
					leaseIntervalMs: f.p.I,
					maxClockSkewMs: f.p.S,
					prolongBelowMs: f.p.I * 0.75,
					freshWindowMs: f.p.I / 2,
					counters,
					emit: () => {},
				});
				const view = new MemberView();
				const observe = async () => {
					const started = f.clock.monotonic();
					const records = [];
					for await (const r of link.read(keys.members)) records.push(r);
					view.observe(records, started);
				};
				return { link, counters, actor, view, observe };
			};
			const A = make("A/1");
			const B = make("B/1");
			// Both actors see every holder alive (a heartbeat change between two reads).
			const known = (x: typeof A) =>
				x.view.members.size === 3 &&
				[...x.view.members.values()].every((m) => m.aliveAt !== undefined);
			for (let i = 0; !(known(A) && known(B)); i++) {
				if (i > 20) throw new Error("the actors never saw every holder alive");
				await A.observe();
				await B.observe();
				await cluster.step(f.p.tick);
			}
			// The batch exists with no lease yet (a creating tick grants nothing: the creation
			// marker comes first). Both compute grants for every group from it; their first
			// writes are held until both arrived, then race.
			const setup = new BatchStore(cluster.storage, keys);
			const created = await setup.write(EMPTY_BATCH, [], {
				writer: "setup/1",
				now: Math.floor(f.clock.now()),
				groups: 64,
			});
			expect(created.result).toBe("resharded");
			let arrived = 0;
			let release!: () => void;
			const bothThere = new Promise<void>((resolve) => {
				release = resolve;
			});
			for (const x of [A, B]) {
				x.link.inject({
					on: "compareAndSwap",
					times: 1,
					action: faults.hook(async () => {
						if (++arrived === 2) release();
						await bothThere;
					}),
				});
			}
			const [ra, rb] = await Promise.all([A.actor.tick(A.view), B.actor.tick(B.view)]);
			const results = [ra.result, rb.result].sort();
			expect(results).toEqual(["conflict", "written"]);
			const winner = ra.result === "written" ? A : B;
			const loser = winner === A ? B : A;
			expect(winner.counters.granted).toBe(64);
			expect(loser.counters.granted).toBe(0);
			expect(loser.actor.state).toBeUndefined(); // it backs off: forgets the batch, reads again
			// The loser's next tick works from the winner's batch: nothing granted twice or lost.
			const next = await loser.actor.tick(loser.view);
			expect(["written", "unchanged"]).toContain(next.result);
			expect(loser.counters.granted).toBe(0);
			const batch = await cluster.readBatch();
			expect(batch.leases.filter((l) => l !== undefined && l.term === 0)).toHaveLength(64);
			// A stale actor (its state predates the other's write) loses its compare-and-swap too.
			await cluster.step(f.p.tick);
			await A.observe();
			await B.observe();
			await winner.actor.tick(winner.view);
			await cluster.step(3 * f.p.tick);
			await A.observe();
			await B.observe();
			const w = await winner.actor.tick(winner.view);
			const l = await loser.actor.tick(loser.view);
			if (w.writes > 0) expect(["conflict", "unchanged"]).toContain(l.result);
			expect(winner.counters.granted + loser.counters.granted).toBe(64);
			await cluster.until("holders serve every group", () => cluster.allServedOnce(), f.p.I);
			assertSafe(cluster);
		},
	],
	[
		"LostRootStopsGrantingUntilRepaired",
		async (f) => {
			// Review 5, F3: a batch whose root record is gone is a fault, never "no leases".
			const cluster = f.cluster();
			const hosts = await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const startTimes = () =>
				new Map((hosts[0]?.node.table().leases ?? []).map((l) => [l.group, l.startTime]));
			const before = startTimes();
			const granted = () => hosts.reduce((n, h) => n + h.node.metrics().granted, 0);
			const grantedBefore = granted();
			const keys = leaseKeys(f.namespace);
			const loseRoot = async () => {
				const root = await f.storage.get(keys.batch, keys.root);
				expect(root).toBeDefined();
				const gone = await f.storage.compareAndDelete(keys.batch, keys.root, root as Uint8Array);
				expect(gone).toBe(true);
			};
			const repair = () => repairLeaseRoot(f.storage, { namespace: f.namespace, groups: 64 });
			const faulty = (h: TestHost) => h.node.metrics().batchFault === "LEASES_BATCH_ROOT_MISSING";
			// 1. Every host's polls report it; repaired at once, every lease goes on as stored.
			await loseRoot();
			await cluster.until("every host reports the lost root", () => hosts.every(faulty), f.p.I);
			expect(granted()).toBe(grantedBefore);
			expect((await repair()).result).toBe("rebuilt");
			await cluster.until(
				"the fault clears everywhere",
				() => hosts.every((h) => !faulty(h)),
				f.p.I,
			);
			await stable(cluster, f, f.p.I);
			expect(granted()).toBe(grantedBefore);
			expect(startTimes()).toEqual(before);
			// 2. Lost again, and a holder dies: its groups expire, but the placement driver, about to
			// grant them, finds the root gone and grants nothing until the repair.
			const pd = cluster.activeDrivers()[0] as TestHost;
			const victim = hosts.find((h) => h !== pd) as TestHost;
			await loseRoot();
			await cluster.crash(victim);
			const driverStopped = () =>
				pd.events.some(
					(e) =>
						e.type === "batch-fault" &&
						e.operation === "tick" &&
						LeasesError.is(e.error) &&
						e.error.code === "LEASES_BATCH_ROOT_MISSING",
				);
			await cluster.until("the driver stops at a grant", driverStopped, f.p.I + f.p.slack);
			await cluster.step(2 * f.p.tick);
			expect(granted()).toBe(grantedBefore);
			expect((await repair()).result).toBe("rebuilt");
			await cluster.until(
				"every group served again",
				() => cluster.allServedOnce(),
				f.p.I + f.p.slack,
			);
			expect(granted()).toBeGreaterThan(grantedBefore);
			assertSafe(cluster);
		},
	],
	[
		"CloseGivesUpEverything",
		async (f) => {
			const cluster = f.cluster();
			await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const pd = cluster.activeDrivers()[0] as TestHost;
			const groups = pd.node.servedGroups();
			const ended: string[] = [];
			pd.node.signal.addEventListener("abort", () => ended.push("signal"));
			await pd.node.close();
			expect(pd.node.servedGroups()).toEqual([]);
			expect(LeasesError.is(pd.node.signal.reason) && pd.node.signal.reason.code).toBe(
				"LEASES_CLOSED",
			);
			expect(ended).toEqual(["signal"]);
			const reasons = pd.events.flatMap((e) => (e.type === "lease-ended" ? [e.reason] : []));
			expect(reasons.filter((r) => r === "closed")).toHaveLength(groups.length);
			pd.crashed = true; // closed: no longer part of the cluster
			// Its leadership was released: another driver is active within a couple of ticks.
			await cluster.until(
				"another driver active",
				() => cluster.activeDrivers().length === 1,
				3 * f.p.tick + f.p.slack,
			);
			await cluster.until(
				"its groups served again",
				() => cluster.allServedOnce(),
				f.p.I + f.p.slack,
			);
			await expect(pd.node.waitForHolder(0)).rejects.toSatisfy(
				(e: unknown) => LeasesError.is(e) && e.code === "LEASES_CLOSED",
			);
			assertSafe(cluster);
		},
	],
	[
		"ReleasedGroupIsGrantedAgain",
		async (f) => {
			const cluster = f.cluster();
			await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const h = cluster.hosts.find((x) => x.node.servedGroups().length > 0) as TestHost;
			const group = h.node.servedGroups()[0] as number;
			const grant = h.grants.get(group);
			if (grant === undefined) throw new Error(`no grant of group ${group} at ${h.label}`);
			const startTime = grant.lease.startTime;
			// Its service closed on its own (a newer holder fenced it out): it gives the group up.
			grant.release(new Error("closed on its own"));
			expect(h.node.serving(group)).toBe(false);
			expect(grant.signal.aborted).toBe(true);
			const ends = h.events.flatMap((e) =>
				e.type === "lease-ended" && e.lease.group === group ? [e.reason] : [],
			);
			expect(ends).toEqual(["released"]);
			// The driver stops prolonging it; once it expired it is granted again, under a new
			// startTime, to some host (maybe the same), and served once.
			await cluster.until(
				`group ${group} served again under a new grant`,
				() =>
					cluster.hosts.some(
						(x) =>
							!x.crashed &&
							x.node.serving(group) &&
							(x.node.holderOf(group)?.startTime ?? 0) > startTime,
					),
				2 * f.p.I + f.p.slack,
			);
			// The released grant was never taken up again, though its prolongations may show it.
			const under = cluster.log.intervals.filter(
				(i) => i.group === group && i.host === h.label && i.startTime === startTime,
			);
			expect(under).toHaveLength(1);
			assertSafe(cluster);
		},
	],
	[
		"WaitForHolderResolvesOrAborts",
		async (f) => {
			const cluster = f.cluster();
			const a = await cluster.add("a", { placementDriver: false });
			const aborted = new AbortController();
			const pending = a.node.waitForHolder(3, { signal: aborted.signal });
			aborted.abort(new Error("gave up"));
			await expect(pending).rejects.toThrow("gave up");
			const waiting = a.node.waitForHolder(5);
			await cluster.add("b");
			await cluster.until("group 5 leased", () => a.node.holderOf(5) !== undefined, 3 * f.p.I);
			const view = await waiting;
			expect(view.group).toBe(5);
			expect(view.live).toBe(true);
			assertSafe(cluster);
		},
	],
	[
		"SameAddressNewIncarnationReplacesOld",
		async (f) => {
			const cluster = f.cluster({ groups: 8 });
			await cluster.add("a");
			const old = await cluster.add("x", { placementDriver: false });
			await stable(cluster, f, 3 * f.p.I);
			const fresh = await cluster.add("x2", { address: old.node.address, placementDriver: false });
			await cluster.until(
				"the old incarnation noticed",
				() => old.node.signal.aborted,
				2 * f.p.tick + f.p.slack,
			);
			expect(LeasesError.is(old.node.signal.reason) && old.node.signal.reason.code).toBe(
				"LEASES_REPLACED",
			);
			expect(old.node.servedGroups()).toEqual([]);
			old.crashed = true;
			await cluster.until("all served", () => cluster.allServedOnce(), 2 * f.p.I + f.p.slack);
			expect(fresh.node.incarnation).not.toBe(old.node.incarnation);
			assertSafe(cluster);
		},
	],
	[
		"ShardedBatch",
		async (f) => {
			// Records of at most 256 bytes force several shards.
			const cluster = f.cluster({ recordLimit: 256 });
			const hosts = await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			const batch = await cluster.readBatch();
			const shards = batch.shards.length;
			expect(shards).toBeGreaterThan(1);
			for (const s of batch.shards) expect(s?.bytes.length).toBeLessThanOrEqual(256);
			await cluster.step(5 * f.p.I);
			const ticks = hosts.flatMap((h) => h.events.flatMap((e) => (e.type === "tick" ? [e] : [])));
			expect(ticks.length).toBeGreaterThan(0);
			for (const t of ticks)
				if (t.result === "written") expect(t.writes).toBeLessThanOrEqual(shards);
			expect(cluster.allServedOnce()).toBe(true);
			assertSafe(cluster);
		},
		{ mockOnly: true },
	],
	[
		"StorageFaultsNeverBreakSafety",
		async (f) => {
			const cluster = f.cluster();
			const hosts = await threeHosts(cluster);
			await stable(cluster, f, 3 * f.p.I);
			// Every third write of every host fails, half of the batch writes have an unknown outcome.
			for (const h of hosts) {
				h.link.inject({ on: "*", match: (c) => c.callNumber % 3 === 0, action: faults.fail() });
				h.link.inject({
					on: "compareAndSwap",
					match: (c) => c.callNumber % 2 === 0,
					action: faults.unknownOutcome(true),
				});
			}
			await cluster.step(10 * f.p.I);
			for (const h of hosts) h.link.clear();
			await cluster.until("stable after the faults", () => cluster.allServedOnce(), 3 * f.p.I);
			const errors = hosts.flatMap((h) => h.events.filter((e) => e.type === "storage-error"));
			expect(errors.length).toBeGreaterThan(0);
			expect(errors.every((e) => e.type === "storage-error" && TTLStorageError.is(e.error))).toBe(
				true,
			);
			assertSafe(cluster);
		},
		{ mockOnly: true },
	],
	[
		"RandomizedNoOverlap",
		async (f) => {
			// Hosts with skewed and stepping clocks, partitions, crashes and restarts, storage faults;
			// from the hosts' own serving logs, no group is ever served by two at once.
			const seed = Number(process.env.VVM_LEASES_SEED ?? Date.now() % 1_000_000);
			const rnd = prng(seed);
			const cluster = f.cluster({ groups: 32 });
			const half = f.p.S / 2;
			const skew = () => (rnd() * 2 - 1) * half;
			let serial = 0;
			for (let i = 0; i < 5; i++)
				await cluster.add(`h${serial++}`, { skewMs: skew(), placementDriver: i < 3 });
			const intervals = (f as Fixture & { randomized?: number }).randomized ?? 200;
			const hasDriver = (x: TestHost): boolean => internals(x.node)[kCandidate] !== undefined;
			const end = f.clock.monotonic() + intervals * f.p.I;
			try {
				while (f.clock.monotonic() < end) {
					await cluster.step(100 + Math.floor(rnd() * 1900));
					const live = cluster.hosts.filter((h) => !h.crashed);
					const h = live[Math.floor(rnd() * live.length)] as TestHost;
					const r = rnd();
					if (r < 0.04 && !h.partitioned) cluster.partition(h, true);
					else if (r < 0.12 && h.partitioned) cluster.partition(h, false);
					else if (r < 0.15 && live.length > 3 && live.some((x) => x !== h && hasDriver(x)))
						await cluster.crash(h);
					else if (r < 0.2 && live.length < 5)
						await cluster.add(`h${serial++}`, {
							skewMs: skew(),
							placementDriver: rnd() < 0.6 || !live.some(hasDriver),
						});
					else if (r < 0.3) {
						// Step this host's wall clock, staying within the bound.
						const target = skew();
						h.clock.stepWall(target - h.clock.offsetMs);
					} else if (r < 0.36) {
						h.link.clear();
						h.partitioned = false;
						h.link.inject({
							on: "*",
							times: 1 + Math.floor(rnd() * 20),
							match: () => rnd() < 0.3,
							action: rnd() < 0.5 ? faults.fail() : faults.unknownOutcome(rnd() < 0.5),
						});
					}
				}
				for (const h of cluster.hosts) if (!h.crashed) cluster.partition(h, false);
				await cluster.until(
					"every group served once after healing",
					() => cluster.allServedOnce(),
					5 * f.p.I,
				);
				assertSafe(cluster);
			} catch (error) {
				const state = cluster.hosts.map(
					(h) =>
						`${h.label}${h.crashed ? " crashed" : ""}${h.partitioned ? " partitioned" : ""} pd=${internals(h.node)[kCandidate] === undefined ? "-" : internals(h.node)[kCandidate]?.active} serves ${h.node.servedGroups().length} errors ${h.events.filter((e) => e.type === "storage-error").length}`,
				);
				throw new Error(
					`randomized run failed with VVM_LEASES_SEED=${seed}: ${String(error)}\n${state.join("\n")}`,
					{ cause: error },
				);
			}
		},
		{ mockOnly: true },
	],
	[
		"SkewBeyondTheBoundIsCaught",
		async (f) => {
			// The control: hosts promise a skew of 0 but b's clock is 2 s behind. b can still read
			// the batch but no longer write its heartbeat: the driver stops prolonging its leases
			// and regrants them at expiry by its own clock, while b serves until its own clock gets
			// there, 2 s later. The serving log must show the overlap.
			const cluster = f.cluster({ groups: 4, maxClockSkewMs: 0 });
			await cluster.add("a");
			const b = await cluster.add("b", { skewMs: -2_000, placementDriver: false });
			await stable(cluster, f, 3 * f.p.I);
			expect(b.node.servedGroups().length).toBeGreaterThan(0);
			b.link.inject({ on: ["compareAndSwap", "insertIfNotExists", "put"], action: faults.fail() });
			await cluster.until(
				"a and b serve one group at once",
				() => [...cluster.served().values()].some((l) => l.includes("a") && l.includes("b")),
				2 * f.p.I,
				50,
			);
			expect(cluster.log.overlaps().length).toBeGreaterThan(0);
		},
		{ mockOnly: true },
	],
	[
		"BadOptionsThrowBeforeAnyIO",
		async (f) => {
			const link = withFaults(f.storage, { clock: f.clock });
			const base = { storage: link, address: "a:1", clock: f.clock };
			const bad: Array<[string, object]> = [
				["address", { ...base, address: "" }],
				["address", { ...base, address: "x".repeat(300) }],
				["namespace", { ...base, namespace: "" }],
				["leaseIntervalMs", { ...base, leaseIntervalMs: 50 }],
				["maxClockSkewMs", { ...base, leaseIntervalMs: 1000, maxClockSkewMs: 250 }],
				["groups", { ...base, placementDriver: { groups: 0 } }],
				["groups", { ...base, placementDriver: { groups: 25_001 } }],
				["storage", { ...base, storage: {} }],
				["heartbeatTtlSeconds", { ...base, heartbeatIntervalMs: 2000, heartbeatTtlSeconds: 1 }],
				["onGranted", { ...base, onGranted: 1 }],
			];
			for (const [name, options] of bad) {
				expect(() => createLeaseNode(options as never), name).toThrow(name);
			}
			expect(link.calls).toEqual([]);
		},
	],
];

/**
 * Names of every case, in order.
 *
 * @example
 * ```ts
 * leasesTestSuite("my-driver", { createStorage, skipTests: LEASES_CASES.filter((c) => c.startsWith("Randomized")) });
 * ```
 */
export const LEASES_CASES: readonly string[] = CASES.map(([name]) => name);

/**
 * The cases as plain functions, for running them outside `describe`, e.g. to show that the
 * suite catches a broken implementation.
 *
 * @example
 * ```ts
 * const cases = leasesCases({ createStorage: ({ clock }) => createMemTTLStorage({ clock }) });
 * await cases.find((c) => c.name === "BalancedWithinOne")?.run();
 * ```
 */
export function leasesCases(options: LeasesSuiteOptions): SuiteCase[] {
	const real = options.time === "real";
	return CASES.filter(([, , flags]) => !(real && flags?.mockOnly)).map(([name, body]) => ({
		name,
		run: () =>
			withFixture(options, (f) =>
				body(
					options.randomizedIntervals === undefined
						? f
						: Object.assign(f, { randomized: options.randomizedIntervals }),
				),
			),
	}));
}

/**
 * The shared lease suite: every driver runs it from its test files (mem and level in
 * `@vvm/leases`'s own tests; Cassandra and DynamoDB Local in its integration tests).
 *
 * @example
 * ```ts
 * leasesTestSuite("ttlstorage-mem", { createStorage: ({ clock }) => createMemTTLStorage({ clock }) });
 * ```
 */
export function leasesTestSuite(name: string, options: LeasesSuiteOptions): void {
	const real = options.time === "real";
	const timeout = options.timeoutMs ?? (real ? 120_000 : 60_000);
	const skip = options.skipTests ?? [];
	describe.skipIf(options.skip !== undefined && options.skip !== false)(
		`leases on ${name}${typeof options.skip === "string" ? ` (skipped: ${options.skip})` : ""}`,
		() => {
			for (const c of leasesCases(options)) {
				it.skipIf(skip.includes(c.name))(c.name, c.run, timeout);
			}
		},
	);
}
