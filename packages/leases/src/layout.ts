import { zigzag } from "./batch-codec.ts";
import { utf8Length, varintSize } from "./codec/byte-writer.ts";
import type { Lease, LeaseHolder } from "./model.ts";
import { holderKey } from "./model.ts";

/**
 * An upper bound of the encoded size of a shard, grown one group at a time, exact in everything
 * but the header's varints (bounded by their widest form): what the packing rule fills up to the
 * value limit without ever overflowing it.
 * @internal
 */
export class ShardSizer {
	readonly #fixed: number;
	readonly #writtenAt: number;
	readonly #holders = new Map<LeaseHolder, number>();
	readonly #holderKeys = new Set<string>();
	readonly #times = new Set<number>();
	#dictBytes = 0;
	#entryBytes = 0;

	constructor(writer: string, writtenAt: number) {
		const writerBytes = utf8Length(writer);
		// format, kind, epoch (u32), version (any), flags, from (u32), count (u32), writer, writtenAt
		this.#fixed = 2 + 5 + 8 + 1 + 5 + 5 + varintSize(writerBytes) + writerBytes + 8;
		this.#writtenAt = writtenAt;
	}

	reset(): void {
		this.#holders.clear();
		this.#holderKeys.clear();
		this.#times.clear();
		this.#dictBytes = 0;
		this.#entryBytes = 0;
	}

	get size(): number {
		return (
			this.#fixed +
			varintSize(this.#holderKeys.size) +
			varintSize(this.#times.size) +
			this.#dictBytes +
			this.#entryBytes
		);
	}

	#time(t: number): number {
		if (!this.#times.has(t)) {
			this.#times.add(t);
			this.#dictBytes += varintSize(zigzag(t - this.#writtenAt));
		}
		return this.#times.size; // an index < size
	}

	add(lease: Lease | undefined): void {
		if (lease === undefined) {
			this.#entryBytes += 1;
			return;
		}
		let h = this.#holders.get(lease.holder);
		if (h === undefined) {
			const key = holderKey(lease.holder);
			if (!this.#holderKeys.has(key)) {
				this.#holderKeys.add(key);
				const a = utf8Length(lease.holder.address);
				const i = utf8Length(lease.holder.incarnation);
				this.#dictBytes += varintSize(a) + a + varintSize(i) + i;
			}
			h = this.#holderKeys.size - 1;
			this.#holders.set(lease.holder, h);
		}
		// tag, holder escape, term, start index, expiration index (indexes bounded by the table size)
		const holderExtra = h >= 31 ? varintSize(this.#holderKeys.size) : 0;
		const start = varintSize(this.#time(lease.startTime));
		const exp = varintSize(this.#time(lease.expirationTime));
		this.#entryBytes += 2 + holderExtra + start + exp;
	}
}

/** Options of {@link packShards}. @internal */
export interface PackOptions {
	readonly writer: string;
	readonly writtenAt: number;
	/** Largest shard, in bytes: the storage value limit. */
	readonly limit: number;
}

function greedy(
	leases: ArrayLike<Lease | undefined>,
	groups: number,
	target: number,
	sizer: ShardSizer,
): number[] | undefined {
	const starts = [0];
	sizer.reset();
	let inShard = 0;
	for (let g = 0; g < groups; g++) {
		sizer.add(leases[g]);
		inShard++;
		if (sizer.size > target) {
			if (inShard === 1) return undefined; // one group alone does not fit
			starts.push(g);
			sizer.reset();
			sizer.add(leases[g]);
			inShard = 1;
			if (sizer.size > target) return undefined;
		}
	}
	return starts;
}

/**
 * The packing rule: the fewest shards (contiguous group ranges) whose encodings each fit in
 * `limit` bytes, greedily; then the same number of shards with the smallest largest shard (a
 * binary search on the fill target), so every shard keeps about the same headroom for growth.
 * Returns the first group of each shard.
 * @internal
 */
export function packShards(
	leases: ArrayLike<Lease | undefined>,
	groups: number,
	options: PackOptions,
): number[] {
	const sizer = new ShardSizer(options.writer, options.writtenAt);
	const fewest = greedy(leases, groups, options.limit, sizer);
	if (fewest === undefined)
		throw new RangeError(`[@vvm/leases] a single lease does not fit in ${options.limit} bytes`);
	if (fewest.length === 1) return fewest;
	let lo = 1;
	let hi = options.limit;
	let best = fewest;
	while (lo < hi) {
		const mid = Math.floor((lo + hi) / 2);
		const starts = greedy(leases, groups, mid, sizer);
		if (starts !== undefined && starts.length <= fewest.length) {
			best = starts;
			hi = mid;
		} else lo = mid + 1;
	}
	return best;
}
