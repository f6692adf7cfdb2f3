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
import {
	decodeU64,
	encodeU64,
	encodeU64Pair,
	numbersPKey,
	OFFSET_CCOLS,
	offsetPKey,
	seqIdCCols,
} from "./keys.ts";
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
	/** Any TTL storage driver (mem, level, cas, dyn). Records are written without TTL. */
	readonly storage: TTLStorage;
	/** Cluster application ID, `0..2^32-1`. Numbers are per application and workspace. */
	readonly appId: number;
	/** Partition ID, `0..65535`. The next PLog offset is per application and partition. */
	readonly partitionId: number;
	/** The partition's event log, replayed by actualization. */
	readonly plog: PLogReader;
	/**
	 * The workspaces' own logs (voedger's WLog), which make stored numbers a hint, not the truth:
	 * each number is stored with the workspace's log offset it is valid for, and reading a
	 * workspace's numbers also reads its log past that offset, taking the maximum with the numbers
	 * its entries took. A stored number that went back (a deposed writer's flush landing late, a
	 * retried request applied late) then costs a longer read, never a number handed out twice, so
	 * the numbers' writes need no fence. Without it, stored numbers are trusted: one writer only,
	 * on a storage whose writes never land after their answer (level, mem); a networked driver's
	 * timed-out flush can land after a later one (README, "Several writers over time").
	 */
	readonly wlog?: WorkspaceLog;
	/**
	 * Read a workspace's numbers with one point `get` per number needed (the asked ones and the
	 * log's) instead of one range read of all of them. Cheaper on an embedded store, where a range
	 * read opens an iterator over every table (after a restart, on the caller's thread); more
	 * requests on a server. Default `false`.
	 */
	readonly pointReads?: boolean;
}

/**
 * A workspace's log as the sequences see it: which sequence numbers its entries, and the sequence
 * values each entry took, from an offset to the log's end (the first missing offset).
 *
 * @example
 * ```ts
 * const wlog: WorkspaceLog = { seqId: 1, read: (wsid, from) => entriesOf(wsid, from) };
 * ```
 */
export interface WorkspaceLog {
	/** The sequence whose numbers are the log's offsets (`@vvm/cp`: `SEQ_WLOG_OFFSET`). */
	readonly seqId: SeqID;
	/** The values every entry from `fromOffset` (inclusive) on took, entry by entry. */
	read(wsid: WSID, fromOffset: number): AsyncIterable<readonly SeqValue[]>;
}

/**
 * A stored number: `u64(value)`, or with a workspace log `u64(value) u64(validAsOf)`: the
 * workspace's log offset (its last taken) the value is valid for.
 */
interface StoredNumber {
	readonly value: number;
	readonly asOf: number | undefined;
}

function decodeNumber(b: Uint8Array, what: string): StoredNumber {
	if (b.length === 16)
		return { value: decodeU64(b.subarray(0, 8), what), asOf: decodeU64(b.subarray(8), what) };
	return { value: decodeU64(b, what), asOf: undefined };
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
	readonly #wlog: WorkspaceLog | undefined;
	readonly #atomicBatches: boolean;
	readonly #pointReads: boolean;

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
		if (options.wlog !== undefined) {
			if (typeof options.wlog.read !== "function")
				throw new TypeError("[@vvm/seqstorage] options.wlog.read must be a function");
			checkInt(options.wlog.seqId, 0xffff, "wlog.seqId");
		}
		this.#wlog = options.wlog;
		this.#atomicBatches = options.storage.supports?.atomicBatches === true;
		this.#pointReads = options.pointReads === true;
	}

	async readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly SeqNumber[]> {
		checkInt(wsid, MAX_SAFE, "wsid");
		for (const s of seqIds) checkInt(s, 0xffff, "seqId");
		if (seqIds.length === 0) return [];
		const pKey = numbersPKey(this.#appId, wsid);
		const found = new Map<number, StoredNumber>();
		if ((seqIds.length === 1 && this.#wlog === undefined) || this.#pointReads) {
			// Only the numbers the read uses: the asked ones, and the log's (where they are valid).
			const wanted =
				this.#wlog === undefined ? seqIds : [...new Set([...seqIds, this.#wlog.seqId])];
			const values = await Promise.all(
				wanted.map((seqId) => this.#storage.get(pKey, seqIdCCols(seqId))),
			);
			wanted.forEach((seqId, i) => {
				const b = values[i];
				// Not found is 0, explicitly (voedger decodes a missing value: reference §4.4).
				if (b !== undefined) found.set(seqId, decodeNumber(b, `number ${wsid}/${seqId}`));
			});
		} else {
			// All numbers of a workspace share one partition key: one range read.
			for await (const r of this.#storage.read(pKey)) {
				if (r.cCols.length !== 2) continue;
				const seqId = ((r.cCols[0] as number) << 8) | (r.cCols[1] as number);
				found.set(seqId, decodeNumber(r.value, `number ${wsid}/${seqId}`));
			}
		}
		const numbers = new Map([...found].map(([seqId, n]) => [seqId, n.value]));
		await this.#healFromLog(wsid, seqIds, found, numbers);
		return seqIds.map((s) => numbers.get(s) ?? 0);
	}

	/**
	 * Reads the workspace's log past the oldest offset the asked numbers (and the log's own number)
	 * are valid for, and raises them to what the entries there took (a stored number may have gone
	 * back). Numbers nobody asked for do not move the start: a sequence taken long ago would
	 * otherwise make every cold read reread the log back to then.
	 */
	async #healFromLog(
		wsid: WSID,
		asked: readonly SeqID[],
		found: ReadonlyMap<number, StoredNumber>,
		numbers: Map<number, number>,
	): Promise<void> {
		const wlog = this.#wlog;
		if (wlog === undefined || found.size === 0) return;
		let from = Number.POSITIVE_INFINITY;
		for (const seqId of new Set([...asked, wlog.seqId])) {
			const n = found.get(seqId);
			if (n === undefined) continue;
			// A value without its offset (written before it was stored): valid as of the log offset
			// stored beside it, or the log's start.
			const asOf = n.asOf ?? (seqId === wlog.seqId ? n.value : (found.get(wlog.seqId)?.value ?? 0));
			from = Math.min(from, asOf + 1);
		}
		if (from === Number.POSITIVE_INFINITY) return;
		for await (const values of wlog.read(wsid, from))
			for (const v of values)
				if (v.wsid === wsid && v.value > (numbers.get(v.seqId) ?? 0)) numbers.set(v.seqId, v.value);
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
		const wlog = this.#wlog;
		// With a workspace log, each number says which log offset it is valid for: the workspace's
		// log number in the same batch (every event takes one), else the log's start.
		const logOffsetOf = new Map<number, number>();
		if (wlog !== undefined)
			for (const v of batch) if (v.seqId === wlog.seqId) logOffsetOf.set(v.wsid, v.value);
		for (const v of batch) {
			checkInt(v.wsid, MAX_SAFE, "wsid");
			checkInt(v.seqId, 0xffff, "seqId");
			checkInt(v.value, MAX_SAFE, "value");
			items.push({
				pKey: numbersPKey(this.#appId, v.wsid),
				cCols: seqIdCCols(v.seqId),
				value:
					wlog === undefined
						? encodeU64(v.value)
						: encodeU64Pair(v.value, logOffsetOf.get(v.wsid) ?? 0),
			});
		}
		const offset: BatchItem = {
			pKey: this.#offsetPKey,
			cCols: OFFSET_CCOLS,
			value: encodeU64(nextPLogOffset),
		};
		// A storage whose batches are all or nothing writes both in one batch (one round trip).
		if (this.#atomicBatches) {
			items.push(offset);
			await this.#storage.putBatch(items);
			return;
		}
		// Numbers first, then the offset: a crash in between leaves an older offset, and the
		// replay from it is idempotent (the sequencer takes maxima).
		if (items.length > 0) await this.#storage.putBatch(items);
		await this.#storage.put(offset.pKey, offset.cCols, offset.value);
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
 * u64 big-endian (with `wlog`, a number is `u64(value) u64(valid as of log offset)`). A fresh
 * partition reads next offset 1; a missing number reads 0.
 *
 * Over a storage with `supports.atomicBatches`, a flush is one `putBatch` (the numbers and the
 * offset together); otherwise the numbers' `putBatch`, then the offset's `put`.
 *
 * With `wlog`, writes need no fence: a stored offset that went back makes actualization replay
 * more of the PLog (idempotent), a number that went back makes its workspace's first read read
 * more of its log; neither hands a number out twice.
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
