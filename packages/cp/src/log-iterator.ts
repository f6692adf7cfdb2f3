import type { TTLStorage } from "@vvm/ttlstorage";
import { BUCKET_SIZE, bucketOf, readU64, u64 } from "./keys.ts";

/** @internal One stored log entry. */
export interface RawLogEntry {
	readonly offset: number;
	readonly value: Uint8Array;
}

/**
 * @internal Reads a bucketed log (PLog of a partition, WLog of a workspace) from `from`, in offset
 * order, and stops at the first missing offset: a log is dense, and whatever lies beyond a gap
 * is not part of it. Reads one bucket after another; each bucket is one range read starting at
 * the wanted offset, so reading the tail of a long log never touches its beginning.
 */
export async function* iterateLog(
	storage: TTLStorage,
	pKeyOf: (bucket: number) => Uint8Array,
	from: number,
	signal?: AbortSignal,
): AsyncGenerator<RawLogEntry> {
	let next = from;
	for (let bucket = bucketOf(from); ; bucket++) {
		signal?.throwIfAborted();
		for await (const r of storage.read(pKeyOf(bucket), { from: u64(next) })) {
			if (readU64(r.cCols) !== next) return; // a gap (or a foreign cCols): the log ends here
			yield { offset: next, value: r.value };
			next++;
		}
		// The log continues in the next bucket only if this one is full up to its last offset.
		if (next !== (bucket + 1) * BUCKET_SIZE) return;
	}
}
