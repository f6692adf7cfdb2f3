import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual, MAX_VALUE_BYTES } from "@vvm/ttlstorage";
import type { RootRecord, ShardHeader, ShardRecord } from "./batch-codec.ts";
import {
	decodeRoot,
	decodeShard,
	decodeShardHeader,
	encodeRoot,
	encodeShard,
	FORMAT,
} from "./batch-codec.ts";
import { LeasesError } from "./errors.ts";
import type { LeaseKeys } from "./keys.ts";
import { isRootKey } from "./keys.ts";
import { packShards } from "./layout.ts";
import type { LeaseSlots } from "./model.ts";

/** A stored shard: its key, exact bytes (the compare-and-swap operand) and content. @internal */
export interface StoredShard {
	readonly cCols: Bytes;
	readonly bytes: Uint8Array;
	readonly record: ShardRecord;
}

/** A record that belongs to no current shard (an older epoch, or a re-sharding that died). @internal */
interface StaleRecord {
	readonly cCols: Bytes;
	readonly bytes: Uint8Array;
	readonly epoch: number;
}

/**
 * The lease batch as read from storage (or as last written by this placement driver).
 * @internal
 */
export interface BatchState {
	readonly root: { readonly bytes: Uint8Array; readonly record: RootRecord } | undefined;
	/** One per shard of the root's layout; `undefined` where the record is missing. */
	readonly shards: ReadonlyArray<StoredShard | undefined>;
	/** Lease of every group the root covers (`undefined`: never granted, or its shard is missing). */
	readonly leases: LeaseSlots;
	/** Group ranges `[from, to)` whose shard is missing: nothing is known about them. */
	readonly missing: ReadonlyArray<readonly [number, number]>;
	/** A shard of the root's epoch is sealed: a re-sharding began and has to be finished. */
	readonly sealed: boolean;
	/** Highest epoch of any record: a new layout takes the next one. */
	readonly maxEpoch: number;
	readonly stale: readonly StaleRecord[];
}

/** The empty batch: no root, nothing granted. @internal */
export const EMPTY_BATCH: BatchState = Object.freeze({
	root: undefined,
	shards: [],
	leases: [],
	missing: [],
	sealed: false,
	maxEpoch: 0,
	stale: [],
});

/**
 * Bytes every shard leaves free below the value limit, so that sealing it (version + 1, a flag)
 * always fits.
 */
const SEAL_MARGIN = 16;

function shardEnd(root: RootRecord, i: number): number {
	return root.starts[i + 1] ?? root.groups;
}

/** Value of the creation marker (`<ns>/leases-created`): format 1, kind 4. @internal */
export const MARKER_VALUE: Uint8Array = Uint8Array.of(FORMAT, 4);

/** The error of a batch whose root is gone although the cluster was created. @internal */
function rootMissing(why: string): LeasesError {
	return new LeasesError(
		"LEASES_BATCH_ROOT_MISSING",
		`the lease batch has no root record but ${why}: nothing is granted or prolonged until an operator repairs it (repairLeaseRoot, see the README "Operator recovery")`,
	);
}

/**
 * Reads the whole batch with one range read. Shards whose bytes equal the ones in `previous` are
 * not decoded again. Storage errors reject; an undecodable record rejects with
 * `LEASES_CORRUPT_RECORD`.
 *
 * A batch without its root is never read as "no leases": it rejects with
 * `LEASES_BATCH_ROOT_MISSING` when the creation marker exists or any shard record holds a lease.
 * Only a batch that was never created (no marker, and at most the lease-less shards of a creation
 * that died before it wrote the root) reads as empty: a lease is granted only once the marker is
 * stored (see `PlacementActor`), so no lease can exist then.
 * @internal
 */
export async function readBatch(
	storage: TTLStorage,
	keys: LeaseKeys,
	previous: BatchState = EMPTY_BATCH,
): Promise<BatchState> {
	let rootBytes: Uint8Array | undefined;
	const others: Array<{ cCols: Bytes; bytes: Uint8Array; epoch: number; from: number }> = [];
	let maxEpoch = 0;
	for await (const { cCols, value } of storage.read(keys.batch)) {
		if (isRootKey(cCols)) {
			rootBytes = value;
			continue;
		}
		const header = decodeShardHeader(value);
		maxEpoch = Math.max(maxEpoch, header.epoch);
		others.push({ cCols, bytes: value, epoch: header.epoch, from: header.from });
	}
	if (rootBytes === undefined) {
		for (const o of others) {
			if (decodeShard(o.bytes).leases.some((l) => l !== undefined))
				throw rootMissing(`${others.length} shard record(s) hold leases`);
		}
		if ((await storage.get(keys.marker, keys.root)) !== undefined)
			throw rootMissing(`the cluster was created (its marker exists)`);
		return { ...EMPTY_BATCH, maxEpoch, stale: others };
	}
	const root =
		previous.root !== undefined && bytesEqual(previous.root.bytes, rootBytes)
			? previous.root
			: { bytes: rootBytes, record: decodeRoot(rootBytes) };
	const layout = root.record;
	maxEpoch = Math.max(maxEpoch, layout.epoch);
	const known = new Map<number, StoredShard>();
	for (const s of previous.shards) if (s !== undefined) known.set(s.record.from, s);
	const byFrom = new Map<number, (typeof others)[number]>();
	const stale: StaleRecord[] = [];
	for (const o of others) {
		if (o.epoch === layout.epoch) byFrom.set(o.from, o);
		else stale.push(o);
	}
	const shards: Array<StoredShard | undefined> = [];
	const leases: LeaseSlots = new Array(layout.groups).fill(undefined);
	const missing: Array<readonly [number, number]> = [];
	let sealed = false;
	layout.starts.forEach((from, i) => {
		const to = shardEnd(layout, i);
		const found = byFrom.get(from);
		byFrom.delete(from);
		if (found === undefined) {
			shards.push(undefined);
			missing.push([from, to]);
			return;
		}
		const prev = known.get(from);
		const shard: StoredShard =
			prev !== undefined &&
			prev.record.epoch === layout.epoch &&
			bytesEqual(prev.bytes, found.bytes)
				? prev
				: { cCols: found.cCols, bytes: found.bytes, record: decodeShard(found.bytes) };
		if (shard.record.count !== to - from) {
			// A shard that does not match the layout is as good as missing.
			shards.push(undefined);
			missing.push([from, to]);
			stale.push({ ...found, epoch: layout.epoch });
			return;
		}
		shards.push(shard);
		if (shard.record.sealed) sealed = true;
		const recs = shard.record.leases;
		for (let k = 0; k < recs.length; k++) leases[from + k] = recs[k];
	});
	for (const o of byFrom.values()) stale.push(o);
	return { root, shards, leases, missing, sealed, maxEpoch, stale };
}

/** Options of {@link writeBatch}. @internal */
export interface WriteOptions {
	/** The writing placement driver (`address/incarnation`). */
	readonly writer: string;
	/** Its wall time now. */
	readonly now: number;
	/** Groups the batch must cover. */
	readonly groups: number;
	/** Largest record; default `MAX_VALUE_BYTES` (shards stay 16 bytes below it, for sealing). */
	readonly limit?: number;
	/** Test hook: runs between the steps of a re-sharding. @internal */
	readonly onReshardStep?: (step: "sealed" | "inserted" | "rooted") => void | Promise<void>;
}

/**
 * What a write did. `state` is the batch as stored now when every write succeeded, else
 * `undefined` (read again). `written` are the shards this call stored (to hand to local holders
 * and to count grants: they are applied exactly once).
 * @internal
 */
export interface WriteOutcome {
	readonly result: "unchanged" | "written" | "resharded" | "conflict" | "failed";
	readonly state: BatchState | undefined;
	readonly written: readonly StoredShard[];
	readonly writes: number;
	readonly bytes: number;
	/** Storage errors of the failed writes (and of clean-up deletes, which do not fail the write). */
	readonly errors: readonly unknown[];
}

/** `leases[from..to)`, with `undefined` past its end (a batch growing to more groups). */
function sliceOf(leases: LeaseSlots, from: number, to: number): LeaseSlots {
	const out: LeaseSlots = new Array(to - from);
	for (let g = from; g < to; g++) out[g - from] = leases[g];
	return out;
}

/** Writes and reads a lease batch of one namespace. @internal */
export class BatchStore {
	readonly #storage: TTLStorage;
	readonly #keys: LeaseKeys;

	constructor(storage: TTLStorage, keys: LeaseKeys) {
		this.#storage = storage;
		this.#keys = keys;
	}

	read(previous?: BatchState): Promise<BatchState> {
		return readBatch(this.#storage, this.#keys, previous);
	}

	/**
	 * Whether the stored root record is still exactly `state`'s (one point read): a placement
	 * driver working from a batch it did not read in this tick checks it before a write that
	 * grants, so it never grants from a batch whose root was lost or replaced under it (it reads
	 * the batch again, which reports the fault).
	 */
	async rootUnchanged(state: BatchState): Promise<boolean> {
		const stored = await this.#storage.get(this.#keys.batch, this.#keys.root);
		const known = state.root?.bytes;
		return stored !== undefined && known !== undefined && bytesEqual(stored, known);
	}

	/**
	 * Makes sure the creation marker is stored (insert-if-not-exists: stored already is as good).
	 * Called once the root exists and before the first grant. Storage errors reject.
	 */
	async ensureMarker(): Promise<void> {
		await this.#storage.insertIfNotExists(this.#keys.marker, this.#keys.root, MARKER_VALUE, 0);
	}

	/**
	 * Stores `next` as the successor of `current` (which must be what is stored, as read or as
	 * last written): one compare-and-swap per changed shard, or a re-sharding when the layout no
	 * longer fits (see the README, "The batch").
	 */
	async write(current: BatchState, next: LeaseSlots, options: WriteOptions): Promise<WriteOutcome> {
		const limit = (options.limit ?? MAX_VALUE_BYTES) - SEAL_MARGIN;
		const root = current.root?.record;
		if (
			root === undefined ||
			current.sealed ||
			current.missing.length > 0 ||
			root.groups !== options.groups
		) {
			return this.#reshard(current, next, options, limit);
		}
		const changed: Array<{
			index: number;
			old: StoredShard;
			bytes: Uint8Array;
			record: ShardRecord;
		}> = [];
		let total = 0;
		for (let i = 0; i < root.starts.length; i++) {
			const old = current.shards[i] as StoredShard;
			const from = root.starts[i] as number;
			const to = shardEnd(root, i);
			let dirty = false;
			for (let g = from; g < to; g++) {
				if (next[g] !== current.leases[g]) {
					dirty = true;
					break;
				}
			}
			if (!dirty) {
				total += old.bytes.length;
				continue;
			}
			const header: ShardHeader = {
				epoch: root.epoch,
				version: old.record.version + 1,
				sealed: false,
				from,
				count: to - from,
				writer: options.writer,
				writtenAt: options.now,
			};
			const bytes = encodeShard(header, next);
			if (bytes.length > limit) return this.#reshard(current, next, options, limit);
			total += bytes.length;
			changed.push({
				index: i,
				old,
				bytes,
				record: { ...header, leases: sliceOf(next, from, to) },
			});
		}
		if (root.starts.length > 1 && total <= (root.starts.length - 1) * limit * 0.75) {
			const starts = packShards(next, options.groups, {
				writer: options.writer,
				writtenAt: options.now,
				limit,
			});
			if (starts.length < root.starts.length) return this.#reshard(current, next, options, limit);
		}
		if (changed.length === 0) {
			return { result: "unchanged", state: current, written: [], writes: 0, bytes: 0, errors: [] };
		}
		const results = await Promise.allSettled(
			changed.map((c) =>
				this.#storage.compareAndSwap(this.#keys.batch, c.old.cCols, c.old.bytes, c.bytes, 0),
			),
		);
		const written: StoredShard[] = [];
		const errors: unknown[] = [];
		let lost = false;
		const shards = [...current.shards];
		const leases = [...current.leases];
		let bytes = 0;
		results.forEach((r, k) => {
			const c = changed[k] as (typeof changed)[number];
			bytes += c.bytes.length;
			if (r.status === "rejected") errors.push(r.reason);
			else if (!r.value) lost = true;
			else {
				const shard: StoredShard = { cCols: c.old.cCols, bytes: c.bytes, record: c.record };
				written.push(shard);
				shards[c.index] = shard;
				for (let g = shard.record.from; g < shard.record.from + shard.record.count; g++)
					leases[g] = next[g];
			}
		});
		const ok = errors.length === 0 && !lost;
		return {
			result: errors.length > 0 ? "failed" : lost ? "conflict" : "written",
			state: ok ? { ...current, shards, leases } : undefined,
			written,
			writes: changed.length,
			bytes,
			errors,
		};
	}

	/**
	 * A new layout in a new epoch: seal every shard of the current epoch (a compare-and-swap each,
	 * so a concurrent writer either lands first and fails this, or finds its shard sealed), insert
	 * the new shards, move the root to the new epoch (compare-and-swap), delete older records.
	 */
	async #reshard(
		current: BatchState,
		next: LeaseSlots,
		options: WriteOptions,
		limit: number,
	): Promise<WriteOutcome> {
		const storage = this.#storage;
		const batch = this.#keys.batch;
		const epoch = current.maxEpoch + 1;
		const starts = packShards(next, options.groups, {
			writer: options.writer,
			writtenAt: options.now,
			limit,
		});
		let writes = 0;
		let bytes = 0;
		const fail = (result: "conflict" | "failed", errors: unknown[]): WriteOutcome => ({
			result,
			state: undefined,
			written: [],
			writes,
			bytes,
			errors,
		});
		const settle = async (
			ops: Array<{ run: () => Promise<boolean>; size: number }>,
		): Promise<WriteOutcome | undefined> => {
			writes += ops.length;
			for (const op of ops) bytes += op.size;
			const results = await Promise.allSettled(ops.map((op) => op.run()));
			const errors = results.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
			if (errors.length > 0) return fail("failed", errors);
			if (results.some((r) => r.status === "fulfilled" && !r.value)) return fail("conflict", []);
			return undefined;
		};
		// 1. Seal the current epoch's live shards with their current content.
		const sealedRecords: StaleRecord[] = [];
		const seals: Array<{ run: () => Promise<boolean>; size: number }> = [];
		for (const shard of current.shards) {
			if (shard === undefined) continue;
			if (shard.record.sealed) {
				sealedRecords.push({ cCols: shard.cCols, bytes: shard.bytes, epoch: shard.record.epoch });
				continue;
			}
			const sealedBytes = encodeShard(
				// Same writer and time base: only the version (and flag) change, within SEAL_MARGIN.
				{ ...shard.record, version: shard.record.version + 1, sealed: true },
				shard.record.leases,
				shard.record.from,
			);
			sealedRecords.push({ cCols: shard.cCols, bytes: sealedBytes, epoch: shard.record.epoch });
			seals.push({
				run: () => storage.compareAndSwap(batch, shard.cCols, shard.bytes, sealedBytes, 0),
				size: sealedBytes.length,
			});
		}
		const sealFailure = await settle(seals);
		if (sealFailure !== undefined) return sealFailure;
		await options.onReshardStep?.("sealed");
		// 2. Insert the new epoch's shards.
		const shards: StoredShard[] = starts.map((from, i) => {
			const to = starts[i + 1] ?? options.groups;
			const header: ShardHeader = {
				epoch,
				version: 1,
				sealed: false,
				from,
				count: to - from,
				writer: options.writer,
				writtenAt: options.now,
			};
			return {
				cCols: this.#keys.shard(epoch, from),
				bytes: encodeShard(header, next),
				record: { ...header, leases: sliceOf(next, from, to) },
			};
		});
		const insertFailure = await settle(
			shards.map((s) => ({
				run: () => storage.insertIfNotExists(batch, s.cCols, s.bytes, 0),
				size: s.bytes.length,
			})),
		);
		if (insertFailure !== undefined) return insertFailure;
		await options.onReshardStep?.("inserted");
		// 3. Point the root at the new epoch.
		const rootRecord: RootRecord = {
			epoch,
			version: (current.root?.record.version ?? 0) + 1,
			groups: options.groups,
			starts,
			writer: options.writer,
			writtenAt: options.now,
		};
		const rootBytes = encodeRoot(rootRecord);
		const oldRoot = current.root;
		const rootFailure = await settle([
			{
				run: () =>
					oldRoot === undefined
						? storage.insertIfNotExists(batch, this.#keys.root, rootBytes, 0)
						: storage.compareAndSwap(batch, this.#keys.root, oldRoot.bytes, rootBytes, 0),
				size: rootBytes.length,
			},
		]);
		if (rootFailure !== undefined) return rootFailure;
		await options.onReshardStep?.("rooted");
		// 4. Delete what the new root no longer refers to (older epochs only: a newer one may belong
		// to a re-sharding in progress elsewhere, whose root move will fail on its own).
		const cleanup = [...sealedRecords, ...current.stale].filter((r) => r.epoch < epoch);
		const deletes = await Promise.allSettled(
			cleanup.map((r) => storage.compareAndDelete(batch, r.cCols, r.bytes)),
		);
		const errors = deletes.flatMap((r) => (r.status === "rejected" ? [r.reason] : []));
		const leases: LeaseSlots = new Array(options.groups).fill(undefined);
		for (const s of shards) {
			s.record.leases.forEach((l, j) => {
				leases[s.record.from + j] = l;
			});
		}
		return {
			result: "resharded",
			state: {
				root: { bytes: rootBytes, record: rootRecord },
				shards,
				leases,
				missing: [],
				sealed: false,
				maxEpoch: epoch,
				stale: [],
			},
			written: shards,
			writes: writes + cleanup.length,
			bytes,
			errors,
		};
	}
}
