import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import type { RootRecord, ShardHeader } from "./batch-codec.ts";
import { decodeRoot, decodeShardHeader, encodeRoot } from "./batch-codec.ts";
import { MARKER_VALUE } from "./batch-store.ts";
import { LeasesError } from "./errors.ts";
import { isRootKey, leaseKeys } from "./keys.ts";
import { LEASE_DEFAULTS, MAX_GROUPS } from "./options.ts";

/**
 * Options of {@link repairLeaseRoot}.
 *
 * @example
 * ```ts
 * const options: RepairLeaseRootOptions = { namespace: "vvm", groups: 64 };
 * ```
 */
export interface RepairLeaseRootOptions {
	/** The cluster's namespace; default `"vvm"`. */
	readonly namespace?: string;
	/** Groups the placement driver keeps leased (the hosts' `placementDriver.groups`, 1..25 000). */
	readonly groups: number;
	/** Time source for the new root's `writtenAt`; default `systemClock`. */
	readonly clock?: Clock;
}

/**
 * What {@link repairLeaseRoot} found and did.
 *
 * - `intact`: the root is there and readable: nothing was written.
 * - `not-created`: no root, no shard holding anything, no creation marker: the cluster was never
 *   created; the placement driver creates the batch itself. Nothing was written.
 * - `rebuilt`: the shard records of the newest epoch tile the groups exactly: the new root names
 *   them, and every lease is kept as stored (the cluster goes on without a gap).
 * - `unknown`: they do not (a shard record is gone too, or a re-sharding was under way): every
 *   shard record is deleted and the new root names none, so every group counts as leased to
 *   nobody known until a lease interval plus the clock-skew bound after the placement driver's
 *   next tick, and is granted after that (the safe answer: a lease in a lost record ends by then).
 *
 * @example
 * ```ts
 * const r = await repairLeaseRoot(storage, { namespace: "vvm", groups: 64 });
 * console.log(r.result, r.epoch, r.shards);
 * ```
 */
export interface RepairLeaseRootResult {
	readonly result: "intact" | "not-created" | "rebuilt" | "unknown";
	/** Layout epoch of the root now stored (`0` for `not-created`). */
	readonly epoch: number;
	/** Shard records the root names that exist. */
	readonly shards: number;
	/** Groups the root covers. */
	readonly groups: number;
}

interface Found {
	readonly cCols: Bytes;
	readonly bytes: Uint8Array;
	readonly header: ShardHeader;
}

/** The froms of `shards` if they tile `[0, end)` without gap or overlap, else `undefined`. */
function tiling(shards: readonly Found[]): { starts: number[]; end: number } | undefined {
	const sorted = [...shards].sort((a, b) => a.header.from - b.header.from);
	let end = 0;
	const starts: number[] = [];
	for (const s of sorted) {
		if (s.header.from !== end || s.header.count <= 0) return undefined;
		starts.push(s.header.from);
		end = s.header.from + s.header.count;
	}
	return starts.length === 0 ? undefined : { starts, end };
}

/**
 * The operator's command for a lease batch whose root record is missing or cannot be decoded
 * (`LEASES_BATCH_ROOT_MISSING` / `LEASES_CORRUPT_RECORD` in `batch-fault` events and
 * `metrics().batchFault`): writes a new root, after which the placement driver grants and prolongs
 * again and the holders read the batch again, without a restart.
 *
 * It never makes a lease look shorter than stored: when the newest epoch's shard records tile the
 * groups exactly, the root names them (`rebuilt`: the records readers and writers use stay the
 * same); otherwise it deletes them and names none (`unknown`), and the placement driver treats
 * every group as held by nobody known for a lease interval plus the skew bound before it grants
 * it. It is safe to run at any time and from any process (the
 * root is written by insert-if-not-exists, or by compare-and-swap of the unreadable bytes, so a
 * concurrent repair or creation wins once); placement drivers write nothing while the root is
 * missing. A shard record that cannot be decoded rejects with `LEASES_CORRUPT_RECORD`: delete it
 * first (its groups then count as unknown). Storage errors reject.
 *
 * @example
 * ```ts
 * // after a `leases.batch-fault` log line with LEASES_BATCH_ROOT_MISSING:
 * const r = await repairLeaseRoot(storage, { namespace: "vvm", groups: 64 });
 * if (r.result === "unknown") console.log("every group is granted again within a lease interval");
 * ```
 */
export async function repairLeaseRoot(
	storage: TTLStorage,
	options: RepairLeaseRootOptions,
): Promise<RepairLeaseRootResult> {
	const groups = options.groups;
	if (!Number.isInteger(groups) || groups < 1 || groups > MAX_GROUPS)
		throw new RangeError(
			`[@vvm/leases] groups must be an integer in 1..${MAX_GROUPS}, got ${String(groups)}`,
		);
	const keys = leaseKeys(options.namespace ?? LEASE_DEFAULTS.namespace);
	const clock = options.clock ?? systemClock;
	for (let attempt = 0; attempt < 5; attempt++) {
		let rootBytes: Uint8Array | undefined;
		const found: Found[] = [];
		for await (const { cCols, value } of storage.read(keys.batch)) {
			if (isRootKey(cCols)) rootBytes = value;
			else found.push({ cCols, bytes: value, header: decodeShardHeader(value) });
		}
		if (rootBytes !== undefined) {
			try {
				const root = decodeRoot(rootBytes);
				await storage.insertIfNotExists(keys.marker, keys.root, MARKER_VALUE, 0);
				const named = found.filter(
					(f) => f.header.epoch === root.epoch && root.starts.includes(f.header.from),
				).length;
				return { result: "intact", epoch: root.epoch, shards: named, groups: root.groups };
			} catch (error) {
				if (!LeasesError.is(error) || error.code !== "LEASES_CORRUPT_RECORD") throw error;
			}
		} else if (found.length === 0 && (await storage.get(keys.marker, keys.root)) === undefined) {
			return { result: "not-created", epoch: 0, shards: 0, groups: 0 };
		}
		const maxEpoch = found.reduce((m, f) => Math.max(m, f.header.epoch), 0);
		const newest = found.filter((f) => f.header.epoch === maxEpoch);
		const tiled = maxEpoch > 0 ? tiling(newest) : undefined;
		const writtenAt = Math.floor(clock.now());
		const root: RootRecord =
			tiled !== undefined
				? {
						epoch: maxEpoch,
						version: 1,
						groups: tiled.end,
						starts: tiled.starts,
						writer: "repairLeaseRoot",
						writtenAt,
					}
				: {
						// A fresh epoch: no record of it exists, so every group reads as missing.
						epoch: maxEpoch + 1,
						version: 1,
						groups: Math.max(groups, ...found.map((f) => f.header.from + f.header.count)),
						starts: [0],
						writer: "repairLeaseRoot",
						writtenAt,
					};
		if (tiled === undefined) {
			// Every record goes first (compare-and-delete of the bytes read): a stale placement
			// driver's compare-and-swap on one of them can then never land where no reader looks.
			const deleted = await Promise.all(
				found.map((f) => storage.compareAndDelete(keys.batch, f.cCols, f.bytes)),
			);
			if (deleted.some((d) => !d)) continue; // one changed meanwhile: look again
		}
		const bytes = encodeRoot(root);
		const stored =
			rootBytes === undefined
				? await storage.insertIfNotExists(keys.batch, keys.root, bytes, 0)
				: await storage.compareAndSwap(keys.batch, keys.root, rootBytes, bytes, 0);
		if (!stored) continue; // someone else wrote a root meanwhile: look again
		await storage.insertIfNotExists(keys.marker, keys.root, MARKER_VALUE, 0);
		return {
			result: tiled !== undefined ? "rebuilt" : "unknown",
			epoch: root.epoch,
			shards: tiled !== undefined ? tiled.starts.length : 0,
			groups: root.groups,
		};
	}
	throw new LeasesError(
		"LEASES_STORAGE_ERROR",
		"the lease batch's root changed under every repair attempt",
	);
}
