import type { Lease, LeaseHolder, LeaseSlots } from "./model.ts";

/** A host as placement needs it. @internal */
export interface PlacementMember {
	readonly holder: LeaseHolder;
	/** Seen alive recently enough to get new leases and prolongations. */
	readonly fresh: boolean;
	/** The latest wall time (placement driver's clock) at which it is known to have been alive. */
	readonly aliveWall: number;
	/** Its acknowledged grants: group → term. */
	readonly acks: ReadonlyMap<number, number>;
	/** Grants it is deploying (`onGranted` running): group → term; prolonged like acknowledged ones. */
	readonly deploying?: ReadonlyMap<number, number>;
	/**
	 * `false`: it said it cannot serve (it cannot read the batch): it gets no grant and no
	 * prolongation, so its groups move once their leases expire. Absent: `true`.
	 */
	readonly accepting?: boolean;
}

/** Input of {@link computePlacement}: one tick of the loop, as a pure function. @internal */
export interface PlacementInput {
	/** The stored leases (index = group). */
	readonly leases: LeaseSlots;
	/** Groups to keep leased: `0 .. groups - 1`. */
	readonly groups: number;
	/** Members by address. */
	readonly members: ReadonlyMap<string, PlacementMember>;
	/** The placement driver's wall clock. */
	readonly now: number;
	readonly leaseIntervalMs: number;
	/** Prolong a lease once less than this is left of it. */
	readonly prolongBelowMs: number;
	/** Groups whose shard is missing: they count as leased to nobody known until `unknownUntil`. */
	readonly missing?: ReadonlyArray<readonly [number, number]>;
	readonly unknownUntil?: number;
	/** `false`: prolong and accept, but grant and rebalance nothing (a new actor still settling). */
	readonly grants?: boolean;
}

/** What one tick decided. @internal */
export interface PlacementResult {
	readonly leases: LeaseSlots;
	/** Groups covered: `groups`, or more while leases of removed groups have not expired. */
	readonly coverage: number;
	readonly granted: readonly Lease[];
	readonly prolonged: number;
	readonly accepted: number;
	/** Groups whose lease had expired by `now` (granted again in this tick or not). */
	readonly expired: readonly number[];
	/** Leases made not prolongable to rebalance. */
	readonly shed: number;
	/** Leases made prolongable again because their holder fell below its share. */
	readonly kept: number;
}

/** Holder of leases whose shard went missing: matches no host. @internal */
export const UNKNOWN_HOLDER: LeaseHolder = Object.freeze({ address: "", incarnation: "" });

interface Tally {
	readonly member: PlacementMember;
	/** Groups it keeps: unexpired, prolongable, below `groups`. */
	readonly keeps: number[];
	/** Its unexpired leases marked not prolongable (below `groups`). */
	readonly leaving: number[];
}

/**
 * The loop of seed 002 for one tick: walks every group, prolongs the leases of live holders that
 * acknowledge them (or are deploying them) and accept leases,
 * grants the free and the expired ones to the live host with the fewest leases, and rebalances by
 * letting leases of hosts above their share expire. It never grants a group whose lease has not
 * expired by `now`, whoever holds it.
 *
 * Leases that do not change keep their object identity, so a writer can tell changed shards
 * apart by reference.
 * @internal
 */
export function computePlacement(input: PlacementInput): PlacementResult {
	const { now, groups, members } = input;
	const interval = input.leaseIntervalMs;
	const current = withPlaceholders(input);
	let coverage = groups;
	for (let g = current.length - 1; g >= groups; g--) {
		const l = current[g];
		if (l !== undefined && now < l.expirationTime) {
			coverage = g + 1;
			break;
		}
	}
	const next: LeaseSlots = new Array(coverage);
	const tallies = new Map<string, Tally>();
	for (const m of members.values())
		if (m.fresh && m.accepting !== false)
			tallies.set(m.holder.address, { member: m, keeps: [], leaving: [] });
	const expired: number[] = [];
	let prolonged = 0;
	let accepted = 0;
	for (let g = 0; g < coverage; g++) {
		let lease = current[g];
		next[g] = lease;
		if (lease === undefined) continue;
		if (now >= lease.expirationTime) {
			expired.push(g);
			continue;
		}
		const m = members.get(lease.holder.address);
		if (m === undefined || m.holder.incarnation !== lease.holder.incarnation) continue;
		if (!lease.accepted && m.acks.get(g) === lease.term) {
			lease = { ...lease, accepted: true };
			accepted++;
		}
		// Prolonged only while its holder still says it holds it: acknowledged in its latest
		// heartbeat (or being deployed there), and able to serve. A holder that stopped serving
		// (its deadline passed unseen, it cannot read the batch) withdrew its acknowledgement.
		const held = lease.accepted
			? m.acks.get(g) === lease.term || m.deploying?.get(g) === lease.term
			: m.deploying?.get(g) === lease.term;
		if (
			m.fresh &&
			m.accepting !== false &&
			held &&
			lease.prolongable &&
			g < groups &&
			lease.expirationTime - now < input.prolongBelowMs
		) {
			const until = Math.floor(Math.min(now + interval, m.aliveWall + interval));
			if (until > lease.expirationTime) {
				lease = { ...lease, expirationTime: until };
				prolonged++;
			}
		}
		next[g] = lease;
		const tally = tallies.get(m.holder.address);
		if (tally !== undefined && g < groups)
			(lease.prolongable ? tally.keeps : tally.leaving).push(g);
	}
	const settling = input.grants === false;
	const { shed, kept } = settling ? { shed: 0, kept: 0 } : rebalance(next, tallies, groups);
	const granted = settling ? [] : grant(next, tallies, input, expired);
	return {
		leases: next,
		coverage,
		granted,
		prolonged,
		accepted,
		expired,
		shed,
		kept,
	};
}

function withPlaceholders(input: PlacementInput): LeaseSlots {
	if (input.missing === undefined || input.missing.length === 0) return input.leases;
	const out = [...input.leases];
	const until = Math.floor(input.unknownUntil ?? input.now + input.leaseIntervalMs);
	for (const [from, to] of input.missing) {
		for (let g = from; g < to; g++) {
			out[g] = {
				group: g,
				holder: UNKNOWN_HOLDER,
				startTime: Math.floor(input.now),
				expirationTime: until,
				accepted: false,
				prolongable: false,
				term: 0,
			};
		}
	}
	return out;
}

/**
 * Shares: `groups / n` for each live host, the remainder going to the hosts that hold the most
 * (fewest moves). A host above its share marks its surplus not prolongable (unaccepted leases
 * first, then the highest groups); a host below its share takes back leases it was letting go.
 */
function rebalance(
	next: LeaseSlots,
	tallies: Map<string, Tally>,
	groups: number,
): { shed: number; kept: number } {
	const n = tallies.size;
	if (n === 0) return { shed: 0, kept: 0 };
	const q = Math.floor(groups / n);
	const r = groups - q * n;
	const ordered = [...tallies.entries()].sort(
		([a, x], [b, y]) => y.keeps.length - x.keeps.length || (a < b ? -1 : a > b ? 1 : 0),
	);
	let shed = 0;
	let kept = 0;
	ordered.forEach(([, t], i) => {
		const share = q + (i < r ? 1 : 0);
		if (t.keeps.length > share) {
			const order = [...t.keeps].sort((a, b) => {
				const ua = (next[a] as Lease).accepted ? 1 : 0;
				const ub = (next[b] as Lease).accepted ? 1 : 0;
				return ua - ub || b - a;
			});
			for (const g of order.slice(0, t.keeps.length - share)) {
				next[g] = { ...(next[g] as Lease), prolongable: false };
				shed++;
			}
			const gone = new Set(order.slice(0, t.keeps.length - share));
			const left = t.keeps.filter((g) => !gone.has(g));
			t.keeps.length = 0;
			t.keeps.push(...left);
		} else if (t.keeps.length < share && t.leaving.length > 0) {
			for (const g of t.leaving.slice(0, share - t.keeps.length)) {
				next[g] = { ...(next[g] as Lease), prolongable: true };
				t.keeps.push(g);
				kept++;
			}
		}
	});
	return { shed, kept };
}

function grant(
	next: LeaseSlots,
	tallies: Map<string, Tally>,
	input: PlacementInput,
	expired: number[],
): Lease[] {
	const granted: Lease[] = [];
	const live = [...tallies.values()].sort((a, b) =>
		a.member.holder.address < b.member.holder.address ? -1 : 1,
	);
	if (live.length === 0) return granted;
	const counts = live.map((t) => t.keeps.length);
	const now = Math.floor(input.now);
	const free = (g: number): boolean => {
		const l = next[g];
		return l === undefined || input.now >= l.expirationTime;
	};
	const candidates = [...expired.filter((g) => g < input.groups)];
	for (let g = 0; g < input.groups; g++) if (next[g] === undefined) candidates.push(g);
	candidates.sort((a, b) => a - b);
	for (const g of candidates) {
		if (!free(g)) continue;
		let best = -1;
		for (let i = 0; i < live.length; i++) {
			const t = live[i] as Tally;
			const until = Math.min(
				now + input.leaseIntervalMs,
				t.member.aliveWall + input.leaseIntervalMs,
			);
			if (until <= now) continue;
			if (best === -1 || (counts[i] as number) < (counts[best] as number)) best = i;
		}
		if (best === -1) break;
		const t = live[best] as Tally;
		const previous = next[g];
		const lease: Lease = {
			group: g,
			holder: t.member.holder,
			startTime: now,
			expirationTime: Math.floor(
				Math.min(now + input.leaseIntervalMs, t.member.aliveWall + input.leaseIntervalMs),
			),
			accepted: false,
			prolongable: true,
			term: previous === undefined ? 0 : (previous.term + 1) & 0xff,
		};
		next[g] = lease;
		counts[best] = (counts[best] as number) + 1;
		granted.push(lease);
	}
	return granted;
}
