/**
 * Who holds a lease: a host's address and the incarnation of the process that joined with it.
 * A restarted process has a new incarnation, so it never inherits the leases of the old one.
 *
 * @example
 * ```ts
 * const holder: LeaseHolder = { address: "10.0.0.1:8080", incarnation: "lx3k9a-4f2c" };
 * ```
 */
export interface LeaseHolder {
	readonly address: string;
	readonly incarnation: string;
}

/**
 * One partition group's lease, as stored in the lease batch (seed 002, Ignite's `Lease`).
 * Both times are the **placement driver's wall clock** (ms since the epoch): the one place where a
 * wall time written on one host is read on another (see the README, "Clock skew").
 *
 * @example
 * ```ts
 * const lease: Lease = {
 *   group: 7, holder, startTime: 1_700_000_000_000, expirationTime: 1_700_000_010_000,
 *   accepted: true, prolongable: true, term: 3,
 * };
 * ```
 */
export interface Lease {
	readonly group: number;
	readonly holder: LeaseHolder;
	/**
	 * When the lease was granted; kept by prolongations. It grows with every grant of the same
	 * group (a new grant waits for the old lease's expiry, which lies after its start), so it can
	 * serve as a fencing token for the group.
	 */
	readonly startTime: number;
	/** The lease is valid while the placement driver's clock reads less than this. */
	readonly expirationTime: number;
	/**
	 * The holder has taken the lease up (its `onGranted` finished). A lease is prolonged while its
	 * holder's heartbeat acknowledges it (accepted) or says it is still deploying it.
	 */
	readonly accepted: boolean;
	/** `false` once the placement driver decided to move the group (rebalancing): it lets the lease expire. */
	readonly prolongable: boolean;
	/**
	 * Grant counter of the group, modulo 256: how a holder's acknowledgement names the grant it
	 * accepted, so a stale acknowledgement of an earlier grant is never taken for this one.
	 */
	readonly term: number;
}

/** Identity string of a holder (address and incarnation). @internal */
export function holderKey(h: LeaseHolder): string {
	return `${h.address}\n${h.incarnation}`;
}

/** Same address and incarnation. @internal */
export function sameHolder(a: LeaseHolder, b: LeaseHolder): boolean {
	return a.address === b.address && a.incarnation === b.incarnation;
}

/** The same grant (holder, start and term), whatever its expiry and flags. @internal */
export function sameGrant(a: Lease, b: Lease): boolean {
	return a.startTime === b.startTime && a.term === b.term && sameHolder(a.holder, b.holder);
}

/** Leases of a range of groups; `undefined` = never granted. @internal */
export type LeaseSlots = Array<Lease | undefined>;
