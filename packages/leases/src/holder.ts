import type { Clock, TimerHandle } from "@vvm/clock";
import { LeasesError } from "./errors.ts";
import type { LeaseEndReason, LeaseEvent } from "./events.ts";
import type { LeaseChange } from "./lease-table.ts";
import type { Lease, LeaseHolder } from "./model.ts";
import { sameGrant, sameHolder } from "./model.ts";

/**
 * A lease this host was granted, handed to `onGranted`.
 *
 * @example
 * ```ts
 * onGranted: async (grant) => {
 *   await partitions.start(grant.group, { signal: grant.signal }); // actualize the sequencer
 * }
 * ```
 */
export interface LeaseGrant {
	readonly group: number;
	/** The lease as read from the batch. */
	readonly lease: Lease;
	/**
	 * `clock.monotonic()` reading at which this host stops serving the group unless a
	 * prolongation arrives first: `expirationTime - maxClockSkewMs` converted to this host's clock
	 * when the batch was read (one millisecond earlier, for the wall clock's resolution).
	 */
	readonly deadline: number;
	/** Aborts when this host stops serving the group; `reason` is a `LEASES_LEASE_ENDED` error. */
	readonly signal: AbortSignal;
	/**
	 * Gives the group up here: this host can no longer serve it under this grant (its service
	 * closed on its own; a newer holder fenced it out). The lease ends at once (`released`, with
	 * `reason` as the end's `error`), its acknowledgement leaves the heartbeat, the placement
	 * driver stops prolonging it, and once it expired the group is granted again (a new
	 * `startTime`, which may be this host's). This grant is never taken up again. No-op once the
	 * lease ended.
	 */
	release(reason?: unknown): void;
}

/**
 * A group this host stopped serving, handed to `onEnded` (right after the grant's signal aborted).
 *
 * @example
 * ```ts
 * onEnded: (end) => partitions.stop(end.group, end.reason),
 * ```
 */
export interface LeaseEnd {
	readonly group: number;
	readonly lease: Lease;
	readonly reason: LeaseEndReason;
	/** The last local deadline (monotonic): the lease was valid here until then, or until `endedAt` if earlier. */
	readonly deadline: number;
	/** `clock.monotonic()` when it ended here. */
	readonly endedAt: number;
	/** The error of `onGranted` for `declined`; the reason given to `release` for `released`. */
	readonly error?: unknown;
}

/** `Date.now()` truncates to the millisecond: a deadline one millisecond earlier stays safe. */
const WALL_RESOLUTION_MS = 1;

interface Held {
	lease: Lease;
	deadline: number;
	readonly controller: AbortController;
	accepted: boolean;
}

/** Callbacks of {@link LocalLeases}. @internal */
export interface LocalLeasesHooks {
	readonly onGranted?: ((grant: LeaseGrant) => void | Promise<void>) | undefined;
	readonly onEnded?: ((end: LeaseEnd) => void) | undefined;
	/** The set of accepted grants changed: the heartbeat should carry it soon. */
	readonly onAcksChanged: () => void;
	readonly emit: (event: LeaseEvent) => void;
}

/**
 * The leases this host serves. A group is served while `clock.monotonic() < deadline`, where the
 * deadline is the lease's `expirationTime - maxClockSkewMs` converted to this host's monotonic
 * clock when the lease was read; one timer ends every lease at its deadline, whether or not
 * storage can be reached.
 * @internal
 */
export class LocalLeases {
	readonly #me: LeaseHolder;
	readonly #clock: Clock;
	readonly #skewMs: number;
	readonly #hooks: LocalLeasesHooks;
	readonly #held = new Map<number, Held>();
	/**
	 * The last grant of each group this host declined or released: never taken up again, though a
	 * prolongation issued before the driver saw it go may still show it as ours.
	 */
	readonly #given = new Map<number, Lease>();
	#timer: TimerHandle | undefined;
	#timerAt = Number.POSITIVE_INFINITY;

	constructor(me: LeaseHolder, clock: Clock, maxClockSkewMs: number, hooks: LocalLeasesHooks) {
		this.#me = me;
		this.#clock = clock;
		this.#skewMs = maxClockSkewMs;
		this.#hooks = hooks;
	}

	/**
	 * Takes changed leases read from the batch. Wall and monotonic time are read together here:
	 * the only conversion of another host's wall time (the placement driver's `expirationTime`)
	 * into a local deadline, valid within `maxClockSkewMs` (see the README, "Clock skew").
	 */
	apply(changes: readonly LeaseChange[]): void {
		if (changes.length === 0) return;
		// Monotonic first, then wall: the wall reading is never the earlier one of the two.
		const monoNow = this.#clock.monotonic();
		const wallNow = this.#clock.now();
		for (const { group, lease } of changes) {
			const local = this.#held.get(group);
			const mine = lease !== undefined && sameHolder(lease.holder, this.#me);
			const given = this.#given.get(group);
			if (given !== undefined) {
				if (mine && lease !== undefined && local === undefined && sameGrant(given, lease)) continue;
				this.#given.delete(group);
			}
			if (!mine) {
				if (local !== undefined)
					this.#end(group, local, monoNow >= local.deadline ? "expired" : "revoked");
				continue;
			}
			const deadline =
				monoNow + (lease.expirationTime - this.#skewMs - wallNow) - WALL_RESOLUTION_MS;
			// A prolongation extends a lease still running; past its local deadline the lease ended
			// for good (leaseValid stays false), even when its timer has not fired yet: it ends
			// now, and the prolonged grant starts again below as a new lease.
			if (local !== undefined && sameGrant(local.lease, lease) && monoNow < local.deadline) {
				local.lease = lease;
				if (deadline > local.deadline) local.deadline = deadline;
				continue;
			}
			if (local !== undefined)
				this.#end(group, local, monoNow >= local.deadline ? "expired" : "revoked");
			if (deadline > monoNow) this.#start(group, lease, deadline);
		}
		this.#rearm();
	}

	#start(group: number, lease: Lease, deadline: number): void {
		const held: Held = { lease, deadline, controller: new AbortController(), accepted: false };
		this.#held.set(group, held);
		this.#hooks.emit({ type: "lease-started", at: this.#clock.now(), lease, deadline });
		const grant: LeaseGrant = {
			group,
			lease,
			deadline,
			signal: held.controller.signal,
			release: (reason?: unknown) => {
				if (this.#held.get(group) !== held) return;
				this.#end(group, held, "released", reason);
				this.#rearm();
			},
		};
		const onGranted = this.#hooks.onGranted;
		if (onGranted === undefined) {
			this.#accept(group, held);
			return;
		}
		let result: void | Promise<void>;
		try {
			result = onGranted(grant);
		} catch (error) {
			this.#end(group, held, "declined", error);
			return;
		}
		if (result === undefined || typeof (result as Promise<void>).then !== "function") {
			this.#accept(group, held);
			return;
		}
		// Deploying: the next heartbeat says so, and the placement driver prolongs the lease
		// meanwhile, however long the deployment takes.
		this.#hooks.onAcksChanged();
		(result as Promise<void>).then(
			() => this.#accept(group, held),
			(error: unknown) => {
				if (this.#held.get(group) === held) this.#end(group, held, "declined", error);
			},
		);
	}

	#accept(group: number, held: Held): void {
		if (this.#held.get(group) !== held || held.controller.signal.aborted) return;
		held.accepted = true;
		this.#hooks.onAcksChanged();
	}

	#end(group: number, held: Held, reason: LeaseEndReason, error?: unknown): void {
		if (this.#held.get(group) !== held) return;
		this.#held.delete(group);
		if (reason === "declined" || reason === "released") this.#given.set(group, held.lease);
		const endedAt = this.#clock.monotonic();
		held.controller.abort(
			new LeasesError("LEASES_LEASE_ENDED", `lease of group ${group} ended here: ${reason}`, {
				cause: error,
			}),
		);
		this.#hooks.emit({ type: "lease-ended", at: this.#clock.now(), lease: held.lease, reason });
		const end: LeaseEnd = {
			group,
			lease: held.lease,
			reason,
			deadline: held.deadline,
			endedAt,
			...(error === undefined ? {} : { error }),
		};
		try {
			this.#hooks.onEnded?.(end);
		} catch {
			// The lease has ended either way; a throwing callback must not keep it.
		}
		this.#hooks.onAcksChanged(); // its acknowledgement (or "deploying") leaves the heartbeat
	}

	/** One timer, at the earliest deadline. */
	#rearm(): void {
		let earliest = Number.POSITIVE_INFINITY;
		for (const h of this.#held.values()) if (h.deadline < earliest) earliest = h.deadline;
		if (earliest === this.#timerAt) return;
		this.#timer?.cancel();
		this.#timer = undefined;
		this.#timerAt = earliest;
		if (earliest === Number.POSITIVE_INFINITY) return;
		this.#timer = this.#clock.setTimer(Math.max(0, earliest - this.#clock.monotonic()), () => {
			this.#timer = undefined;
			this.#timerAt = Number.POSITIVE_INFINITY;
			this.endDue();
		});
	}

	/** Ends every lease whose deadline has passed. */
	endDue(): void {
		const monoNow = this.#clock.monotonic();
		for (const [group, held] of [...this.#held]) {
			if (monoNow >= held.deadline) this.#end(group, held, "expired");
		}
		this.#rearm();
	}

	/** Ends every lease now (close, replaced). */
	endAll(reason: LeaseEndReason): void {
		for (const [group, held] of [...this.#held]) this.#end(group, held, reason);
		this.#rearm();
	}

	/** Whether this host may serve `group` now, by its own clock. */
	serving(group: number): boolean {
		const held = this.#held.get(group);
		return held !== undefined && this.#clock.monotonic() < held.deadline;
	}

	/** The local deadline of a served group. */
	deadline(group: number): number | undefined {
		return this.serving(group) ? this.#held.get(group)?.deadline : undefined;
	}

	/** The deadline of a held group, even when it has just passed and the lease has not ended yet. */
	heldDeadline(group: number): number | undefined {
		return this.#held.get(group)?.deadline;
	}

	/** Groups served now, ascending. */
	groups(): number[] {
		const monoNow = this.#clock.monotonic();
		return [...this.#held]
			.filter(([, h]) => monoNow < h.deadline)
			.map(([g]) => g)
			.sort((a, b) => a - b);
	}

	/**
	 * Grants whose `onGranted` is still running and still valid here: group → term, for the
	 * heartbeat (the placement driver prolongs them while they deploy).
	 */
	deploying(): Map<number, number> {
		const out = new Map<number, number>();
		const monoNow = this.#clock.monotonic();
		for (const [g, h] of this.#held)
			if (!h.accepted && monoNow < h.deadline) out.set(g, h.lease.term);
		return out;
	}

	/** Accepted grants still valid here: group → term, for the heartbeat. */
	acks(): Map<number, number> {
		const out = new Map<number, number>();
		const monoNow = this.#clock.monotonic();
		for (const [g, h] of this.#held)
			if (h.accepted && monoNow < h.deadline) out.set(g, h.lease.term);
		return out;
	}
}
