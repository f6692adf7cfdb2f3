import type { Clock } from "@vvm/clock";
import type { LeaseEnd, LeaseGrant } from "../holder.ts";

/**
 * One stretch of time in which a host considered itself the server of a group.
 *
 * @example
 * ```ts
 * const mine: ServingInterval[] = log.intervals.filter((i) => i.host === "a");
 * ```
 */
export interface ServingInterval {
	readonly host: string;
	readonly group: number;
	readonly startTime: number;
	readonly term: number;
	/** Shared monotonic (true) time the host started serving. */
	readonly from: number;
	/** When it stopped: its last local deadline, or when it ended earlier (`undefined` while open). */
	to: number | undefined;
	/** The host's current deadline of an open interval (possibly just past). */
	deadline: () => number | undefined;
}

/**
 * Two hosts serving one group at the same time.
 *
 * @example
 * ```ts
 * for (const o of log.overlaps()) console.log(o.group, o.a.host, o.b.host);
 * ```
 */
export interface Overlap {
	readonly group: number;
	readonly a: ServingInterval;
	readonly b: ServingInterval;
}

/**
 * Records, per host, when it served which group (from `onGranted` to the end of the lease here),
 * on the shared monotonic clock, and finds overlaps: the safety property of leases.
 *
 * @example
 * ```ts
 * const log = new ServingLog(clock);
 * createLeaseNode({ ..., ...log.hooks("a", () => node) });
 * expect(log.overlaps()).toEqual([]);
 * ```
 */
export class ServingLog {
	readonly #clock: Clock;
	readonly intervals: ServingInterval[] = [];

	constructor(clock: Clock) {
		this.#clock = clock;
	}

	/** Callbacks for one host; `deadlineOf` reads the host's current deadline of a group. */
	hooks(
		host: string,
		deadlineOf: (group: number) => number | undefined,
	): {
		onGranted: (grant: LeaseGrant) => void;
		onEnded: (end: LeaseEnd) => void;
	} {
		const open = new Map<number, ServingInterval>();
		return {
			onGranted: (grant) => {
				const interval: ServingInterval = {
					host,
					group: grant.group,
					startTime: grant.lease.startTime,
					term: grant.lease.term,
					from: this.#clock.monotonic(),
					to: undefined,
					deadline: () => deadlineOf(grant.group),
				};
				open.set(grant.group, interval);
				this.intervals.push(interval);
			},
			onEnded: (end) => {
				const interval = open.get(end.group);
				if (interval === undefined) return;
				open.delete(end.group);
				interval.to = Math.min(end.deadline, end.endedAt);
			},
		};
	}

	/** A crashed host serves nothing from `at` on. */
	crash(host: string, at: number = this.#clock.monotonic()): void {
		for (const i of this.intervals) if (i.host === host && i.to === undefined) i.to = at;
	}

	/**
	 * End of an interval: when it ended, or, while open, the deadline the host holds now (it will
	 * serve until then unless it learns otherwise: that is what it promised).
	 */
	#end(i: ServingInterval, now: number): number {
		if (i.to !== undefined) return i.to;
		return i.deadline() ?? now;
	}

	/** Every pair of intervals of different hosts (or grants) on one group that overlap in time. */
	overlaps(): Overlap[] {
		const now = this.#clock.monotonic();
		const byGroup = new Map<number, ServingInterval[]>();
		for (const i of this.intervals) {
			const list = byGroup.get(i.group) ?? [];
			list.push(i);
			byGroup.set(i.group, list);
		}
		const out: Overlap[] = [];
		for (const [group, list] of byGroup) {
			list.sort((x, y) => x.from - y.from);
			for (let k = 0; k < list.length; k++) {
				const a = list[k] as ServingInterval;
				const aEnd = this.#end(a, now);
				for (let j = k + 1; j < list.length; j++) {
					const b = list[j] as ServingInterval;
					if (b.from >= aEnd) break;
					if (b.host !== a.host || b.startTime !== a.startTime) out.push({ group, a, b });
				}
			}
		}
		return out;
	}
}
