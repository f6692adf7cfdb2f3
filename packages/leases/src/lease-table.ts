import type { BatchState, StoredShard } from "./batch-store.ts";
import type { Lease, LeaseSlots } from "./model.ts";
import { sameHolder } from "./model.ts";

/**
 * A lease as a host shows it (the `GET /leases` table, the holder behind a 421 reply).
 *
 * @example
 * ```ts
 * const view = node.holderOf(7);
 * if (view !== undefined) reply(421, { location: view.holder.address });
 * ```
 */
export interface LeaseView extends Lease {
	/** `expirationTime` has not passed by this host's wall clock (informational: see the skew bound). */
	readonly live: boolean;
}

/**
 * The whole lease table as this host last learned it.
 *
 * @example
 * ```ts
 * app.get("/leases", () => node.table());
 * ```
 */
export interface LeaseTable {
	/** Wall time of the last successful read (or in-process update) that changed it; `undefined` before the first. */
	readonly updatedAt: number | undefined;
	/** Groups the batch covers. */
	readonly groups: number;
	/** Layout epoch and number of shard records. */
	readonly epoch: number;
	readonly shards: number;
	/** Placement-driver instances that wrote the shards (`address/incarnation`). */
	readonly writers: readonly string[];
	/** Every group that has (or had) a lease, in group order. */
	readonly leases: readonly LeaseView[];
}

/** One group whose stored lease changed, as fed to the holder. @internal */
export interface LeaseChange {
	readonly group: number;
	readonly lease: Lease | undefined;
}

/**
 * This host's copy of the batch, fed by polls and by the in-process placement driver. A shard
 * is taken only when it is newer (epoch, then version) than what this copy has for its groups,
 * so a slow poll can never roll back what a local write already showed.
 * @internal
 */
export class LeaseTableState {
	#leases: LeaseSlots = [];
	#epochs: number[] = [];
	#versions: number[] = [];
	#groups = 0;
	#epoch = 0;
	#shards = 0;
	#writers = new Map<number, string>();
	#lastWriter: string | undefined;
	#updatedAt: number | undefined;

	/** Takes a full read; returns the groups whose lease changed. */
	applyBatch(state: BatchState, wallNow: number): LeaseChange[] {
		const root = state.root?.record;
		if (root === undefined) return [];
		const changes: LeaseChange[] = [];
		if (root.epoch >= this.#epoch) {
			this.#epoch = root.epoch;
			this.#shards = root.starts.length;
			if (root.groups < this.#groups) {
				// Groups beyond the new coverage have no lease any more (they had expired).
				for (let g = root.groups; g < this.#groups; g++) {
					if (this.#leases[g] !== undefined) changes.push({ group: g, lease: undefined });
				}
				this.#leases.length = root.groups;
				this.#epochs.length = root.groups;
				this.#versions.length = root.groups;
				for (const k of [...this.#writers.keys()]) if (k >= root.groups) this.#writers.delete(k);
			}
			this.#groups = root.groups;
		}
		for (const shard of state.shards) if (shard !== undefined) this.#take(shard, changes);
		if (changes.length > 0 || this.#updatedAt === undefined) this.#updatedAt = wallNow;
		return changes;
	}

	/** Takes shards written by the local placement driver. */
	applyShards(shards: readonly StoredShard[], wallNow: number): LeaseChange[] {
		const changes: LeaseChange[] = [];
		for (const s of shards) {
			if (s.record.epoch > this.#epoch) {
				this.#epoch = s.record.epoch;
				this.#groups = Math.max(this.#groups, s.record.from + s.record.count);
			}
			this.#take(s, changes);
		}
		if (changes.length > 0) this.#updatedAt = wallNow;
		return changes;
	}

	#take(shard: StoredShard, changes: LeaseChange[]): void {
		const { epoch, version, from, leases } = shard.record;
		if (from + leases.length > this.#groups) this.#groups = from + leases.length;
		let took = false;
		for (let i = 0; i < leases.length; i++) {
			const g = from + i;
			const e = this.#epochs[g] ?? 0;
			const v = this.#versions[g] ?? 0;
			if (epoch < e || (epoch === e && version <= v)) continue;
			this.#epochs[g] = epoch;
			this.#versions[g] = version;
			took = true;
			const before = this.#leases[g];
			const after = leases[i];
			if (before === after) continue;
			this.#leases[g] = after;
			if (before === undefined || after === undefined || !sameLease(before, after))
				changes.push({ group: g, lease: after });
		}
		if (took) {
			this.#writers.set(from, shard.record.writer);
			this.#lastWriter = shard.record.writer;
		}
	}

	lease(group: number): Lease | undefined {
		return this.#leases[group];
	}

	get groups(): number {
		return this.#groups;
	}

	/** Writer of the newest shard taken: the active placement driver, as far as this host knows. */
	get lastWriter(): string | undefined {
		return this.#lastWriter;
	}

	table(wallNow: number): LeaseTable {
		const leases: LeaseView[] = [];
		for (let g = 0; g < this.#leases.length; g++) {
			const l = this.#leases[g];
			if (l !== undefined) leases.push({ ...l, live: wallNow < l.expirationTime });
		}
		return {
			updatedAt: this.#updatedAt,
			groups: this.#groups,
			epoch: this.#epoch,
			shards: this.#shards,
			writers: [...new Set(this.#writers.values())],
			leases,
		};
	}
}

function sameLease(a: Lease, b: Lease): boolean {
	return (
		a.startTime === b.startTime &&
		a.expirationTime === b.expirationTime &&
		a.term === b.term &&
		a.accepted === b.accepted &&
		a.prolongable === b.prolongable &&
		sameHolder(a.holder, b.holder)
	);
}
