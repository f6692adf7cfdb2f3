// The fencing epoch of a partition, one counter per partition shared by every placement: what
// orders every holder of that partition, whichever VVM slot, numVVM or placement mode it came
// through (review 5, F2). And the numVVM a cluster's static placement runs under.
//
// One record per partition: pKey `<namespace>/partition-epochs`, cCols u32(partition), value
// u64 big-endian epoch + UTF-8 tag of the holder that raised it, no TTL. It only grows, and only
// by a compare-and-swap (insert when absent) that replaces exactly the value read: a holder
// serves under an epoch only after its own write moved the record from below that epoch to it.
import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, u32, utf8 } from "@vvm/ttlstorage";

/**
 * The default namespace of the records below (the leases placement's default namespace too).
 *
 * @example
 * ```ts
 * createStaticPlacement({ ...options, namespace: DEFAULT_PLACEMENT_NAMESPACE });
 * ```
 */
export const DEFAULT_PLACEMENT_NAMESPACE = "vvm";

/**
 * `pKey` of the partitions' epoch records: `<namespace>/partition-epochs` (`cCols` = `u32(p)`).
 *
 * @example
 * ```ts
 * await storage.get(partitionEpochsKey("vvm"), u32(7)); // u64 epoch + tag, or undefined
 * ```
 */
export function partitionEpochsKey(namespace: string): Bytes {
	return utf8(`${namespace}/partition-epochs`);
}

/**
 * `pKey` of the static placement's cluster record (`cCols` = `"numVVM"`, value u32).
 *
 * @example
 * ```ts
 * await storage.get(staticPlacementKey("vvm"), utf8("numVVM"));
 * ```
 */
export function staticPlacementKey(namespace: string): Bytes {
	return utf8(`${namespace}/static-placement`);
}

const NUM_VVM_CCOLS = utf8("numVVM");

/**
 * A partition's epoch record: the highest epoch given out and who took it.
 *
 * @example
 * ```ts
 * const record: PartitionEpoch = { epoch: 12n, tag: "static:2:10.0.0.2:8080#n" };
 * ```
 */
export interface PartitionEpoch {
	readonly epoch: bigint;
	/** Who raised it: `static:<slot>:<leader value>` or `leases:<incarnation>`. */
	readonly tag: string;
}

function encodeEpoch(epoch: bigint, tag: string): Bytes {
	const t = utf8(tag);
	const out = new Uint8Array(8 + t.length);
	new DataView(out.buffer).setBigUint64(0, epoch);
	out.set(t, 8);
	return out;
}

function decodeEpoch(value: Bytes): PartitionEpoch {
	if (value.length < 8) {
		throw new Error(
			`[@vvm/appparts] a partition epoch record holds ${value.length} bytes, expected at least 8`,
		);
	}
	const view = new DataView(value.buffer, value.byteOffset, value.byteLength);
	return { epoch: view.getBigUint64(0), tag: fromUtf8(value.subarray(8)) };
}

/**
 * The stored epoch record of `partition`, `undefined` when no holder took one yet.
 *
 * @example
 * ```ts
 * const current = await readPartitionEpoch(storage, "vvm", 7); // { epoch: 12n, tag: "static:2:…" }
 * ```
 */
export async function readPartitionEpoch(
	storage: TTLStorage,
	namespace: string,
	partition: number,
): Promise<PartitionEpoch | undefined> {
	const stored = await storage.get(partitionEpochsKey(namespace), u32(partition));
	return stored === undefined ? undefined : decodeEpoch(stored);
}

/**
 * Takes a new epoch for `partition`: `max(stored + 1, floor)`, written by compare-and-swap over
 * exactly the value read (insert when absent), read again after a lost race. The result is above
 * every epoch any holder (static or leases) took for the partition before, and no other caller
 * ever gets it. Storage errors propagate; `signal` ends the retries.
 *
 * @example
 * ```ts
 * const epoch = await takePartitionEpoch(storage, "vvm", 7, { tag: "static:2:10.0.0.2:8080#n" });
 * ```
 */
export async function takePartitionEpoch(
	storage: TTLStorage,
	namespace: string,
	partition: number,
	options: { readonly tag: string; readonly floor?: bigint; readonly signal?: AbortSignal },
): Promise<bigint> {
	const pKey = partitionEpochsKey(namespace);
	const cCols = u32(partition);
	for (;;) {
		options.signal?.throwIfAborted();
		const stored = await storage.get(pKey, cCols);
		const current = stored === undefined ? 0n : decodeEpoch(stored).epoch;
		const floor = options.floor ?? 0n;
		const next = current + 1n > floor ? current + 1n : floor;
		const value = encodeEpoch(next, options.tag);
		const written =
			stored === undefined
				? await storage.insertIfNotExists(pKey, cCols, value, 0)
				: await storage.compareAndSwap(pKey, cCols, stored, value, 0);
		if (written) return next;
	}
}

/**
 * Records that a holder serves `partition` under an epoch it was given elsewhere (a lease's
 * `startTime`): `true` when the record was below `epoch` and now holds it, or already holds it
 * for the same `tag` (the same holder deploying again under the same grant); `false` when another
 * holder took `epoch` or a higher one (then this holder must not serve under it). Compare-and-swap
 * as in {@link takePartitionEpoch}; storage errors propagate.
 *
 * @example
 * ```ts
 * if (!(await claimPartitionEpoch(storage, "vvm", 7, 1_767_000_000_000n, "leases:a1"))) decline();
 * ```
 */
export async function claimPartitionEpoch(
	storage: TTLStorage,
	namespace: string,
	partition: number,
	epoch: bigint,
	tag: string,
	signal?: AbortSignal,
): Promise<boolean> {
	const pKey = partitionEpochsKey(namespace);
	const cCols = u32(partition);
	for (;;) {
		signal?.throwIfAborted();
		const stored = await storage.get(pKey, cCols);
		if (stored !== undefined) {
			const current = decodeEpoch(stored);
			if (current.epoch > epoch) return false;
			if (current.epoch === epoch) return current.tag === tag;
		}
		const value = encodeEpoch(epoch, tag);
		const written =
			stored === undefined
				? await storage.insertIfNotExists(pKey, cCols, value, 0)
				: await storage.compareAndSwap(pKey, cCols, stored, value, 0);
		if (written) return true;
	}
}

/**
 * Why a static placement refuses to run: its `numVVM` is not the one the cluster stored (code
 * `APPPARTS_NUM_VVM_MISMATCH`). Serving under another numVVM than the other VVMs would give a
 * partition to two slots at once. The host reports it naming `--num-vvm`.
 *
 * @example
 * ```ts
 * try { await placement.start(signal); } catch (e) {
 *   if (e instanceof NumVVMMismatchError) console.error(`run with ${e.stored}, or change it`);
 * }
 * ```
 */
export class NumVVMMismatchError extends Error {
	readonly code = "APPPARTS_NUM_VVM_MISMATCH";
	/** This VVM's numVVM. */
	readonly configured: number;
	/** The cluster's stored numVVM. */
	readonly stored: number;
	constructor(configured: number, stored: number) {
		super(
			`[@vvm/appparts] numVVM ${configured} disagrees with the cluster's stored numVVM ${stored}: ` +
				`refusing to serve under it; to change it, stop every VVM, then call ` +
				`changeStaticNumVVM(storage, { from: ${stored}, to: ${configured} }) once and start the VVMs with ${configured}`,
		);
		this.name = "NumVVMMismatchError";
		this.configured = configured;
		this.stored = stored;
	}
}

function decodeNumVVM(value: Bytes): number {
	if (value.length !== 4) {
		throw new Error(`[@vvm/appparts] the stored numVVM holds ${value.length} bytes, expected 4`);
	}
	return new DataView(value.buffer, value.byteOffset, 4).getUint32(0);
}

/**
 * The numVVM the cluster's static placement runs under, `undefined` before the first VVM stored it.
 *
 * @example
 * ```ts
 * const numVVM = await readStaticNumVVM(storage); // 2
 * ```
 */
export async function readStaticNumVVM(
	storage: TTLStorage,
	namespace: string = DEFAULT_PLACEMENT_NAMESPACE,
): Promise<number | undefined> {
	const stored = await storage.get(staticPlacementKey(namespace), NUM_VVM_CCOLS);
	return stored === undefined ? undefined : decodeNumVVM(stored);
}

/**
 * Checks `numVVM` against the cluster's stored value, storing it when none is (the first VVM of a
 * cluster). Rejects with {@link NumVVMMismatchError} when they differ; storage errors propagate.
 *
 * @example
 * ```ts
 * await checkStaticNumVVM(storage, 3); // NumVVMMismatchError when the cluster runs with 2
 * ```
 */
export async function checkStaticNumVVM(
	storage: TTLStorage,
	numVVM: number,
	namespace: string = DEFAULT_PLACEMENT_NAMESPACE,
): Promise<void> {
	const pKey = staticPlacementKey(namespace);
	for (;;) {
		const stored = await readStaticNumVVM(storage, namespace);
		if (stored === numVVM) return;
		if (stored !== undefined) throw new NumVVMMismatchError(numVVM, stored);
		if (await storage.insertIfNotExists(pKey, NUM_VVM_CCOLS, u32(numVVM), 0)) return;
	}
}

/**
 * Changes the cluster's stored numVVM from `from` to `to` by compare-and-swap: `true` when
 * changed (or already `to`), `false` when the stored value is neither (someone else changed it:
 * look again). Call it once, with every VVM stopped (see the README, "Changing numVVM"): VVMs
 * still running with `from` stop serving when they see the change, but a partition may be
 * unavailable until the VVMs restarted with `to` lead its new slot.
 *
 * @example
 * ```ts
 * await changeStaticNumVVM(storage, { from: 2, to: 3 });
 * ```
 */
export async function changeStaticNumVVM(
	storage: TTLStorage,
	change: { readonly from: number; readonly to: number },
	namespace: string = DEFAULT_PLACEMENT_NAMESPACE,
): Promise<boolean> {
	for (const [name, n] of [
		["from", change.from],
		["to", change.to],
	] as const) {
		if (!Number.isInteger(n) || n < 1 || n > 0xffff_ffff) {
			throw new RangeError(`[@vvm/appparts] numVVM ${name} must be an integer 1..2^32-1, got ${n}`);
		}
	}
	const pKey = staticPlacementKey(namespace);
	const stored = await readStaticNumVVM(storage, namespace);
	if (stored === change.to) return true;
	if (stored === undefined)
		return storage.insertIfNotExists(pKey, NUM_VVM_CCOLS, u32(change.to), 0);
	if (stored !== change.from) return false;
	return storage.compareAndSwap(pKey, NUM_VVM_CCOLS, u32(change.from), u32(change.to), 0);
}
