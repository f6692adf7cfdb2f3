import type { PLogOffset } from "@vvm/isequencer";
import type { PLogEvent, PLogReader } from "@vvm/seqstorage";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { DecodedLogValue } from "./event.ts";
import { decodeLogValue, seqValuesOf } from "./event.ts";
import { plogPKey } from "./keys.ts";
import { iterateLog } from "./log-iterator.ts";

/**
 * Options of {@link createPLogReader}.
 *
 * @example
 * ```ts
 * const options: PLogReaderOptions = { storage, appId: 1, partitionId: 0 };
 * ```
 */
export interface PLogReaderOptions {
	readonly storage: TTLStorage;
	/** Cluster application ID, `0..2^32-1`. */
	readonly appId: number;
	/** Partition, `0..65535`. */
	readonly partitionId: number;
}

/**
 * @internal Called with every entry before it is handed to the sequencer (the partition re-applies
 * it there). `decoded` is `undefined` for a value this package did not write, or one that names
 * another partition or offset: a consumed, corrupted offset. A rejection ends the read (the
 * sequencer retries it from that entry).
 */
export type PLogEntryHook = (
	offset: PLogOffset,
	decoded: DecodedLogValue | undefined,
	bytes: Uint8Array,
) => void | Promise<void>;

/** @internal Decodes a PLog value and checks it belongs where it was found. */
export function decodePLogEntry(
	partitionId: number,
	offset: PLogOffset,
	bytes: Uint8Array,
): DecodedLogValue | undefined {
	const d = decodeLogValue(bytes);
	return d !== undefined && d.event.o === offset && d.event.p === partitionId ? d : undefined;
}

/**
 * The durable PLog of one partition as a `PLogReader` of `@vvm/seqstorage`: reads from the given
 * offset to the end (the first missing offset), bucket by bucket, and extracts the sequence values
 * of each event: its WLog offset, the IDs of the records it created and any application sequence
 * numbers. A corrupted event keeps its values (they stay consumed); an undecodable value yields
 * none. So a restart actualizes from the stored next offset and never scans the whole PLog.
 *
 * @example
 * ```ts
 * const seqStorage = createSeqStorage({ storage, appId: 1, partitionId: 0, plog: createPLogReader({ storage, appId: 1, partitionId: 0 }) });
 * ```
 */
export function createPLogReader(options: PLogReaderOptions): PLogReader {
	return plogReader(options, undefined);
}

/** @internal {@link createPLogReader} with a hook on every entry. */
export function plogReader(
	options: PLogReaderOptions,
	onEntry: PLogEntryHook | undefined,
): PLogReader {
	const { storage, appId, partitionId } = options;
	const pKeyOf = (bucket: number): Uint8Array => plogPKey(appId, partitionId, bucket);
	return {
		async *read(fromOffset: PLogOffset, signal: AbortSignal): AsyncIterable<PLogEvent> {
			for await (const { offset, value } of iterateLog(
				storage,
				pKeyOf,
				Math.max(1, fromOffset),
				signal,
			)) {
				const decoded = decodePLogEntry(partitionId, offset, value);
				if (onEntry !== undefined) {
					const r = onEntry(offset, decoded, value);
					if (r !== undefined) await r;
				}
				yield { offset, values: decoded === undefined ? [] : seqValuesOf(decoded.event) };
			}
		},
	};
}
