import type { Clock } from "@vvm/clock";
import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { FaultyTTLStorage } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import type { BatchState } from "../batch-store.ts";
import { readBatch } from "../batch-store.ts";
import type { LeaseEvent } from "../events.ts";
import type { LeaseGrant } from "../holder.ts";
import { leaseKeys } from "../keys.ts";
import type { LeaseNode } from "../node.ts";
import {
	createLeaseNode,
	internals,
	kBusy,
	kCandidate,
	kCrash,
	kHeldDeadline,
	kIdle,
} from "../node.ts";
import { checkGrants } from "./grant-checker.ts";
import type { TrackedTTLStorage } from "./inflight.ts";
import { trackInflight } from "./inflight.ts";
import { ServingLog } from "./serving-log.ts";
import { SkewedClock } from "./skewed-clock.ts";

/**
 * Options of {@link LeaseCluster}.
 *
 * @example
 * ```ts
 * const o: LeaseClusterOptions = { storage, clock, namespace: "t1", groups: 8, leaseIntervalMs: 10_000, maxClockSkewMs: 500 };
 * ```
 */
export interface LeaseClusterOptions {
	/** The storage every host shares (the cluster never closes it). */
	readonly storage: TTLStorage;
	/** The shared clock: a `MockClock` (time moves on `step`) or a real one (`step` sleeps). */
	readonly clock: Clock;
	readonly namespace: string;
	readonly groups: number;
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	readonly tickIntervalMs?: number;
	readonly heartbeatTtlSeconds?: number;
	readonly leadershipSeconds?: number;
	readonly recordLimit?: number;
}

/**
 * One simulated host.
 *
 * @example
 * ```ts
 * const host: TestHost = await cluster.add("a", { skewMs: -200 });
 * host.clock.stepWall(100);
 * ```
 */
export interface TestHost {
	readonly label: string;
	readonly node: LeaseNode;
	/** Its wall clock (offset from the shared one). */
	readonly clock: SkewedClock;
	/** Its link to storage: inject faults here to partition it. */
	readonly link: FaultyTTLStorage;
	readonly tracked: TrackedTTLStorage;
	readonly events: LeaseEvent[];
	/** The last grant of each group handed to it (`onGranted`), e.g. to `release()` one. */
	readonly grants: Map<number, LeaseGrant>;
	crashed: boolean;
	partitioned: boolean;
}

/**
 * Options of {@link LeaseCluster.add}.
 *
 * @example
 * ```ts
 * await cluster.add("holder", { placementDriver: false, skewMs: 250 });
 * ```
 */
export interface AddHostOptions {
	/** Offset of its wall clock from the shared one, ms. */
	readonly skewMs?: number;
	/** Run a placement-driver candidate (default true). */
	readonly placementDriver?: boolean;
	/** Its `maxClockSkewMs` option (default the cluster's). */
	readonly maxClockSkewMs?: number;
	/** Its address (default `<label>:8080`). */
	readonly address?: string;
	/** Do not start it. */
	readonly start?: boolean;
}

const immediate = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Several lease nodes over one storage and one clock, each with its own wall-clock skew and its
 * own storage link (for faults and partitions), a serving log (who served what when) and a check
 * of every batch write. The shared suite's harness.
 *
 * @example
 * ```ts
 * const cluster = new LeaseCluster({ storage, clock, namespace, groups: 64, leaseIntervalMs: 10_000, maxClockSkewMs: 500 });
 * await cluster.add("a"); await cluster.add("b"); await cluster.add("c");
 * await cluster.step(30_000);
 * expect(cluster.log.overlaps()).toEqual([]);
 * ```
 */
export class LeaseCluster {
	readonly hosts: TestHost[] = [];
	readonly log: ServingLog;
	readonly #o: LeaseClusterOptions;
	readonly #checked: ReturnType<typeof checkGrants>;

	constructor(options: LeaseClusterOptions) {
		this.#o = options;
		this.log = new ServingLog(options.clock);
		this.#checked = checkGrants(options.storage, leaseKeys(options.namespace).batch);
	}

	get options(): LeaseClusterOptions {
		return this.#o;
	}

	/** Problems found in batch writes (must stay empty). */
	get violations(): readonly string[] {
		return this.#checked.violations;
	}

	/** The shared storage with the write check (for actors a test drives by hand). */
	get storage(): TTLStorage {
		return this.#checked;
	}

	get #mock(): MockClock | undefined {
		return this.#o.clock instanceof MockClock ? this.#o.clock : undefined;
	}

	async add(label: string, options: AddHostOptions = {}): Promise<TestHost> {
		const o = this.#o;
		const clock = new SkewedClock(o.clock, options.skewMs ?? 0);
		const link = withFaults(this.#checked, { clock: o.clock });
		const tracked = trackInflight(link);
		const events: LeaseEvent[] = [];
		const grants = new Map<number, LeaseGrant>();
		let node: LeaseNode | undefined;
		const hooks = this.log.hooks(label, (g) =>
			node === undefined ? undefined : internals(node)[kHeldDeadline](g),
		);
		node = createLeaseNode({
			storage: tracked,
			address: options.address ?? `${label}:8080`,
			namespace: o.namespace,
			clock,
			leaseIntervalMs: o.leaseIntervalMs,
			maxClockSkewMs: options.maxClockSkewMs ?? o.maxClockSkewMs,
			...(o.tickIntervalMs === undefined
				? {}
				: {
						tickIntervalMs: o.tickIntervalMs,
						pollIntervalMs: o.tickIntervalMs,
						heartbeatIntervalMs: o.tickIntervalMs,
					}),
			...(o.heartbeatTtlSeconds === undefined
				? {}
				: { heartbeatTtlSeconds: o.heartbeatTtlSeconds }),
			placementDriver:
				options.placementDriver === false
					? false
					: {
							groups: o.groups,
							...(o.leadershipSeconds === undefined
								? {}
								: { leadershipSeconds: o.leadershipSeconds }),
							...(o.recordLimit === undefined ? {} : { recordLimit: o.recordLimit }),
						},
			onGranted: (grant) => {
				grants.set(grant.group, grant);
				hooks.onGranted(grant);
			},
			onEnded: hooks.onEnded,
			onEvent: (e) => events.push(e),
		});
		const host: TestHost = {
			label,
			node,
			clock,
			link,
			tracked,
			events,
			grants,
			crashed: false,
			partitioned: false,
		};
		this.hosts.push(host);
		if (options.start !== false) {
			await node.start();
			await this.settle();
		}
		return host;
	}

	host(label: string): TestHost {
		const h = this.hosts.find((x) => x.label === label);
		if (h === undefined) throw new Error(`no host ${label}`);
		return h;
	}

	/** Waits until no host has background work or storage calls in flight (mock time only). */
	async settle(): Promise<void> {
		for (let round = 0; round < 200; round++) {
			await immediate();
			const busy = this.hosts.filter((h) => h.tracked.pending > 0 || internals(h.node)[kBusy]);
			if (busy.length === 0) {
				await immediate();
				if (!this.hosts.some((h) => h.tracked.pending > 0 || internals(h.node)[kBusy])) return;
				continue;
			}
			await Promise.all(
				busy.map((h) => Promise.all([internals(h.node)[kIdle](), h.tracked.idle()])),
			);
		}
	}

	/**
	 * Moves time by `ms`: with a mock clock in steps of at most `grainMs`, letting every host
	 * finish its work after each; with a real clock, sleeps.
	 */
	async step(ms: number, grainMs = 100): Promise<void> {
		const mock = this.#mock;
		if (mock === undefined) {
			await new Promise((resolve) => setTimeout(resolve, ms));
			return;
		}
		let left = ms;
		while (left > 0) {
			const d = Math.min(left, grainMs);
			mock.advance(d);
			left -= d;
			await this.settle();
		}
	}

	/** Steps until `predicate` holds; fails after `maxMs` of (mock or real) time. */
	async until(
		what: string,
		predicate: () => boolean,
		maxMs: number,
		grainMs = 100,
	): Promise<number> {
		const start = this.#o.clock.monotonic();
		for (;;) {
			if (predicate()) return this.#o.clock.monotonic() - start;
			if (this.#o.clock.monotonic() - start > maxMs)
				throw new Error(`${what}: not reached within ${maxMs} ms`);
			await this.step(grainMs, grainMs);
		}
	}

	/** Cuts (or restores) a host's link to storage: every call fails with TTLSTORAGE_UNAVAILABLE. */
	partition(host: TestHost, on: boolean): void {
		host.partitioned = on;
		if (on) host.link.inject({ on: "*", match: () => host.partitioned, action: faults.fail() });
		else host.link.clear();
	}

	/** The host's process dies: no more storage calls, no more work; it serves nothing from now on. */
	async crash(host: TestHost): Promise<void> {
		this.partition(host, true);
		host.crashed = true;
		this.log.crash(host.label);
		await internals(host.node)[kCrash]();
	}

	/** Labels of the live hosts serving each group now. */
	served(): Map<number, string[]> {
		const out = new Map<number, string[]>();
		for (const h of this.hosts) {
			if (h.crashed) continue;
			for (const g of h.node.servedGroups()) {
				const list = out.get(g) ?? [];
				list.push(h.label);
				out.set(g, list);
			}
		}
		return out;
	}

	/** Groups served per live host. */
	counts(): Map<string, number> {
		const out = new Map<string, number>();
		for (const h of this.hosts) if (!h.crashed) out.set(h.label, h.node.servedGroups().length);
		return out;
	}

	/** Live hosts whose placement driver is active. */
	activeDrivers(): TestHost[] {
		return this.hosts.filter((h) => !h.crashed && internals(h.node)[kCandidate]?.active === true);
	}

	/** Every group `0..groups-1` is served by exactly one live host. */
	allServedOnce(): boolean {
		const served = this.served();
		for (let g = 0; g < this.#o.groups; g++) if (served.get(g)?.length !== 1) return false;
		return true;
	}

	/** Reads the stored batch directly. */
	readBatch(): Promise<BatchState> {
		return readBatch(this.#o.storage, leaseKeys(this.#o.namespace));
	}

	/** Closes every live host. */
	async close(): Promise<void> {
		const closing = this.hosts.filter((h) => !h.crashed).map((h) => h.node.close());
		if (this.#mock !== undefined) {
			// Closing waits for loops that may wait on the clock; keep it moving.
			let done = false;
			const all = Promise.allSettled(closing).then(() => {
				done = true;
			});
			while (!done) {
				await this.settle();
				if (!done) this.#mock.advance(10);
			}
			await all;
		} else await Promise.allSettled(closing);
	}
}
