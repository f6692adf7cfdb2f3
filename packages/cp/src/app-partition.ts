import type { Clock } from "@vvm/clock";
import type {
	createSequencer,
	PLogOffset,
	SeqBatcher,
	SeqStorage,
	Sequencer,
	SequencerHandle,
	SequencerStats,
	SeqValue,
} from "@vvm/isequencer";
import { SequencerError } from "@vvm/isequencer";
import type { Logger } from "@vvm/log";
import { createSeqStorage } from "@vvm/seqstorage";
import type { TTLStorage, WriteFence } from "@vvm/ttlstorage";
import { TTLStorageError, withFence } from "@vvm/ttlstorage";
import type { App, CommandContext, CompiledTable, FieldValue } from "./app-def.ts";
import { FIRST_CRECORD_ID, MAX_RAW_ID, SEQ_OWRECORD_ID, SEQ_WLOG_OFFSET } from "./app-def.ts";
import type { CpCommitted } from "./errors.ts";
import { badRequest, CpError } from "./errors.ts";
import type { DecodedLogValue, LogEntry } from "./event.ts";
import {
	decodeIdempotencyEntry,
	decodeLogValue,
	decodeRecordValue,
	encodeJson,
	seqValuesOf,
	toLogEvent,
} from "./event.ts";
import type { ResolvedUpdate } from "./event-builder.ts";
import { answerOf, buildEvent, checkEventSize } from "./event-builder.ts";
import type { EncodedEvent, SequencesTrustLevel } from "./event-writer.ts";
import { EventWriter, isFenced, storageFailure } from "./event-writer.ts";
import { checkIdempotencyKey, fingerprint } from "./idempotency.ts";
import { cpKeys, fenceScope, plogPKey, wlogPKey } from "./keys.ts";
import { iterateLog } from "./log-iterator.ts";
import { isWsid, partitionOf } from "./partition.ts";
import { decodePLogEntry, plogReader } from "./plog-reader.ts";
import type {
	CommandResult,
	CreateRecordRequest,
	ExecuteCommandRequest,
	Plan,
	PlannedCreate,
	PlannedUpdate,
	UpdateRecordRequest,
} from "./request.ts";
import {
	applyPatch,
	checkCuds,
	checkRawIds,
	planCommand,
	planCreate,
	planUpdate,
} from "./request.ts";
import { SerialQueue } from "./serial-queue.ts";
import type { PartitionStats } from "./stats.ts";
import { Counters } from "./stats.ts";

/**
 * A record as read: `sys.ID`, `sys.QName` and its fields (API v2 read shape).
 *
 * @example
 * ```ts
 * const r: RecordData = { "sys.ID": 322685000131072, "sys.QName": "app1pkg.Customer", name: "Ada" };
 * ```
 */
export interface RecordData {
	readonly "sys.ID": number;
	readonly "sys.QName": string;
	readonly [field: string]: FieldValue;
}

/**
 * Reads a record (API v2 `GET …/docs/{pkg}.{table}/{id}`); with `table`, a record of another table
 * is "not found".
 *
 * @example
 * ```ts
 * const req: ReadRecordRequest = { wsid: 1001, table: "app1pkg.Customer", id: 322685000131072 };
 * ```
 */
export interface ReadRecordRequest {
	readonly wsid: number;
	readonly id: number;
	readonly table?: string;
}

/**
 * Reads a workspace's WLog from an offset (default 1), at most `limit` entries (default 100, at
 * most 10 000).
 *
 * @example
 * ```ts
 * const req: ReadWLogRequest = { wsid: 1001, from: 1, limit: 50 };
 * ```
 */
export interface ReadWLogRequest {
	readonly wsid: number;
	readonly from?: number;
	readonly limit?: number;
}

/**
 * Reads the partition's PLog from an offset (default 1), at most `limit` entries.
 *
 * @example
 * ```ts
 * const req: ReadPLogRequest = { from: 1, limit: 50 };
 * ```
 */
export interface ReadPLogRequest {
	readonly from?: number;
	readonly limit?: number;
}

/** Most entries of one log read. */
export const MAX_READ_LIMIT = 10_000;

/**
 * One deployed application partition (voedger `IAppPartition`): its sequencer and the operations
 * the host maps onto API v2 routes. Commands of a partition run one at a time; different
 * partitions run concurrently. Every operation rejects with a {@link CpError}.
 *
 * @example
 * ```ts
 * const p = cp.deploy(1);
 * await p.ready();
 * const { NewIDs } = await p.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "Ada" } });
 * const ada = await p.readRecord({ wsid: 1001, id: NewIDs["1"] as number });
 * ```
 */
export interface AppPartition extends AsyncDisposable {
	readonly partitionId: number;
	/** The partition's sequencer (`IAppPartition.Sequencer`), created on deploy. */
	readonly sequencer: Sequencer & { stats(): SequencerStats };
	/**
	 * Resolves once the sequencer has actualized (until then commands answer `CP_BUSY`); rejects
	 * with `CP_CLOSED` once the partition is closed, or with `signal.reason`.
	 */
	ready(signal?: AbortSignal): Promise<void>;
	createRecord(request: CreateRecordRequest): Promise<CommandResult>;
	updateRecord(request: UpdateRecordRequest): Promise<CommandResult>;
	executeCommand(request: ExecuteCommandRequest): Promise<CommandResult>;
	/**
	 * Reads a record. Sees every command answered so far, `committed: "yes"` ones included: the
	 * partition's own committed event whose effects failed is re-applied first, and a partition
	 * that has not caught up with its PLog yet is waited for (`readWaitMs`, then `CP_BUSY`).
	 */
	readRecord(request: ReadRecordRequest): Promise<RecordData>;
	/** Reads a workspace's WLog; waits as {@link AppPartition.readRecord} does. */
	readWLog(request: ReadWLogRequest): Promise<LogEntry[]>;
	/** Reads the partition's PLog as stored (waits for nothing). */
	readPLog(request?: ReadPLogRequest): Promise<LogEntry[]>;
	stats(): PartitionStats;
	/**
	 * Aborts once the partition closes: undeployed (`close()`), or on its own, when a newer
	 * holder refused its write (deposed) or its lease was over at a write. `reason` is the
	 * `CP_CLOSED` {@link CpError}: for a deposed partition, that a newer holder took it over
	 * (`cause`: the storage's refusal); for a lease that is over, that. What deployed the
	 * partition listens to it: a partition that closed on its own serves nothing more, whatever
	 * its grant says.
	 */
	readonly closed: AbortSignal;
	/** Undeploys: queued commands fail with `CP_CLOSED`, the sequencer is cleaned up. Idempotent. */
	close(): Promise<void>;
}

/**
 * What a deployed partition writes under: its fencing epoch and how long it may still write. The
 * host passes its placement's lease (a partition lease's start time, or a VVM slot leadership's
 * fencing token, and the lease's local deadline); without one, the partition takes the next epoch
 * of its fence record itself and never expires (one process serves it).
 *
 * @example
 * ```ts
 * const p = cp.deploy(7, { lease: { epoch: BigInt(lease.startTime), valid: () => node.serving(7) } });
 * ```
 */
export interface PartitionLease {
	/**
	 * Above the epoch of every earlier holder of the partition (its fencing token). Without one,
	 * the partition takes the next epoch of its fence record (one above the stored one).
	 */
	readonly epoch?: bigint;
	/**
	 * Whether this process may still write for the partition: `false` from the lease's local
	 * deadline on (a monotonic clock), and forever after. A command writes its PLog entry only while
	 * it is `true`, and is acknowledged only if it is still `true` once the write is confirmed.
	 */
	valid(): boolean;
}

/** Options of {@link CommandProcessor.deploy}. */
export interface DeployOptions {
	/** The lease the partition is served under; see {@link PartitionLease}. */
	readonly lease?: PartitionLease;
}

/** @internal What the partitions of one processor share. */
export interface PartitionContext {
	readonly app: App;
	readonly appId: number;
	readonly partitions: number;
	readonly storage: TTLStorage;
	/** Unconditional writes (possibly coalesced across partitions). */
	readonly writes: TTLStorage;
	readonly trustLevel: SequencesTrustLevel;
	readonly atomicBatches: boolean;
	/** Levels 0/1: the event and its effects in one `putBatchIf` (see the option). */
	readonly conditionalBatches: boolean;
	/** Fence every write by the partition's epoch (the storage supports it, and not switched off). */
	readonly fencing: boolean;
	/** `fencing`, by a storage that orders fenced writes per record (`supports.fencing: "ordered"`). */
	readonly orderedFencing: boolean;
	/** Test-only mutant: no fence and no lease check at all (`unsafeUnfenced`). */
	readonly unsafeUnfenced: boolean;
	readonly idempotencyTtlSeconds: number;
	readonly clock: Clock;
	readonly retryAfterMs: number;
	/** How long a read waits for the partition's first actualization before `CP_BUSY`. */
	readonly readWaitMs: number;
	readonly maxQueued: number;
	/** `maxQueueWaitMs`: no command is admitted whose estimated queue wait exceeds it. */
	readonly maxQueueWaitMs: number;
	/** `queueWaitTargetMs`: the bound of a standing queue's estimated wait. */
	readonly queueWaitTargetMs: number;
	/** `pipelineDepth`: commands of the partition in flight at once (README, "Pipelined numbering"). */
	readonly pipelineDepth: number;
	/** Already guarded and bound to the package (`libraryLogger`). */
	readonly log: Logger;
	readonly newSequencer: (
		storage: SeqStorage,
		onStorageError: (error: unknown) => void,
	) => SequencerHandle;
	readonly onClosed: (partitionId: number) => void;
}

/** @internal */
export type SequencerFactory = typeof createSequencer;

type Phase = "prepare" | "plog" | "apply";

/** What a command may carry beyond its plan. */
interface Submitted {
	readonly plan: Plan;
	readonly idempotency: { readonly key: string; readonly hash: string } | undefined;
}

const noop = (): void => {};

/** A pipelined command whose PLog write was issued: what the next one asserts and waits for. */
interface InFlight {
	readonly encoded: EncodedEvent;
	/** The workspace kind of its event's workspace (to start the transaction that re-actualizes). */
	readonly wsKind: number;
	/** Settles (never rejects) once the command answered: its effects applied, or its failure. */
	settled: Promise<void>;
}

/** What the queue's task of a pipelined command returns: its answer, given in PLog order. */
class Deferred {
	readonly answer: Promise<CommandResult>;
	constructor(answer: Promise<CommandResult>) {
		this.answer = answer;
	}
}

/** @internal The implementation of {@link AppPartition}. */
export class AppPartitionImpl implements AppPartition {
	readonly partitionId: number;
	readonly sequencer: Sequencer & { stats(): SequencerStats };
	readonly #ctx: PartitionContext;
	readonly #handle: SequencerHandle;
	readonly #queue: SerialQueue;
	readonly #counters = new Counters();
	readonly #lease: PartitionLease | undefined;
	/** Resolves once the fence is raised (the writer and the sequencer's storage exist). */
	readonly #fenced: Promise<void>;
	readonly #closing = new AbortController();
	/** See {@link AppPartition.closed}. */
	readonly closed: AbortSignal = this.#closing.signal;
	#writer: EventWriter | undefined;
	#seqStorage: SeqStorage | undefined;
	#epoch: bigint | undefined;
	/** Level 2 over "ordered" fencing: confirms the fence is still ours (see the constructor). */
	#fenceCheck: (() => Promise<void>) | undefined;
	/** Why the partition can no longer write (a newer holder, the fence could not be raised). */
	#deposed: CpError | undefined;
	/** Idempotency keys of commands queued or running: a retry meanwhile is refused. */
	readonly #keysInFlight = new Set<string>();
	/** The command past its PLog gate, which close() lets finish. */
	#committing: Promise<unknown> | undefined;
	/** Highest PLog offset whose event this process applied (all below it too). */
	#appliedThrough = 0;
	/**
	 * Our event that is durable in the PLog and committed (confirmed within the lease) but whose
	 * effects failed or were refused: reads re-apply it first, and recovery applies it.
	 */
	#pending: EncodedEvent | undefined;
	/** The re-application of {@link AppPartitionImpl.#pending} in progress. */
	#pendingRun: Promise<void> | undefined;
	/**
	 * Our events whose PLog writes may or may not have landed (their answers were lost), in PLog
	 * order: each may still land, late, so its offset must not go to another command (at level 2
	 * that command's put and the late one would overwrite each other). Before the next
	 * actualization reads the PLog, each is written again at its offset, in order, until that is
	 * confirmed; a late original then writes what is already there. Pipelined, every unknown one
	 * of the run that starts at the first failure counts, not only the first: a later one's batch
	 * requires its predecessor's bytes, which the first one's rewrite puts there, so it too can
	 * land after the actualization read the PLog. The run ends at a write refused for sure
	 * (`#unknownCut`): nothing after it can land. See {@link AppPartitionImpl.#resolveUnknownPLog}.
	 */
	readonly #unknownPLog: EncodedEvent[] = [];
	/** A write of the broken pipeline was refused for sure: no later one joins `#unknownPLog`. */
	#unknownCut = false;
	/** The first actualization read the PLog to its end: every earlier holder's event is applied. */
	#caughtUp = false;
	#closed = false;
	#closePromise: Promise<void> | undefined;
	/** Effective pipeline depth: `pipelineDepth` with conditional batches, else 1. */
	readonly #depth: number;
	/** Pipelined commands whose PLog write was issued and that have not answered, in PLog order. */
	readonly #inflight: InFlight[] = [];
	/**
	 * A pipelined command failed after its PLog write was issued (its transaction was already
	 * flushed in memory): the sequencer must re-actualize before any command takes a number again.
	 * Cleared when that actualization starts.
	 */
	#broken = false;
	/** Sequencer writes waiting at the flush gate ({@link AppPartitionImpl.#flushGate}). */
	readonly #gateWaiters = new Set<() => void>();

	constructor(ctx: PartitionContext, partitionId: number, lease: PartitionLease | undefined) {
		this.#ctx = ctx;
		this.#queue = new SerialQueue(ctx.clock, {
			maxWaitMs: ctx.maxQueueWaitMs,
			targetMs: ctx.queueWaitTargetMs,
		});
		this.partitionId = partitionId;
		this.#lease = lease;
		this.#depth = ctx.conditionalBatches ? ctx.pipelineDepth : 1;
		this.#fenced = this.#raiseFence();
		this.#fenced.catch(noop);
		// Every call waits for the fence: the sequencer's first actualization reads the PLog only
		// once no earlier holder can write any more (F1 of the storage contract).
		const seq = async (): Promise<SeqStorage> => {
			await this.#fenced;
			return this.#seqStorage as SeqStorage;
		};
		const seqStorage: SeqStorage = {
			readNumbers: async (wsid, seqIds) => (await seq()).readNumbers(wsid, seqIds),
			readNextPLogOffset: async () => (await seq()).readNextPLogOffset(),
			writeValuesAndNextPLogOffset: async (batch, offset) => {
				const s = await seq();
				// Pipelined: the flush of a command's transaction happens when its PLog write is issued;
				// its numbers and offset reach storage only once every event below is applied.
				if (this.#depth > 1 && !(await this.#flushGate(offset))) return;
				await s.writeValuesAndNextPLogOffset(batch, offset);
			},
			actualizeSequencesFromPLog: async (
				offset: PLogOffset,
				batcher: SeqBatcher,
				signal: AbortSignal,
			) => {
				const s = await seq();
				// The pipeline drained before this actualization was started; it re-reads the PLog.
				this.#broken = false;
				await this.#resolveUnknownPLog(signal);
				this.#counters.actualizations++;
				await s.actualizeSequencesFromPLog(offset, batcher, signal);
				this.#caughtUp = true;
			},
		};
		this.#handle = ctx.newSequencer(seqStorage, (error) => {
			this.#counters.sequencerStorageErrors++;
			// The sequencer's flush carries the fence too: refused, a newer holder serves the
			// partition. Deposed now, not at the next command (an idle partition went on retrying
			// the refused flush for good, and stayed "served"; found by review).
			if (isFenced(error)) this.#depose(error);
		});
		this.sequencer = this.#handle.sequencer;
	}

	// ------------------------------------------------------------------ fencing

	/**
	 * Raises the partition's fence to its epoch (the lease's, or the next one) before anything is
	 * read or written, then builds the writer and the sequencer's storage over views of the storage
	 * that carry the fence. A fence already above the epoch: a newer holder serves the partition,
	 * which closes. Storage errors are retried with backoff until the partition closes.
	 */
	async #raiseFence(): Promise<void> {
		const ctx = this.#ctx;
		const scope = fenceScope(ctx.appId, this.partitionId);
		let fence: WriteFence | undefined;
		if (ctx.fencing) {
			const raise = ctx.storage.raiseFence?.bind(ctx.storage);
			for (let attempt = 0; raise !== undefined; attempt++) {
				try {
					const epoch = await raise(scope, this.#lease?.epoch);
					fence = { scope, epoch };
					break;
				} catch (error) {
					if (isFenced(error)) {
						this.#deposed = new CpError(
							"CP_CLOSED",
							`partition ${this.partitionId} is held by a newer holder: ${(error as Error).message}`,
							{ cause: error },
						);
						void this.close();
						throw this.#deposed;
					}
					if (this.#closed || !TTLStorageError.is(error)) throw error;
					this.#ctx.log.warn(
						{ event: "fence-retry", partitionId: this.partitionId, attempt, err: error },
						`raising the fence of partition ${this.partitionId} failed; retrying`,
					);
					await ctx.clock
						.sleep(Math.min(2_000, 50 * 2 ** attempt), this.#closing.signal)
						.catch(noop);
					if (this.#closed) throw closedError();
				}
			}
		}
		this.#epoch = fence?.epoch;
		// Level 2 over "ordered" fencing: a PLog put of a deposed holder to an offset nobody wrote
		// yet lands without an error, so while two grants overlap (a --num-vvm change, a placement
		// switch) both holders acknowledged commands at one offset, and the newer one's survived
		// (found by review). An acknowledgement then waits for the fence, read after the write:
		// still ours, the newer holder raised it after our event landed, so its actualization
		// (after its raise) applies the event.
		const raiseFence = ctx.storage.raiseFence?.bind(ctx.storage);
		if (fence !== undefined && ctx.orderedFencing && ctx.trustLevel === 2 && raiseFence)
			this.#fenceCheck = coalesced(async () => {
				await raiseFence(fence.scope, fence.epoch);
			});
		const view = (s: TTLStorage): TTLStorage => (fence === undefined ? s : withFence(s, fence));
		const storage = view(ctx.storage);
		const writes = view(ctx.writes);
		this.#writer = new EventWriter({
			storage,
			writes,
			plainWrites: ctx.writes,
			...(fence === undefined ? {} : { fence }),
			appId: ctx.appId,
			level: ctx.trustLevel,
			atomicBatches: ctx.atomicBatches,
			conditionalBatches: ctx.conditionalBatches,
			pipelined: this.#depth > 1,
			claimRecovered: ctx.orderedFencing,
			idempotencyTtlSeconds: ctx.idempotencyTtlSeconds,
		});
		// The numbers and the offset go fenced. The sequencer flushes only past events whose effects
		// it saw applied (#commit, #recover; README, "Fenced writes", rule 5); fenced, a deposed
		// holder's late flush is also refused outright on "epoch" drivers, and ordered below the new
		// holder's flushes on "ordered" ones. (On "ordered" drivers a deposed holder's effect write
		// can be shadowed without an error, so a flush after it could pass an event nobody applied
		// if the new holder died before applying it: simulator seed 5696. Closed by not flushing once
		// the lease has ended, see #commit; README, "Fenced writes".)
		this.#seqStorage = createSeqStorage({
			storage: writes,
			// An embedded store that commits in groups (level): a range read there opens an iterator
			// over every table, point reads do not.
			pointReads: ctx.storage.supports?.groupCommit === true,
			appId: ctx.appId,
			partitionId: this.partitionId,
			plog: plogReader(
				{ storage: ctx.storage, appId: ctx.appId, partitionId: this.partitionId },
				(offset, decoded, bytes) => this.#recover(offset, decoded, bytes),
			),
			wlog: {
				seqId: SEQ_WLOG_OFFSET,
				read: (wsid, from) => this.#wlogValues(wsid, from),
			},
		});
	}

	/** The sequence values of a workspace's WLog entries from `from` on (markers' events too). */
	async *#wlogValues(wsid: number, from: number): AsyncIterable<readonly SeqValue[]> {
		const { appId, storage } = this.#ctx;
		// The log usually ends where the numbers were last flushed: one point read says so, where a
		// range read would cost more (a workspace's first command after a restart does this).
		const first = cpKeys.wlog(appId, wsid, from);
		if ((await storage.get(first.pKey, first.cCols)) === undefined) return;
		for await (const { value } of iterateLog(storage, (b) => wlogPKey(appId, wsid, b), from)) {
			const d = decodeLogValue(value);
			if (d !== undefined) yield seqValuesOf(d.event);
		}
	}

	/** A newer holder refused one of our writes: stop taking commands and undeploy. */
	#depose(error: unknown): void {
		if (this.#deposed !== undefined) return;
		this.#deposed = new CpError(
			"CP_CLOSED",
			`partition ${this.partitionId} was taken over by a newer holder; it undeploys`,
			{ cause: error },
		);
		this.#ctx.log.warn(
			{
				event: "deposed",
				partitionId: this.partitionId,
				epoch: this.#epoch?.toString(),
				err: error,
			},
			`partition ${this.partitionId}: a newer holder refused our write (epoch ${this.#epoch}); undeploying`,
		);
		void this.close();
	}

	/** Whether the partition may still write: its lease is valid and no newer holder refused it. */
	#mayWrite(): boolean {
		if (this.#ctx.unsafeUnfenced) return true;
		return this.#deposed === undefined && (this.#lease?.valid() ?? true);
	}

	get #writerReady(): EventWriter {
		return this.#writer as EventWriter;
	}

	// ------------------------------------------------------------------ recovery

	/**
	 * Every PLog entry the sequencer's actualization reads comes here first. An event this process
	 * has not applied is re-applied (idempotently) before the sequencer may take its numbers, so the
	 * stored next offset never passes an event whose effects are missing.
	 */
	async #recover(
		offset: PLogOffset,
		decoded: DecodedLogValue | undefined,
		bytes: Uint8Array,
	): Promise<void> {
		this.#counters.actualizedEvents++;
		if (offset <= this.#appliedThrough) return;
		// Past its lease a holder writes nothing: the event may already be the next holder's to
		// apply, or be overwritten by it (it was not acknowledged).
		if (!this.#mayWrite()) throw leaseEnded(this.partitionId, "no");
		// Our own committed event whose effects failed: a read may be re-applying it already; one
		// re-application serves both.
		if (this.#pending?.event.o === offset) {
			await this.#applyPending();
			return;
		}
		const writer = this.#writerReady;
		try {
			await writer.claimPLog(this.partitionId, offset, bytes, decoded?.event);
		} catch (error) {
			if (isFenced(error)) this.#depose(error);
			throw error;
		}
		if (decoded === undefined) {
			this.#counters.corruptedOffsets++;
			this.#ctx.log.warn(
				{
					event: "corrupted-offset",
					partitionId: this.partitionId,
					plogOffset: offset,
					bytes: bytes.length,
				},
				`PLog offset ${offset} of partition ${this.partitionId} holds a value that is not an event of this partition; it is consumed as corrupted`,
			);
		} else if (decoded.kind === "marker") {
			this.#counters.reappliedEvents++;
			try {
				await writer.rollBack(decoded.event, bytes);
			} catch (error) {
				if (isFenced(error)) this.#depose(error);
				throw error;
			}
		} else await this.#reapply({ event: decoded.event, bytes });
		this.#appliedThrough = offset;
		this.#wakeGate();
	}

	/** Re-applies a durable event idempotently (recovery mode); a conflict marks it corrupted. */
	async #reapply(e: EncodedEvent): Promise<void> {
		this.#counters.reappliedEvents++;
		try {
			const conflict = await this.#writerReady.apply(e, true);
			if (conflict !== undefined) {
				this.#counters.conflicts++;
				this.#ctx.log.error(
					{
						event: "conflict",
						partitionId: this.partitionId,
						plogOffset: e.event.o,
						key: conflict.key,
					},
					`${conflict.error().message}; the event is marked corrupted`,
				);
			}
		} catch (error) {
			if (isFenced(error)) this.#depose(error);
			throw error;
		}
	}

	/**
	 * Settles {@link AppPartitionImpl.#unknownPLog} before actualization reads the PLog: writes each
	 * event at its offset again, in PLog order (idempotent: the same bytes, or insert-if-not-exists
	 * that finds them) until a write is confirmed, retrying storage errors with backoff. Then each is in
	 * the PLog for sure, actualization re-applies it like any event of ours, and the original
	 * write, should it still land, rewrites the same bytes. While this runs the sequencer is
	 * actualizing: no command takes a number. A fence refusal deposes the partition; a lease
	 * that ended stops it (the next holder's fence refuses or orders below the late write).
	 */
	async #resolveUnknownPLog(signal: AbortSignal): Promise<void> {
		this.#unknownCut = false;
		// In PLog order: each rewrite's predecessor is in place before it.
		while (this.#unknownPLog.length > 0) {
			await this.#rewriteUnknownPLog(this.#unknownPLog[0] as EncodedEvent, signal);
			this.#unknownPLog.shift();
		}
	}

	/** Writes `unknown` again at its offset until a write is confirmed (see the caller). */
	async #rewriteUnknownPLog(unknown: EncodedEvent, signal: AbortSignal): Promise<void> {
		for (let attempt = 0; ; attempt++) {
			if (this.#closed || signal.aborted) throw closedError();
			if (!this.#mayWrite()) throw leaseEnded(this.partitionId, "unknown");
			try {
				await this.#writerReady.writePLog(unknown);
				// Level 2 over "ordered" fencing: the rewrite lands even after a newer holder's
				// raise, and actualization would then apply and flush past an event the newer
				// holder replaces (simulator seed 25921 with overlapping grants). Still ours, the
				// newer holder raised after it landed and applies it.
				await this.#fenceCheck?.();
				break;
			} catch (error) {
				if (isFenced(error)) {
					this.#depose(error);
					throw error;
				}
				this.#ctx.log.warn(
					{
						event: "plog-resolve-retry",
						partitionId: this.partitionId,
						plogOffset: unknown.event.o,
						attempt,
						err: error,
					},
					`partition ${this.partitionId}: writing PLog offset ${unknown.event.o} again (its first write's answer was lost) failed; retrying`,
				);
				await this.#ctx.clock.sleep(Math.min(2_000, 50 * 2 ** attempt), signal).catch(noop);
			}
		}
	}

	/**
	 * Re-applies {@link AppPartitionImpl.#pending} (our committed event whose effects failed), once
	 * for every caller at a time: recovery, and reads that must see it. Rejects while this process
	 * may not write (the next holder applies it), or with the storage error (the next call tries
	 * again).
	 */
	#applyPending(): Promise<void> {
		const pending = this.#pending;
		if (pending === undefined) return Promise.resolve();
		if (this.#pendingRun !== undefined) return this.#pendingRun;
		const run = (async () => {
			if (this.#closed || !this.#mayWrite())
				throw (
					this.#deposed ??
					new CpError(
						"CP_CLOSED",
						`partition ${this.partitionId} may no longer write (closed or its lease ended) and has a committed event whose effects are not applied yet; the next holder applies it`,
					)
				);
			await this.#reapply(pending);
			if (this.#pending === pending) this.#pending = undefined;
			if (pending.event.o > this.#appliedThrough) this.#appliedThrough = pending.event.o;
			this.#wakeGate();
		})();
		this.#pendingRun = run;
		const clear = (): void => {
			if (this.#pendingRun === run) this.#pendingRun = undefined;
		};
		run.then(clear, clear);
		return run;
	}

	/**
	 * What a read of records or of a WLog waits for, so that it sees every committed event
	 * (`committed: "yes"` included): our committed event whose effects failed is re-applied first,
	 * and a partition that has not yet caught up with the PLog (its first actualization, which
	 * re-applies an earlier holder's tail) is waited for, at most `readWaitMs`, then `CP_BUSY`.
	 * `undefined` (no promise, nothing to wait for) on the usual path.
	 */
	#settle(): Promise<void> | undefined {
		if (this.#pending !== undefined) return this.#settlePending();
		if (!this.#caughtUp) return this.#awaitCaughtUp();
		return undefined;
	}

	/**
	 * A record or WLog read is served only while the partition may write: its lease is valid and
	 * no newer holder refused it. Checked once what the read waits for is settled, just before the
	 * storage read. Past its lease a holder may acknowledge a command (its PLog write was confirmed
	 * inside the lease) whose effects land after a newer holder's recovery began: that recovery
	 * writes the record with an earlier event's state under its own, higher epoch before it
	 * re-applies this event, and on an `"ordered"` driver the late effect write then lands below it
	 * without an error (an `"epoch"` driver refuses it, and the holder knows: `#pending`). A read
	 * there answered without the command its client was just told about (simulator seeds 1081,
	 * 2300, 6469, 6527, 8365, 8371). Inside the lease every effect confirmed so far landed before
	 * any newer holder was granted, and recovery never replaces a later event's state, so a storage
	 * read issued then sees every command this holder acknowledged; checked again once the read
	 * returned, so the lease held for the whole read. `CP_CLOSED`, committed "no":
	 * read from the new holder (which waits for its first actualization: `#settle`).
	 */
	#checkServes(): void {
		if (this.#mayWrite()) return;
		throw (
			this.#deposed ??
			new CpError(
				"CP_CLOSED",
				`the lease of partition ${this.partitionId} ended; a read here could miss what the next holder applies: read from the new holder`,
			)
		);
	}

	async #settlePending(): Promise<void> {
		try {
			await this.#applyPending();
		} catch (error) {
			if (CpError.is(error)) throw error;
			if (isFenced(error))
				throw (
					this.#deposed ??
					new CpError("CP_CLOSED", `partition ${this.partitionId} was taken over`, {
						cause: error,
					})
				);
			throw storageFailure(error, "no", "re-applying a committed event before the read");
		}
	}

	async #awaitCaughtUp(): Promise<void> {
		const waitMs = this.#ctx.readWaitMs;
		const busy = (): CpError =>
			this.#busy(
				`partition ${this.partitionId} is still re-applying its PLog tail; a read now could miss a committed event`,
			);
		if (waitMs <= 0) throw busy();
		const ctl = new AbortController();
		const timer = this.#ctx.clock.setTimer(waitMs, () => ctl.abort());
		try {
			await this.ready(ctl.signal);
		} catch (error) {
			if (ctl.signal.aborted && !this.#caughtUp) throw busy();
			throw error;
		} finally {
			timer.cancel();
		}
		if (!this.#caughtUp) throw busy();
	}

	async ready(signal?: AbortSignal): Promise<void> {
		if (this.#closed) throw this.#deposed ?? closedError();
		try {
			await this.#fenced;
			await this.#handle.sequencer.ready(signal);
		} catch (error) {
			if (CpError.is(error)) throw error;
			throw sequencerEnded(error) ? (this.#deposed ?? closedError()) : error;
		}
	}

	// ------------------------------------------------------------------ commands

	createRecord(request: CreateRecordRequest): Promise<CommandResult> {
		return this.#submit("createRecord", request, () => planCreate(this.#ctx.app, request));
	}

	updateRecord(request: UpdateRecordRequest): Promise<CommandResult> {
		return this.#submit("updateRecord", request, () => planUpdate(this.#ctx.app, request));
	}

	executeCommand(request: ExecuteCommandRequest): Promise<CommandResult> {
		return this.#submit("executeCommand", request, () => planCommand(this.#ctx.app, request));
	}

	async #submit(
		operation: string,
		request: { readonly idempotencyKey?: string } | undefined,
		plan: () => Plan,
	): Promise<CommandResult> {
		let inFlight: string | undefined;
		/** Past this point the command may write; before it, nothing was written. */
		let queued = false;
		try {
			if (this.#closed) throw this.#deposed ?? closedError();
			const p = plan();
			this.#checkPartition(p.wsid);
			const key = request?.idempotencyKey;
			let idempotency: Submitted["idempotency"];
			if (key !== undefined) {
				const { idempotencyKey: _, ...rest } = request as { idempotencyKey?: string };
				idempotency = { key: checkIdempotencyKey(key), hash: fingerprint(operation, rest) };
				inFlight = `${p.wsid}/${key}`;
				if (this.#keysInFlight.has(inFlight)) {
					inFlight = undefined;
					throw new CpError(
						"CP_IDEMPOTENCY_KEY_IN_FLIGHT",
						`idempotencyKey: a command with this key is still running in workspace ${p.wsid}; this request wrote nothing: retry with the same key once the first has answered`,
						{ field: "idempotencyKey", retryAfterMs: this.#ctx.retryAfterMs },
					);
				}
			}
			this.#admit();
			if (this.sequencer.stats().actualizing) throw this.#busy("the partition is actualizing");
			if (inFlight !== undefined) this.#keysInFlight.add(inFlight);
			this.#prefetch(p.wsid);
			queued = true;
			const ran = await this.#queue.run(() => this.#execute({ plan: p, idempotency }));
			const result = ran instanceof Deferred ? await ran.answer : ran;
			if (result.replayed === true) this.#counters.replayed++;
			else this.#counters.commands++;
			return result;
		} catch (error) {
			throw this.#count(queued || CpError.is(error) ? error : unprepared(error));
		} finally {
			if (inFlight !== undefined) this.#keysInFlight.delete(inFlight);
		}
	}

	/**
	 * Reads the workspace's numbers ahead when a command for it is admitted, so that commands of
	 * workspaces not in memory (the first after a restart) are read while earlier commands run
	 * instead of one after the other inside the partition's queue. A hint: what it would refuse
	 * (a workspace without a kind) #execute refuses, with its error, when the command's turn comes.
	 */
	#prefetch(wsid: number): void {
		const sequencer = this.sequencer;
		if (sequencer.prefetch === undefined) return;
		try {
			sequencer.prefetch(this.#ctx.app.wsKindOf(wsid), wsid);
		} catch {
			// refused again, and answered, in #execute
		}
	}

	/**
	 * Admission: a command the partition's queue cannot take in time is shed at once, before
	 * anything is read, written or numbered (`CP_BUSY`, committed "no"), with a `retryAfterMs` of
	 * the backlog's estimated drain time: past `maxQueuedCommands`, past `maxQueueWaitMs` of
	 * estimated wait, or past `queueWaitTargetMs` while the queue is standing.
	 */
	#admit(): void {
		const queue = this.#queue;
		const full = queue.length >= this.#ctx.maxQueued;
		const waitMs = full
			? Math.ceil(queue.waitEstimateMs()) || this.#ctx.retryAfterMs
			: queue.shed();
		if (!full && waitMs === 0) return;
		this.#counters.shed++;
		throw new CpError(
			"CP_BUSY",
			`server is busy: partition ${this.partitionId} has ${queue.length} commands queued, about ${waitMs} ms of work (${
				full
					? `maxQueuedCommands ${this.#ctx.maxQueued}`
					: `over ${queue.standing ? `queueWaitTargetMs ${this.#ctx.queueWaitTargetMs} of a standing queue` : `maxQueueWaitMs ${this.#ctx.maxQueueWaitMs}`}`
			}); nothing was written`,
			{ retryAfterMs: waitMs },
		);
	}

	#count(error: unknown): unknown {
		const c = this.#counters;
		c.failed++;
		if (CpError.is(error))
			switch (error.code) {
				case "CP_BAD_REQUEST":
				case "CP_NOT_FOUND":
				case "CP_NOT_ALLOWED":
				case "CP_WRONG_PARTITION":
				case "CP_IDEMPOTENCY_KEY_REUSED":
				case "CP_IDEMPOTENCY_KEY_IN_FLIGHT":
					c.rejected++;
					break;
				case "CP_BUSY":
					c.busy++;
					break;
				case "CP_CONFLICT":
					c.conflicts++;
					break;
				case "CP_STORAGE":
					c.storageErrors++;
					break;
				default:
			}
		return error;
	}

	#busy(why: string): CpError {
		return new CpError("CP_BUSY", `server is busy: ${why}`, {
			retryAfterMs: this.#ctx.retryAfterMs,
		});
	}

	#checkPartition(wsid: number): void {
		const owner = partitionOf(wsid, this.#ctx.partitions);
		if (owner !== this.partitionId)
			throw new CpError(
				"CP_WRONG_PARTITION",
				`wsid ${wsid} belongs to partition ${owner}, not ${this.partitionId}`,
				{ field: "wsid" },
			);
	}

	/** The first execution's answer of an idempotency key, or `undefined` when it is new. */
	async #replay(wsid: number, idempotency: NonNullable<Submitted["idempotency"]>) {
		const k = cpKeys.idempotency(this.#ctx.appId, wsid, idempotency.key);
		let bytes: Uint8Array | undefined;
		try {
			bytes = await this.#ctx.storage.get(k.pKey, k.cCols);
		} catch (error) {
			throw storageFailure(error, "no", "reading the idempotency key");
		}
		const entry = bytes === undefined ? undefined : decodeIdempotencyEntry(bytes);
		if (entry === undefined) return undefined;
		if (entry.h !== idempotency.hash)
			throw new CpError(
				"CP_IDEMPOTENCY_KEY_REUSED",
				`idempotencyKey: the key was used for a different request in workspace ${wsid} (PLog offset ${entry.o})`,
				{ field: "idempotencyKey" },
			);
		const result: CommandResult = { ...entry.r, plogOffset: entry.o, replayed: true };
		return result;
	}

	async #execute({ plan, idempotency }: Submitted): Promise<CommandResult | Deferred> {
		if (this.#closed) throw this.#deposed ?? closedError();
		try {
			await this.#fenced;
		} catch (error) {
			throw this.#classify(error, "prepare");
		}
		const { app, clock } = this.#ctx;
		const writer = this.#writerReady;
		let wsKind: number;
		try {
			wsKind = app.wsKindOf(plan.wsid);
		} catch (error) {
			throw new CpError(
				"CP_INTERNAL",
				`wsid: the application has no workspace kind for ${plan.wsid}`,
				{
					cause: error,
					field: "wsid",
				},
			);
		}
		// Pipelined (README, "Pipelined numbering"): a command that only creates records reads
		// nothing an earlier command in flight writes (its idempotency key is not theirs:
		// #keysInFlight), so it may run behind them; any other waits until none is in flight.
		const pipelined =
			this.#depth > 1 && plan.updates.length === 0 && plan.command.execute === undefined;
		if (this.#depth > 1) {
			if (!pipelined) await this.#drain();
			else
				while (this.#inflight.length >= this.#depth && !this.#broken)
					await (this.#inflight[0] as InFlight).settled;
			if (this.#broken) {
				await this.#drain();
				try {
					this.#reactualize(wsKind, plan.wsid);
				} catch (error) {
					throw this.#classify(error, "prepare");
				}
			}
		}
		// A failed previous command started a re-actualization, which re-applies its event: wait,
		// so that what this command reads (its key, its records) is read after that.
		if (this.sequencer.stats().actualizing) {
			try {
				await this.ready();
			} catch (error) {
				throw this.#classify(error, "prepare");
			}
		}
		if (idempotency !== undefined) {
			const replayed = await this.#replay(plan.wsid, idempotency);
			if (replayed !== undefined) return replayed;
		}
		// Everything that can be refused is refused before a number is taken.
		const updates = await this.#resolveUpdates(plan.wsid, plan.updates);
		checkRawIds({ creates: plan.creates, updates: updates.map(asPlanned) });
		const execute = plan.command.execute;
		if (execute === undefined)
			checkEventSize({
				...this.#sizeParts(plan, plan.creates, updates),
				appSeqs: [],
				idempotency,
			});
		if (this.#closed) throw this.#deposed ?? closedError();
		let offset: number | undefined;
		try {
			offset = this.sequencer.start(wsKind, plan.wsid);
		} catch (error) {
			throw this.#classify(error, "prepare");
		}
		if (offset === undefined)
			throw this.#busy("the sequencer is actualizing or its flush backlog is full");
		let phase: Phase = "prepare";
		try {
			const wlogOffset = await this.sequencer.next(SEQ_WLOG_OFFSET);
			let creates = plan.creates;
			let allUpdates = updates;
			let result: Readonly<Record<string, unknown>> | undefined;
			const appSeqs: Array<readonly [number, number]> = [];
			if (execute !== undefined) {
				const out = await execute(this.#commandContext(plan, appSeqs));
				const more: { creates: PlannedCreate[]; updates: PlannedUpdate[] } = {
					creates: [],
					updates: [],
				};
				if (out?.cuds !== undefined) checkCuds(app, out.cuds, "result.cuds", true, more);
				creates = [...creates, ...more.creates];
				allUpdates = [...updates, ...(await this.#resolveUpdates(plan.wsid, more.updates))];
				checkRawIds({ creates, updates: allUpdates.map(asPlanned) });
				result = out?.result;
				checkEventSize({
					...this.#sizeParts(plan, creates, allUpdates),
					appSeqs,
					idempotency,
					result,
				});
			}
			const ids: number[] = [];
			for (const c of creates) ids.push(await this.#nextId(c.table));
			const parts = {
				partitionId: this.partitionId,
				plogOffset: offset,
				wsid: plan.wsid,
				wlogOffset,
				registeredAt: clock.now(),
				command: plan.command.name,
				args: plan.args,
				creates,
				ids,
				updates: allUpdates,
				appSeqs,
				epoch: this.#epoch,
				idempotency,
				result,
			};
			const event = buildEvent(parts);
			const encoded: EncodedEvent = {
				event,
				bytes: encodeJson(event),
				readValues: new Map(allUpdates.map((u) => [u.id, u.stored])),
			};
			const answer: CommandResult = { ...answerOf(parts), plogOffset: offset };
			// The gate: nothing is written after the partition closed or its lease ended.
			if (this.#closed) throw this.#deposed ?? closedError();
			if (!this.#mayWrite()) throw leaseEnded(this.partitionId, "no");
			if (pipelined) {
				// An earlier command failed meanwhile: its successors write nothing.
				if (this.#broken)
					throw this.#busy("an earlier command of the partition failed; it re-actualizes");
				const prev = this.#inflight.at(-1);
				if (prev !== undefined && prev.encoded.event.o !== offset - 1)
					throw new CpError(
						"CP_INTERNAL",
						`pipeline out of order: PLog offset ${offset} after ${prev.encoded.event.o} in flight`,
					);
				// End the transaction now (its numbers' storage write waits at #flushGate) and issue
				// the write in the same turn: the next command may take its numbers at once.
				this.sequencer.flush();
				const write = writer.writePLog(encoded, prev?.encoded);
				write.catch(noop);
				const entry: InFlight = { encoded, wsKind, settled: Promise.resolve() };
				const done = this.#finish(writer, entry, prev, write, answer);
				entry.settled = done.then(noop, noop);
				this.#inflight.push(entry);
				this.#committing = entry.settled;
				return new Deferred(done);
			}
			phase = "plog";
			const committing = this.#commit(writer, encoded, answer);
			this.#committing = committing;
			try {
				return await committing;
			} finally {
				this.#committing = undefined;
			}
		} catch (error) {
			// Nothing or a durable event: either way the sequencer re-reads the PLog, and recovery
			// re-applies the event (if it is there) before the next command.
			if (this.#closed) throw this.#classify(error, phase);
			// Pipelined: the actualization reads the PLog only once no write of ours is in flight.
			if (this.#inflight.length > 0) {
				await this.#drain();
				if (this.#closed) throw this.#classify(error, phase);
			}
			// A partition whose lease ended (or that a newer holder deposed) writes nothing more,
			// not even recovery: it undeploys, and the sequencer with it.
			if (this.#mayWrite()) this.sequencer.actualize();
			else void this.close();
			throw this.#classify(error, phase);
		}
	}

	/**
	 * Writes the PLog entry; acknowledges only if the lease was still valid once the write was
	 * confirmed (so the next holder's actualization, which starts after this lease's end, sees it),
	 * then applies the effects and flushes.
	 */
	async #commit(
		writer: EventWriter,
		encoded: EncodedEvent,
		answer: CommandResult,
	): Promise<CommandResult> {
		let applied: boolean;
		try {
			applied = await writer.writePLog(encoded);
		} catch (error) {
			if (isFenced(error)) this.#depose(error);
			// May land later: its offset is settled before anything reuses it.
			else if (!CpError.is(error) || error.committed !== "no") this.#unknownPLog.push(encoded);
			throw error;
		}
		if (!this.#mayWrite()) throw leaseEnded(this.partitionId, "unknown");
		// Only on "ordered" fencing at level 2: no await (a microtask turn) on the others' hot path.
		if (this.#fenceCheck !== undefined) await this.#confirmFence(this.#fenceCheck);
		let conflict: Awaited<ReturnType<EventWriter["apply"]>>;
		try {
			conflict = applied ? undefined : await writer.apply(encoded, false);
		} catch (error) {
			// The event is durable and committed, its effects are not (all) written: until they are,
			// reads re-apply it first (#settle), and the sequencer is NOT flushed. A flush would store
			// a next PLog offset above an event whose effects are missing, and the next actualization
			// (ours, or a newer holder's) would start past it and never apply it (README, "Fenced
			// writes", the stored offset's invariant).
			this.#pending = encoded;
			if (!isFenced(error)) throw withPhase(error, "apply");
			// A newer holder refused an effect: it has the event (its actualization started after
			// our PLog write landed) and applies it before serving anything. The transaction stays
			// open until close() cleans the sequencer up: nothing of it is ever written.
			this.#depose(error);
			return answer;
		}
		if (conflict !== undefined) throw conflict.error(conflict.markError);
		// Every event up to this one is applied: only now may the stored offset pass it. Not once
		// the lease has ended, though: then a newer holder may exist, and on an "ordered" driver
		// our effect writes may have landed below its writes of the same keys without an error
		// (shadowed, not applied); a flush past the event would let a holder after it skip the
		// event if the newer one dies before applying it (simulator seed 5696). Unflushed, the
		// transaction is dropped when the partition closes; the next holder applies the event.
		this.#appliedThrough = encoded.event.o;
		if (this.#mayWrite()) this.sequencer.flush();
		return answer;
	}

	/**
	 * The rest of a pipelined command once its PLog write was issued: waits for the previous
	 * command to answer (effects and answers in PLog order), then for its own write; acknowledges
	 * only within the lease. Its batch carried its effects (conditional batches); if a condition
	 * failed, the single writes applied them, unless an earlier command failed: then the event is
	 * left to the re-actualization and the answer is "unknown". Any failure breaks the pipeline:
	 * the next command re-actualizes the sequencer once every write in flight has answered.
	 */
	async #finish(
		writer: EventWriter,
		entry: InFlight,
		prev: InFlight | undefined,
		write: Promise<boolean>,
		answer: CommandResult,
	): Promise<CommandResult> {
		if (prev !== undefined) await prev.settled;
		try {
			// No earlier command of the pipeline failed: every event below this one is in the PLog.
			const first = !this.#broken;
			let applied: boolean;
			try {
				applied = await write;
			} catch (error) {
				if (isFenced(error)) this.#depose(error);
				// Nothing of it was written, and no later batch (each requires its predecessor's
				// bytes) can land: the run of events that may land late ends here.
				else if (CpError.is(error) && error.committed === "no") this.#unknownCut = true;
				// May land late, also after the rewrite of an earlier one: settled before reuse.
				else if (!this.#unknownCut) this.#unknownPLog.push(entry.encoded);
				throw error;
			}
			if (!this.#mayWrite()) throw leaseEnded(this.partitionId, "unknown");
			if (this.#fenceCheck !== undefined) await this.#confirmFence(this.#fenceCheck);
			if (!applied) {
				if (!first)
					throw new CpError(
						"CP_STORAGE",
						`the event is in the PLog (offset ${entry.encoded.event.o}) but an earlier command of the partition failed; the re-actualization applies it or marks it: read the WLog, or retry with the same idempotency key`,
						{ committed: "unknown" },
					);
				let conflict: Awaited<ReturnType<EventWriter["apply"]>>;
				try {
					conflict = await writer.apply(entry.encoded, false);
				} catch (error) {
					// As #commit: reads re-apply it first, the stored offset does not pass it.
					this.#pending = entry.encoded;
					if (!isFenced(error)) throw withPhase(error, "apply");
					this.#depose(error);
					return answer;
				}
				if (conflict !== undefined) throw conflict.error(conflict.markError);
			}
			if (!this.#broken && entry.encoded.event.o > this.#appliedThrough)
				this.#appliedThrough = entry.encoded.event.o;
			return answer;
		} catch (error) {
			this.#broken = true;
			if (!this.#mayWrite()) void this.close();
			throw this.#classify(error, "plog");
		} finally {
			const i = this.#inflight.indexOf(entry);
			if (i >= 0) this.#inflight.splice(i, 1);
			if (this.#committing === entry.settled && this.#inflight.length === 0)
				this.#committing = undefined;
			this.#wakeGate();
			// The pipeline broke and drained: re-actualize now, as a failed command does at depth 1
			// (unless a command in its transaction does it: it finds the pipeline broken before its
			// write, and its failure actualizes).
			if (
				this.#broken &&
				this.#inflight.length === 0 &&
				!this.#closed &&
				!this.sequencer.stats().transactionInProgress
			) {
				try {
					this.#reactualize(entry.wsKind, entry.encoded.event.ws);
				} catch {
					// A full flush backlog or a closed partition: the next command tries again.
				}
			}
		}
	}

	/**
	 * Level 2 over "ordered" fencing, once the event's PLog write is confirmed: the fence is still
	 * ours, else the event's fate is the newer holder's (applied if it landed before that holder's
	 * actualization read the PLog, replaced otherwise): deposed, committed unknown.
	 */
	async #confirmFence(check: () => Promise<void>): Promise<void> {
		try {
			await check();
		} catch (error) {
			// The event is in the PLog: our re-actualization applies it (still ours, the check
			// failed on its own), or the newer holder's may (deposed).
			if (isFenced(error)) this.#depose(error);
			throw new CpError(
				"CP_CLOSED",
				isFenced(error)
					? `partition ${this.partitionId} was taken over by a newer holder while its PLog write was in flight; the event may or may not be applied (retry with the same idempotency key, or read the WLog)`
					: `the fence of partition ${this.partitionId} could not be confirmed after its PLog write; the event may or may not be applied (retry with the same idempotency key, or read the WLog)`,
				{ cause: error, committed: "unknown" },
			);
		}
	}

	/** Resolves once no pipelined command is in flight. */
	async #drain(): Promise<void> {
		for (let last = this.#inflight.at(-1); last !== undefined; last = this.#inflight.at(-1))
			await last.settled;
	}

	/**
	 * After a pipelined command failed (and nothing is in flight): re-actualizes the sequencer, as
	 * a failed command does at depth 1. It needs a transaction to drop: one is started and
	 * actualized at once (nothing is numbered). `CP_BUSY` when the flush backlog refuses it.
	 */
	#reactualize(wsKind: number, wsid: number): void {
		if (!this.#broken || this.sequencer.stats().actualizing) return;
		if (!this.#mayWrite()) {
			void this.close();
			throw this.#deposed ?? leaseEnded(this.partitionId, "no");
		}
		if (this.sequencer.start(wsKind, wsid) === undefined) {
			if (this.sequencer.stats().actualizing) return;
			throw this.#busy("the sequencer's flush backlog is full");
		}
		this.sequencer.actualize();
	}

	/**
	 * Rule 5 of "Fenced writes" for pipelined commands: the sequencer's write of its numbers and
	 * next PLog offset `offset` goes to storage only once every event below `offset` is applied
	 * (`true`), and never once the partition may not write or after a failure of the pipeline that
	 * left an event below `offset` unapplied (`false`: the write is dropped, the sequencer
	 * re-actualizes from the stored offset before it numbers anything again).
	 */
	async #flushGate(offset: number): Promise<boolean> {
		for (;;) {
			if (this.#closed || !this.#mayWrite()) return false;
			if (this.#appliedThrough >= offset - 1) return true;
			if (this.#broken && this.#inflight.length === 0) return false;
			await new Promise<void>((resolve) => {
				const wake = (): void => {
					this.#gateWaiters.delete(wake);
					resolve();
				};
				this.#gateWaiters.add(wake);
			});
		}
	}

	#wakeGate(): void {
		if (this.#gateWaiters.size === 0) return;
		for (const wake of [...this.#gateWaiters]) wake();
	}

	#sizeParts(plan: Plan, creates: readonly PlannedCreate[], updates: readonly ResolvedUpdate[]) {
		return {
			partitionId: this.partitionId,
			wsid: plan.wsid,
			command: plan.command.name,
			args: plan.args,
			creates,
			updates,
		};
	}

	#commandContext(plan: Plan, appSeqs: Array<readonly [number, number]>): CommandContext {
		const { app } = this.#ctx;
		return {
			wsid: plan.wsid,
			args: plan.args ?? {},
			next: async (name: string): Promise<number> => {
				const seq = app.sequences.get(name);
				if (seq === undefined)
					throw new CpError("CP_INTERNAL", `${plan.command.name}: no application sequence ${name}`);
				const n = await this.sequencer.next(seq.id);
				appSeqs.push([seq.id, n]);
				return n;
			},
		};
	}

	async #nextId(table: CompiledTable): Promise<number> {
		const id = await this.sequencer.next(table.idSeq);
		// 5 billion OWRecord IDs per workspace, then they would run into the CRecord range.
		if (table.idSeq === SEQ_OWRECORD_ID && id >= FIRST_CRECORD_ID)
			throw new CpError("CP_INTERNAL", `the OWRecord IDs of the workspace are exhausted (${id})`);
		return id;
	}

	async #resolveUpdates(
		wsid: number,
		updates: readonly PlannedUpdate[],
	): Promise<ResolvedUpdate[]> {
		if (updates.length === 0) return [];
		const { app, appId, storage } = this.#ctx;
		let values: Array<Uint8Array | undefined>;
		try {
			values = await Promise.all(
				updates.map((u) => {
					const k = cpKeys.record(appId, wsid, u.id);
					return storage.get(k.pKey, k.cCols);
				}),
			);
		} catch (error) {
			throw storageFailure(error, "no", "reading the records to update");
		}
		return updates.map((u, i) => {
			const idPath = u.path === "fields" ? "id" : `${u.path.slice(0, -".fields".length)}.sys.ID`;
			const bytes = values[i];
			const stored = bytes === undefined ? undefined : decodeRecordValue(bytes);
			if (bytes !== undefined && stored === undefined)
				throw new CpError(
					"CP_INTERNAL",
					`${idPath}: record ${u.id} holds a value that is not a record`,
					{
						field: idPath,
					},
				);
			if (
				bytes === undefined ||
				stored === undefined ||
				stored.d !== undefined ||
				(u.table !== undefined && u.table.name !== stored.q)
			)
				throw new CpError(
					"CP_NOT_FOUND",
					`${idPath}: no record ${u.id}${u.table === undefined ? "" : ` of ${u.table.name}`} in workspace ${wsid}`,
					{ field: idPath },
				);
			const table = app.table(stored.q);
			if (table === undefined)
				throw new CpError(
					"CP_INTERNAL",
					`${idPath}: record ${u.id} has an unknown table ${stored.q}`,
				);
			return {
				id: u.id,
				table,
				fields: applyPatch(table, stored.f, u.patch, u.path),
				createdBy: stored.c,
				path: u.path,
				stored: bytes,
			};
		});
	}

	#classify(error: unknown, phase: Phase): CpError {
		const at = phaseOf(error) ?? phase;
		const cause = unwrapPhase(error);
		if (CpError.is(cause)) return cause;
		const committed: CpCommitted = at === "prepare" ? "no" : at === "plog" ? "unknown" : "yes";
		if (sequencerEnded(cause))
			return new CpError("CP_CLOSED", "the partition was closed during the command", {
				cause,
				committed,
			});
		if (isFenced(cause))
			// An epoch-fencing storage refused the write: nothing of it was written.
			return new CpError(
				"CP_CLOSED",
				`partition ${this.partitionId} was taken over by a newer holder; nothing was written`,
				{ cause, committed: at === "apply" ? "yes" : "no" },
			);
		if (TTLStorageError.is(cause))
			return storageFailure(
				cause,
				committed,
				at === "apply" ? "applying the event" : "the command",
			);
		this.#ctx.log.error(
			{ event: "command-error", partitionId: this.partitionId, err: cause },
			`command failed: ${cause instanceof Error ? cause.message : String(cause)}`,
		);
		return new CpError(
			"CP_INTERNAL",
			`the command failed: ${cause instanceof Error ? cause.message : String(cause)}`,
			{
				cause,
				committed,
			},
		);
	}

	// ------------------------------------------------------------------ reads

	async readRecord(request: ReadRecordRequest): Promise<RecordData> {
		const { wsid, id, table } = request ?? ({} as ReadRecordRequest);
		this.#checkWsid(wsid);
		if (typeof id !== "number" || !Number.isSafeInteger(id) || id <= MAX_RAW_ID)
			throw badRequest("id", `must be a real record ID (> ${MAX_RAW_ID})`);
		if (table !== undefined && this.#ctx.app.table(table) === undefined)
			throw new CpError("CP_NOT_FOUND", `table: no table ${table}`, { field: "table" });
		const settling = this.#settle();
		if (settling !== undefined) await settling;
		this.#checkServes();
		const k = cpKeys.record(this.#ctx.appId, wsid, id);
		let bytes: Uint8Array | undefined;
		try {
			bytes = await this.#ctx.storage.get(k.pKey, k.cCols);
		} catch (error) {
			throw storageFailure(error, "no", "reading the record");
		}
		// Valid before and after the read: no newer holder was granted while it ran (a slow read
		// can reach storage after the lease ended, while a new holder's recovery rewinds records).
		this.#checkServes();
		const stored = bytes === undefined ? undefined : decodeRecordValue(bytes);
		if (bytes !== undefined && stored === undefined)
			throw new CpError("CP_INTERNAL", `id: record ${id} holds a value that is not a record`, {
				field: "id",
			});
		if (
			stored === undefined ||
			stored.d !== undefined ||
			(table !== undefined && stored.q !== table)
		)
			throw new CpError(
				"CP_NOT_FOUND",
				`id: no record ${id}${table === undefined ? "" : ` of ${table}`} in workspace ${wsid}`,
				{
					field: "id",
				},
			);
		return { "sys.ID": id, "sys.QName": stored.q, ...stored.f };
	}

	async readWLog(request: ReadWLogRequest): Promise<LogEntry[]> {
		const { wsid } = request ?? ({} as ReadWLogRequest);
		this.#checkWsid(wsid);
		const { from, limit } = checkRange(request);
		const settling = this.#settle();
		if (settling !== undefined) await settling;
		this.#checkServes();
		const appId = this.#ctx.appId;
		const entries = await this.#readLog(
			(bucket) => wlogPKey(appId, wsid, bucket),
			from,
			limit,
			(_o, bytes) => decodeLogValue(bytes),
		);
		this.#checkServes(); // as in readRecord: the lease held for the whole read
		return entries;
	}

	async readPLog(request: ReadPLogRequest = {}): Promise<LogEntry[]> {
		const { from, limit } = checkRange(request);
		const { appId } = this.#ctx;
		return this.#readLog(
			(bucket) => plogPKey(appId, this.partitionId, bucket),
			from,
			limit,
			(offset, bytes) => decodePLogEntry(this.partitionId, offset, bytes),
		);
	}

	async #readLog(
		pKeyOf: (bucket: number) => Uint8Array,
		from: number,
		limit: number,
		decode: (offset: number, bytes: Uint8Array) => DecodedLogValue | undefined,
	): Promise<LogEntry[]> {
		const out: LogEntry[] = [];
		try {
			for await (const { offset, value } of iterateLog(this.#ctx.storage, pKeyOf, from)) {
				const d = decode(offset, value);
				out.push(d === undefined ? { offset } : { offset, event: toLogEvent(d) });
				if (out.length >= limit) break;
			}
		} catch (error) {
			throw storageFailure(error, "no", "reading the log");
		}
		return out;
	}

	#checkWsid(wsid: unknown): asserts wsid is number {
		if (!isWsid(wsid)) throw badRequest("wsid", "must be a safe integer >= 1");
		this.#checkPartition(wsid);
	}

	// ------------------------------------------------------------------ lifecycle

	stats(): PartitionStats {
		const s = this.sequencer.stats();
		return {
			partitionId: this.partitionId,
			...this.#counters,
			queued: this.#queue.length,
			queueWaitMs: Math.round(this.#queue.waitEstimateMs()),
			serviceMs: this.#queue.serviceMs,
			actualizing: s.actualizing,
			nextPLogOffset: s.nextPLogOffset,
			unflushedValues: s.unflushedValues,
			epoch: this.#epoch?.toString(),
			deposed: this.#deposed !== undefined,
		};
	}

	/**
	 * Undeploys: commands not yet at their PLog write fail with `CP_CLOSED` (nothing written); the
	 * one writing its event finishes (its answer tells what was written), then the sequencer is
	 * cleaned up. Idempotent.
	 */
	close(): Promise<void> {
		if (this.#closePromise !== undefined) return this.#closePromise;
		this.#closed = true;
		// The promise first: a listener of `closed` runs inside the abort below and may close
		// again (an undeploy); it must get this one close, not start a second.
		this.#closePromise = (async () => {
			await this.#committing?.catch(noop);
			// Cleanup then: a command waiting on the sequencer (a storage read) is cut short.
			await this.#handle.cleanup();
			await this.#queue.idle();
			this.#ctx.onClosed(this.partitionId);
		})();
		this.#closing.abort(
			this.#deposed ??
				(this.#lease?.valid() === false ? leaseOver(this.partitionId) : closedError()),
		);
		this.#wakeGate();
		return this.#closePromise;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

function closedError(): CpError {
	return new CpError("CP_CLOSED", "the partition is closed (undeployed)");
}

/**
 * An unexpected error while a command was prepared (planned, checked, fingerprinted): nothing was
 * written, so the answer says so. A request nested too deeply for the stack is a bad request (a
 * client's, found by review: it was a 500 "unknown" that a retry with the key met again forever).
 */
function unprepared(error: unknown): CpError {
	if (error instanceof RangeError && /call stack/i.test(error.message))
		return new CpError("CP_BAD_REQUEST", "request: nested too deeply; nothing was written", {
			field: "request",
			cause: error,
		});
	const message = error instanceof Error ? error.message : String(error);
	return new CpError(
		"CP_INTERNAL",
		`the command could not be prepared (${message}); nothing was written`,
		{ cause: error },
	);
}

/** Why a partition whose lease is over closed (the `closed` signal's reason). */
function leaseOver(partitionId: number): CpError {
	return new CpError("CP_CLOSED", `partition ${partitionId} closed: its lease is over`);
}

function leaseEnded(partitionId: number, committed: CpCommitted): CpError {
	return new CpError(
		"CP_CLOSED",
		committed === "no"
			? `the lease of partition ${partitionId} ended before the command was written; nothing was written`
			: `the lease of partition ${partitionId} ended before its PLog write was confirmed; the event may or may not be applied (retry with the same idempotency key, or read the WLog)`,
		{ committed },
	);
}

/** An error thrown past a phase boundary, tagged with the phase it happened in. */
class PhaseError {
	readonly error: unknown;
	readonly phase: Phase;
	constructor(error: unknown, phase: Phase) {
		this.error = error;
		this.phase = phase;
	}
}

function withPhase(error: unknown, phase: Phase): PhaseError {
	return new PhaseError(error, phase);
}

function phaseOf(error: unknown): Phase | undefined {
	return error instanceof PhaseError ? error.phase : undefined;
}

function unwrapPhase(error: unknown): unknown {
	return error instanceof PhaseError ? error.error : error;
}

function asPlanned(u: ResolvedUpdate): PlannedUpdate {
	return { id: u.id, table: u.table, patch: u.fields, path: u.path };
}

function checkRange(request: { from?: number; limit?: number }): { from: number; limit: number } {
	const from = request.from ?? 1;
	const limit = request.limit ?? 100;
	if (!Number.isSafeInteger(from) || from < 1) throw badRequest("from", "must be an offset >= 1");
	if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_READ_LIMIT)
		throw badRequest("limit", `must be an integer in 1..${MAX_READ_LIMIT}`);
	return { from, limit };
}

/**
 * The sequencer ended: cleaned up by `close()`, or stopped on its own by a write a newer fence
 * refused (which deposes the partition: its `onStorageError` saw the same error first).
 */
function sequencerEnded(error: unknown): boolean {
	return (
		SequencerError.is(error) &&
		(error.code === "SEQUENCER_CLEANED_UP" || error.code === "SEQUENCER_STOPPED")
	);
}

/**
 * `run` shared by its callers, each served by a run that started after it called: a caller that
 * comes while one runs waits for the next (which starts when the running one ends), shared with
 * everyone who comes meanwhile.
 */
function coalesced(run: () => Promise<void>): () => Promise<void> {
	let running: Promise<void> | undefined;
	let next: Promise<void> | undefined;
	const start = (): Promise<void> => {
		const p = run().finally(() => {
			if (running === p) running = undefined;
		});
		running = p;
		return p;
	};
	return () => {
		if (next !== undefined) return next;
		if (running === undefined) return start();
		const queued = running.then(noop, noop).then(() => {
			if (next === queued) next = undefined;
			return start();
		});
		next = queued;
		return queued;
	};
}
