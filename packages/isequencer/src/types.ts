/**
 * Workspace ID. A JavaScript `number`: every value must be a safe integer (`<= 2^53 - 1`); voedger's
 * u64 values above 2^53 are out of scope.
 */
export type WSID = number;
/** Workspace kind (voedger: the QNameID of the workspace descriptor), `0..65535`. */
export type WSKind = number;
/** Sequence ID (voedger: a QNameID), `0..65535`. */
export type SeqID = number;
/** Offset of an event in the partition log (PLog); the first event has offset 1. */
export type PLogOffset = number;
/** A sequence number; a safe integer. */
export type SeqNumber = number;

/**
 * One number of one sequence of one workspace.
 *
 * @example
 * ```ts
 * const v: SeqValue = { wsid: 1001, seqId: 1, value: 200_001 };
 * ```
 */
export interface SeqValue {
	readonly wsid: WSID;
	readonly seqId: SeqID;
	readonly value: SeqNumber;
}

/**
 * Receives the values of one PLog event during actualization. It may return a promise (when the
 * sequencer applies back-pressure); the storage must await it before sending the next event.
 *
 * @example
 * ```ts
 * const r = batcher(values, offset);
 * if (r !== undefined) await r;
 * ```
 */
export type SeqBatcher = (batch: readonly SeqValue[], offset: PLogOffset) => void | Promise<void>;

/**
 * Where the sequencer keeps its numbers and the next PLog offset, and how it replays the PLog.
 * Injected into {@link createSequencer}; `@vvm/seqstorage` implements it over a TTL storage driver.
 * Any rejection is retried by the sequencer with jittered backoff until it succeeds or the sequencer
 * is cleaned up.
 *
 * @see voedger pkg/isequencer ISeqStorage
 * @example
 * ```ts
 * const numbers = await storage.readNumbers(1001, [1, 2]); // [0, 0] when never written
 * await storage.writeValuesAndNextPLogOffset([{ wsid: 1001, seqId: 1, value: 7 }], 43);
 * ```
 */
export interface SeqStorage {
	/** The stored numbers, positionally; a number never written reads as `0`. */
	readNumbers(wsid: WSID, seqIds: readonly SeqID[]): Promise<readonly SeqNumber[]>;
	/**
	 * The next PLog offset to use: the one stored by the last
	 * {@link SeqStorage.writeValuesAndNextPLogOffset}, or `1` for a fresh storage. (A storage that
	 * returns `0` for "fresh", as voedger's does, is accepted: the sequencer maps `0` to `1`.)
	 */
	readNextPLogOffset(): Promise<PLogOffset>;
	/**
	 * Writes `batch` (keys unique, may be empty) FIRST, then `nextPLogOffset`: the offset of the
	 * first event whose numbers are NOT yet in storage.
	 */
	writeValuesAndNextPLogOffset(
		batch: readonly SeqValue[],
		nextPLogOffset: PLogOffset,
	): Promise<void>;
	/**
	 * Scans the PLog from `offset` (inclusive) to its end and calls `batcher` once per event, in
	 * offset order, awaiting it when it returns a promise. Values of one event are unordered and keys
	 * may repeat. Rejects with `signal.reason` (or resolves) soon after `signal` aborts.
	 */
	actualizeSequencesFromPLog(
		offset: PLogOffset,
		batcher: SeqBatcher,
		signal: AbortSignal,
	): Promise<void>;
}

/**
 * Alias of {@link SeqStorage} under its voedger name, for traceability.
 *
 * @see voedger pkg/isequencer ISeqStorage
 * @example
 * ```ts
 * const storage: ISeqStorage = createSeqStorage({ storage: ttl, appId: 1, partitionId: 0, plog });
 * ```
 */
export type ISeqStorage = SeqStorage;

/**
 * The sequencer of one application partition: `{ start {next} (flush | actualize) }`. Methods must
 * be called by one caller (the partition's command processor), never concurrently.
 *
 * Offsets: `start` returns the offset the caller writes its event at; `flush` (after that event
 * is in the PLog) makes the next `start` return offset + 1 and persists, in the background, the
 * numbers together with offset + 1 as the next PLog offset. `actualize` (after the PLog write failed)
 * drops the transaction and re-reads the PLog tail, after which `start` returns the same offset again.
 *
 * @see voedger pkg/isequencer ISequencer
 * @example
 * ```ts
 * const offset = sequencer.start(wsKind, wsid);
 * if (offset === undefined) return reply(503);
 * const wlog = await sequencer.next(WLOG_SEQ); // a number when cached; await is always safe
 * try { await plog.write(offset, event); sequencer.flush(); } catch { sequencer.actualize(); }
 * ```
 */
export interface Sequencer {
	/**
	 * Starts a sequencing transaction for the workspace and returns the PLog offset for its event,
	 * or `undefined` ("not ok", answer 503) while actualization runs or while more than
	 * `maxNumUnflushedValues` values wait to be flushed. Throws `SEQUENCER_MISUSE` when a transaction
	 * is already in progress, `SEQUENCER_UNKNOWN_WS_KIND` for a kind not in `seqTypes`,
	 * `SEQUENCER_CLEANED_UP` after cleanup.
	 */
	start(wsKind: WSKind, wsid: WSID): PLogOffset | undefined;
	/**
	 * The next number of the sequence in the current workspace. Synchronous (a `number`) when the
	 * value is cached, in the transaction or waiting to be flushed; a `Promise` only when the
	 * workspace must be read from storage. Throws `SEQUENCER_UNKNOWN_SEQ_ID` (ErrUnknownSeqID) for a
	 * sequence not defined for the workspace kind, `SEQUENCER_MISUSE` outside a transaction.
	 */
	next(seqId: SeqID): SeqNumber | Promise<SeqNumber>;
	/** Completes the transaction: its numbers become durable in the background. */
	flush(): void;
	/** Cancels the transaction and re-actualizes from the PLog; `start` is not ok until done. */
	actualize(): void;
	/**
	 * Optional hint: the workspace will be started soon (a command for it waits in the caller's
	 * queue). When its numbers are not in memory, reads them now, in the background, so that its
	 * `start` finds them, or shares the read still in flight, instead of reading them inside its
	 * transaction. Never starts a transaction, never changes a number's value; a no-op while
	 * actualizing, after cleanup (before it looks at its arguments, as `start`), or with many reads
	 * ahead already in flight. Otherwise throws like `start` for an unknown `wsKind` or an invalid
	 * `wsid`.
	 */
	prefetch?(wsKind: WSKind, wsid: WSID): void;
}

/**
 * Alias of {@link Sequencer} under its voedger name, for traceability.
 *
 * @see voedger pkg/isequencer ISequencer
 * @example
 * ```ts
 * const seq: ISequencer = createSequencer(params, storage).sequencer;
 * ```
 */
export type ISequencer = Sequencer;
