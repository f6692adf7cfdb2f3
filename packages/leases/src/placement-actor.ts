import type { Clock } from "@vvm/clock";
import type { BatchState, BatchStore, StoredShard, WriteOptions } from "./batch-store.ts";
import type { LeaseEvent, TickSummary } from "./events.ts";
import type { MemberView } from "./member-view.ts";
import type { Counters } from "./metrics.ts";
import { noteBatchRead } from "./metrics.ts";
import type { Lease } from "./model.ts";
import { sameGrant } from "./model.ts";
import type { PlacementMember, PlacementResult } from "./placement.ts";
import { computePlacement, UNKNOWN_HOLDER } from "./placement.ts";

/** Options of {@link PlacementActor}. @internal */
export interface PlacementActorOptions {
	readonly store: BatchStore;
	/** This instance: `address/incarnation`. */
	readonly writer: string;
	readonly clock: Clock;
	readonly groups: number;
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	readonly prolongBelowMs: number;
	/** A member counts as alive while it was seen alive less than this ago. */
	readonly freshWindowMs: number;
	readonly counters: Counters;
	readonly emit: (event: LeaseEvent) => void;
	/** Shards this actor stored, for the holder in the same process. */
	readonly onWritten?: ((shards: readonly StoredShard[]) => void) | undefined;
	/** Largest record (tests shrink it to force shards). */
	readonly limit?: number | undefined;
	/** Test hook inside a re-sharding. */
	readonly onReshardStep?: WriteOptions["onReshardStep"];
}

function cpuMs(): number {
	const u = process.cpuUsage();
	return (u.user + u.system) / 1000;
}

/**
 * The active actor's work for one tick: read the batch if this actor does not know what is
 * stored, compute the next leases, store the changed shards (compare-and-swap each); before a
 * write that grants from a batch it did not read in this tick, check (one point read) that the
 * root is still the one it knows, and read again if not. After a lost
 * compare-and-swap or an unknown outcome it forgets the batch and reads it again next tick, so it
 * only ever writes a successor of what is stored: nothing it computed is applied twice, and what
 * it lost is computed again from what the winner wrote.
 * @internal
 */
export class PlacementActor {
	readonly #o: PlacementActorOptions;
	#state: BatchState | undefined;
	#last: BatchState | undefined;
	#activatedAt: number | undefined;
	/** The creation marker is known to be stored: only then may this actor grant. */
	#markerKnown = false;
	readonly #expiredSeen = new Map<number, string>();

	constructor(options: PlacementActorOptions) {
		this.#o = options;
	}

	/** Forgets the batch: the next tick reads it. */
	reset(): void {
		this.#state = undefined;
	}

	/**
	 * The actor became active: for up to one fresh window it grants nothing while a member it can
	 * see has not yet proven it is alive (its heartbeat has not changed since this actor first
	 * saw it), so hosts that joined together are not granted everything one by one and then
	 * rebalanced.
	 */
	activate(): void {
		this.#state = undefined;
		this.#markerKnown = false;
		this.#activatedAt = this.#o.clock.monotonic();
	}

	#settling(view: MemberView): boolean {
		const since = this.#activatedAt;
		if (since === undefined) return false;
		if (this.#o.clock.monotonic() - since >= this.#o.freshWindowMs) {
			this.#activatedAt = undefined;
			return false;
		}
		for (const m of view.members.values()) if (m.aliveAt === undefined) return true;
		this.#activatedAt = undefined;
		return false;
	}

	/** The batch as this actor believes it is stored (`undefined`: to be read). */
	get state(): BatchState | undefined {
		return this.#state;
	}

	#members(view: MemberView, now: number): Map<string, PlacementMember> {
		const mono = this.#o.clock.monotonic();
		const out = new Map<string, PlacementMember>();
		for (const [address, m] of view.members) {
			const aliveAt = m.aliveAt;
			out.set(address, {
				holder: m.holder,
				fresh: aliveAt !== undefined && mono - aliveAt < this.#o.freshWindowMs,
				// The placement driver's own clock: its monotonic reading moved to its wall time.
				aliveWall: aliveAt === undefined ? Number.NEGATIVE_INFINITY : now - (mono - aliveAt),
				acks: m.heartbeat.acks,
				deploying: m.heartbeat.deploying ?? new Map(),
				accepting: m.heartbeat.accepting ?? true,
			});
		}
		return out;
	}

	/** One tick. Storage errors of the read reject; those of the writes are in the summary. */
	async tick(view: MemberView): Promise<TickSummary> {
		const o = this.#o;
		const started = o.clock.monotonic();
		const cpu0 = cpuMs();
		let read = false;
		if (this.#state === undefined) {
			this.#state = await this.#read();
			read = true;
		}
		let state = this.#state;
		// No lease before the creation marker: a root found missing later is then always told
		// apart from a cluster never created (readBatch). The creating tick stores the root with no
		// lease; the next one stores the marker, then grants.
		if (!this.#markerKnown && state.root !== undefined) {
			await o.store.ensureMarker();
			this.#markerKnown = true;
		}
		let now = Math.floor(o.clock.now());
		let result = this.#compute(state, view, now);
		if (!read && result.granted.length > 0 && !(await o.store.rootUnchanged(state))) {
			// Before granting from a batch it did not read this tick: the root readers follow is
			// gone or was rewritten (a repair). Read again: a missing root rejects, nothing is granted.
			state = this.#state = await this.#read();
			now = Math.floor(o.clock.now());
			result = this.#compute(state, view, now);
		}
		let expired = 0;
		for (const g of result.expired) {
			const l = state.leases[g];
			if (l === undefined || l.holder.address === UNKNOWN_HOLDER.address) continue;
			const key = `${l.startTime}/${l.term}`;
			if (this.#expiredSeen.get(g) !== key) {
				this.#expiredSeen.set(g, key);
				expired++;
			}
		}
		const outcome = await o.store.write(state, result.leases, {
			writer: o.writer,
			now,
			groups: result.coverage,
			...(o.limit === undefined ? {} : { limit: o.limit }),
			...(o.onReshardStep === undefined ? {} : { onReshardStep: o.onReshardStep }),
		});
		this.#state = outcome.state;
		if (outcome.state !== undefined) this.#last = outcome.state;
		const applied = this.#count(state, outcome.written);
		const c = o.counters;
		c.ticks++;
		c.expired += expired;
		c.writes += outcome.writes;
		c.writtenBytes += outcome.bytes;
		if (outcome.result === "conflict") c.conflicts++;
		if (outcome.result === "resharded") {
			c.reshards++;
			o.emit({
				type: "resharded",
				at: o.clock.now(),
				epoch: outcome.state?.root?.record.epoch ?? 0,
				shards: outcome.written.length,
			});
		}
		for (const error of outcome.errors) {
			c.storageErrors++;
			o.emit({ type: "storage-error", at: o.clock.now(), operation: "tick", error });
		}
		if (outcome.written.length > 0) o.onWritten?.(outcome.written);
		const durationMs = o.clock.monotonic() - started;
		const summary: TickSummary = {
			durationMs,
			cpuMs: cpuMs() - cpu0,
			result: outcome.result,
			writes: outcome.writes,
			bytes: outcome.bytes,
			expired,
			...applied,
		};
		c.lastTickMs = durationMs;
		c.lastTickCpuMs = summary.cpuMs;
		c.maxTickMs = Math.max(c.maxTickMs ?? 0, durationMs);
		o.emit({ type: "tick", at: o.clock.now(), ...summary });
		return summary;
	}

	async #read(): Promise<BatchState> {
		const state = await this.#o.store.read(this.#last);
		this.#last = state;
		noteBatchRead(this.#o.counters);
		return state;
	}

	#compute(state: BatchState, view: MemberView, now: number): PlacementResult {
		const o = this.#o;
		const settling = this.#settling(view);
		return computePlacement({
			leases: state.leases,
			groups: o.groups,
			members: this.#members(view, now),
			now,
			leaseIntervalMs: o.leaseIntervalMs,
			prolongBelowMs: o.prolongBelowMs,
			missing: state.missing,
			// Whatever a missing shard held was written before now, so it expires within a lease
			// interval of the writer's clock: within one interval plus the skew of ours.
			unknownUntil: now + o.leaseIntervalMs + o.maxClockSkewMs,
			grants: this.#markerKnown && !settling,
		});
	}

	/** Counts (and reports) what the stored shards changed, compared with what was stored before. */
	#count(
		before: BatchState,
		written: readonly StoredShard[],
	): Pick<TickSummary, "granted" | "prolonged" | "accepted" | "shed"> {
		const o = this.#o;
		let granted = 0;
		let prolonged = 0;
		let accepted = 0;
		let shed = 0;
		for (const shard of written) {
			const { from, leases } = shard.record;
			for (let i = 0; i < leases.length; i++) {
				const after = leases[i];
				if (after === undefined || after.holder.address === UNKNOWN_HOLDER.address) continue;
				const prev: Lease | undefined = before.leases[from + i];
				if (prev === undefined || !sameGrant(prev, after)) {
					granted++;
					o.emit({ type: "granted", at: o.clock.now(), lease: after });
					continue;
				}
				if (after.expirationTime > prev.expirationTime) prolonged++;
				if (after.accepted && !prev.accepted) accepted++;
				if (prev.prolongable && !after.prolongable) shed++;
			}
		}
		const c = o.counters;
		c.granted += granted;
		c.prolonged += prolonged;
		c.accepted += accepted;
		c.shed += shed;
		return { granted, prolonged, accepted, shed };
	}
}
