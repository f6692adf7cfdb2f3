import type {
	PLogOffset,
	SeqBatcher,
	SeqID,
	SeqNumber,
	SeqStorage,
	SeqValue,
	WSID,
} from "@vvm/isequencer";
import type { BatchItem, TTLStorage } from "@vvm/ttlstorage";
import { SeqStorageError } from "./errors.ts";
import { decodeU64, encodeU64, numbersPKey, OFFSET_CCOLS, offsetPKey, seqIdCCols } from "./keys.ts";
import type { PLogReader } from "./mem-plog.ts";

/**
 * Options of {@link createSeqStorage}.
 *
 * @example
 * ```ts
 * const options: SeqStorageOptions = { storage, appId: 1, partitionId: 0, plog };
 * ```
 */
export interface SeqStorageOptions {
	/**
	 * Any TTL storage driver (mem, level, cas, dyn). Records are written without TTL. Give it a view
	 * that fences its writes (as `@vvm/cp` does per partition) when more than one process may
	 * serve the partition over time: a deposed writer's late flush then cannot roll numbers back.
	 */
	readonly storage: TTLStorage;
	/** Cluster application ID, `0..2^32-1`. Numbers are per application and workspace. */
	readonly appId: number;
	/** Partition ID, `0..65535`. The next PLog offset is per application and partition. */
	readonly partitionId: number;
	/** The partition's event log, replayed by actualization. */
	readonly plog: PLogReader;
}

function checkInt(n: number, max: number, what: string): void {
	if (!Number.isSafeInteger(n) || n < 0 || n > max)
		throw new RangeError(`[@vvm/seqstorage] ${what} must be an integer in 0..${max}, got ${n}`);
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

class SeqStorageImpl implements SeqStorage {
	readonly #storage: TTLStorage;
	readonly #appId: number;
	readonly #plog: PLogReader;
	readonly #offsetPKey: Uint8Array;

	constructor(options: SeqStorageOptions) {
		if (typeof options !== "object" || options === null)
			throw new TypeError("[@vvm/seqstorage] options are required");
		if (typeof options.storage?.putBatch !== "function")
			throw new TypeError("[@vvm/seqstorage] options.storage must be a TTLStorage");
		if (typeof options.plog?.read !== "function")
			throw new TypeError("[@vvm/seqstorage] options.plog must be a PLogReader");
		checkInt(options.appId, 0xffff_ffff, "appId");
		checkInt(options.partitionId, 0xffff, "partitionId");
		this.#storage = options.storage;
		this.#appId = options.appId;
		this.#plog = options.plog;
		this.#offsetPKey = offsetPKey(options.appId, options.partitionId);
	}

	async readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly SeqNumber[]> {
		checkInt(wsid, MAX_SAFE, "wsid");
		for (const s of seqIds) checkInt(s, 0xffff, "seqId");
		if (seqIds.length === 0) return [];
		const pKey = numbersPKey(this.#appId, wsid);
		if (seqIds.length === 1) {
			const seqId = seqIds[0] as SeqID;
			const b = await this.#storage.get(pKey, seqIdCCols(seqId));
			// Not found is 0, explicitly (voedger decodes a missing value: reference §4.4).
			return [b === undefined ? 0 : decodeU64(b, `number ${wsid}/${seqId}`)];
		}
		// All numbers of a workspace share one partition key: one range read.
		const found = new Map<number, number>();
		for await (const r of this.#storage.read(pKey)) {
			if (r.cCols.length !== 2) continue;
			const seqId = ((r.cCols[0] as number) << 8) | (r.cCols[1] as number);
			found.set(seqId, decodeU64(r.value, `number ${wsid}/${seqId}`));
		}
		return seqIds.map((s) => found.get(s) ?? 0);
	}

	async readNextPLogOffset(): Promise<PLogOffset> {
		const b = await this.#storage.get(this.#offsetPKey, OFFSET_CCOLS);
		// A fresh partition starts at 1, never 0 (reference §10.6).
		return b === undefined ? 1 : decodeU64(b, "next PLog offset");
	}

	async writeValuesAndNextPLogOffset(
		batch: readonly SeqValue[],
		nextPLogOffset: PLogOffset,
	): Promise<void> {
		checkInt(nextPLogOffset, MAX_SAFE, "nextPLogOffset");
		if (nextPLogOffset < 1)
			throw new RangeError("[@vvm/seqstorage] nextPLogOffset must be >= 1, got 0");
		const items: BatchItem[] = [];
		for (const v of batch) {
			checkInt(v.wsid, MAX_SAFE, "wsid");
			checkInt(v.seqId, 0xffff, "seqId");
			checkInt(v.value, MAX_SAFE, "value");
			items.push({
				pKey: numbersPKey(this.#appId, v.wsid),
				cCols: seqIdCCols(v.seqId),
				value: encodeU64(v.value),
			});
		}
		// Numbers first, then the offset: a crash in between leaves an older offset, and the
		// replay from it is idempotent (the sequencer takes maxima).
		if (items.length > 0) await this.#storage.putBatch(items);
		await this.#storage.put(this.#offsetPKey, OFFSET_CCOLS, encodeU64(nextPLogOffset));
	}

	async actualizeSequencesFromPLog(
		offset: PLogOffset,
		batcher: SeqBatcher,
		signal: AbortSignal,
	): Promise<void> {
		checkInt(offset, MAX_SAFE, "offset");
		signal.throwIfAborted();
		let last = offset - 1;
		for await (const event of this.#plog.read(offset, signal)) {
			signal.throwIfAborted();
			if (event.offset <= last)
				throw new SeqStorageError(
					"SEQSTORAGE_PLOG_ORDER",
					`PLog event ${event.offset} after ${last} (reading from ${offset})`,
				);
			last = event.offset;
			const r = batcher(event.values, event.offset);
			if (r !== undefined) await r;
		}
	}
}

/**
 * Creates the {@link SeqStorage} of one application partition over a TTL storage driver, with
 * voedger's key layout: numbers at pKey `u32(3) u32(appId) u64(wsid)`, cCols `u16(seqId)`; the
 * next PLog offset at pKey `u32(2) u32(appId) u16(partitionId)`, cCols 4 zero bytes; values are
 * u64 big-endian. A fresh partition reads next offset 1; a missing number reads 0.
 *
 * @see voedger pkg/appparts/internal/seqstorage, pkg/vvm/storage impl_seqstorage.go
 * @example
 * ```ts
 * const seqStorage = createSeqStorage({ storage: createMemTTLStorage(), appId: 1, partitionId: 0, plog });
 * const { sequencer, cleanup } = createSequencer({ seqTypes: { 1: { 1: 1 } } }, seqStorage);
 * ```
 */
export function createSeqStorage(options: SeqStorageOptions): SeqStorage {
	return new SeqStorageImpl(options);
}
