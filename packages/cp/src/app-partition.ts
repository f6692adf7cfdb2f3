import type { Clock } from "@vvm/clock";
import type {
	createSequencer,
	PLogOffset,
	SeqBatcher,
	SeqStorage,
	Sequencer,
	SequencerHandle,
	SequencerStats,
} from "@vvm/isequencer";
import { SequencerError } from "@vvm/isequencer";
import type { Logger } from "@vvm/log";
import { createSeqStorage } from "@vvm/seqstorage";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { App, CommandContext, CompiledTable, FieldValue } from "./app-def.ts";
import { FIRST_CRECORD_ID, MAX_RAW_ID, SEQ_OWRECORD_ID, SEQ_WLOG_OFFSET } from "./app-def.ts";
import type { CpCommitted } from "./errors.ts";
import { badRequest, CpError } from "./errors.ts";
import type { DecodedLogValue, LogEntry } from "./event.ts";
import { decodeLogValue, decodeRecordValue, encodeJson, toLogEvent } from "./event.ts";
import type { ResolvedUpdate } from "./event-builder.ts";
import { buildEvent, checkEventSize } from "./event-builder.ts";
import type { EncodedEvent, EventWriter } from "./event-writer.ts";
import { storageFailure } from "./event-writer.ts";
import { cpKeys, plogPKey, wlogPKey } from "./keys.ts";
import { iterateLog } from "./log-iterator.ts";
import { isWsid } from "./partition.ts";
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
	readRecord(request: ReadRecordRequest): Promise<RecordData>;
	readWLog(request: ReadWLogRequest): Promise<LogEntry[]>;
	readPLog(request?: ReadPLogRequest): Promise<LogEntry[]>;
	stats(): PartitionStats;
	/** Undeploys: queued commands fail with `CP_CLOSED`, the sequencer is cleaned up. Idempotent. */
	close(): Promise<void>;
}

/** @internal What the partitions of one processor share. */
export interface PartitionContext {
	readonly app: App;
	readonly appId: number;
	readonly partitions: number;
	readonly storage: TTLStorage;
	/** Unconditional writes (possibly coalesced across partitions). */
	readonly writes: TTLStorage;
	/** The sequencer's stored numbers only grow (seqstorage `growOnly`). */
	readonly growOnlyNumbers: boolean;
	readonly writer: EventWriter;
	readonly clock: Clock;
	readonly retryAfterMs: number;
	readonly maxQueued: number;
	/** Already guarded and bound to the package (`libraryLogger`). */
	readonly log: Logger;
	readonly newSequencer: (storage: SeqStorage, onStorageError: () => void) => SequencerHandle;
	readonly onClosed: (partitionId: number) => void;
}

/** @internal */
export type SequencerFactory = typeof createSequencer;

type Phase = "prepare" | "plog" | "apply";

/** @internal The implementation of {@link AppPartition}. */
export class AppPartitionImpl implements AppPartition {
	readonly partitionId: number;
	readonly sequencer: Sequencer & { stats(): SequencerStats };
	readonly #ctx: PartitionContext;
	readonly #handle: SequencerHandle;
	readonly #queue = new SerialQueue();
	readonly #counters = new Counters();
	/** Highest PLog offset whose event this process applied (all below it too). */
	#appliedThrough = 0;
	#closed = false;
	#closing: Promise<void> | undefined;

	constructor(ctx: PartitionContext, partitionId: number) {
		this.#ctx = ctx;
		this.partitionId = partitionId;
		const reader = plogReader(
			{ storage: ctx.storage, appId: ctx.appId, partitionId },
			(offset, decoded, bytes) => this.#recover(offset, decoded, bytes),
		);
		const base = createSeqStorage({
			// Grow-only writes are conditional: they go to the storage itself, not the coalescer.
			storage: ctx.growOnlyNumbers ? ctx.storage : ctx.writes,
			appId: ctx.appId,
			partitionId,
			plog: reader,
			growOnly: ctx.growOnlyNumbers,
		});
		const seqStorage: SeqStorage = {
			readNumbers: (wsid, seqIds) => base.readNumbers(wsid, seqIds),
			readNextPLogOffset: () => base.readNextPLogOffset(),
			writeValuesAndNextPLogOffset: (batch, offset) =>
				base.writeValuesAndNextPLogOffset(batch, offset),
			actualizeSequencesFromPLog: async (
				offset: PLogOffset,
				batcher: SeqBatcher,
				signal: AbortSignal,
			) => {
				this.#counters.actualizations++;
				await base.actualizeSequencesFromPLog(offset, batcher, signal);
			},
		};
		this.#handle = ctx.newSequencer(seqStorage, () => {
			this.#counters.sequencerStorageErrors++;
		});
		this.sequencer = this.#handle.sequencer;
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
			await this.#ctx.writer.rollBack(decoded.event, bytes);
		} else {
			this.#counters.reappliedEvents++;
			const conflict = await this.#ctx.writer.apply({ event: decoded.event, bytes }, true);
			if (conflict !== undefined) {
				this.#counters.conflicts++;
				this.#ctx.log.error(
					{
						event: "conflict",
						partitionId: this.partitionId,
						plogOffset: offset,
						key: conflict.key,
					},
					`${conflict.error().message}; the event is marked corrupted`,
				);
			}
		}
		this.#appliedThrough = offset;
	}

	async ready(signal?: AbortSignal): Promise<void> {
		if (this.#closed) throw closedError();
		try {
			await this.#handle.sequencer.ready(signal);
		} catch (error) {
			throw SequencerError.is(error) && error.code === "SEQUENCER_CLEANED_UP"
				? closedError()
				: error;
		}
	}

	// ------------------------------------------------------------------ commands

	createRecord(request: CreateRecordRequest): Promise<CommandResult> {
		return this.#submit(() => planCreate(this.#ctx.app, request));
	}

	updateRecord(request: UpdateRecordRequest): Promise<CommandResult> {
		return this.#submit(() => planUpdate(this.#ctx.app, request));
	}

	executeCommand(request: ExecuteCommandRequest): Promise<CommandResult> {
		return this.#submit(() => planCommand(this.#ctx.app, request));
	}

	async #submit(plan: () => Plan): Promise<CommandResult> {
		try {
			if (this.#closed) throw closedError();
			const p = plan();
			this.#checkPartition(p.wsid);
			if (this.#queue.length >= this.#ctx.maxQueued) throw this.#busy("the command queue is full");
			if (this.sequencer.stats().actualizing) throw this.#busy("the partition is actualizing");
			const result = await this.#queue.run(() => this.#execute(p));
			this.#counters.commands++;
			return result;
		} catch (error) {
			throw this.#count(error);
		}
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
		const owner = wsid % this.#ctx.partitions;
		if (owner !== this.partitionId)
			throw new CpError(
				"CP_WRONG_PARTITION",
				`wsid ${wsid} belongs to partition ${owner}, not ${this.partitionId}`,
				{ field: "wsid" },
			);
	}

	async #execute(plan: Plan): Promise<CommandResult> {
		if (this.#closed) throw closedError();
		const { app, writer, clock } = this.#ctx;
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
		// Everything that can be refused is refused before a number is taken.
		const updates = await this.#resolveUpdates(plan.wsid, plan.updates);
		checkRawIds({ creates: plan.creates, updates: updates.map(asPlanned) });
		const execute = plan.command.execute;
		if (execute === undefined)
			checkEventSize({ ...this.#sizeParts(plan, plan.creates, updates), appSeqs: [] });
		const offset = this.sequencer.start(wsKind, plan.wsid);
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
				checkEventSize({ ...this.#sizeParts(plan, creates, allUpdates), appSeqs });
				result = out?.result;
			}
			const ids: number[] = [];
			for (const c of creates) ids.push(await this.#nextId(c.table));
			const event = buildEvent({
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
			});
			const encoded: EncodedEvent = { event, bytes: encodeJson(event) };
			phase = "plog";
			const applied = await writer.writePLog(encoded);
			phase = "apply";
			const conflict = applied ? undefined : await writer.apply(encoded, false);
			if (conflict !== undefined) throw conflict.error(conflict.markError);
			this.sequencer.flush();
			this.#appliedThrough = offset;
			const NewIDs: Record<string, number> = {};
			creates.forEach((c, i) => {
				NewIDs[String(c.rawId)] = ids[i] as number;
			});
			return {
				CurrentWLogOffset: wlogOffset,
				NewIDs,
				...(result === undefined ? {} : { Result: result }),
				plogOffset: offset,
			};
		} catch (error) {
			// Nothing or a durable event: either way the sequencer re-reads the PLog, and recovery
			// re-applies the event (if it is there) before the next command.
			if (!this.#closed) this.sequencer.actualize();
			throw this.#classify(error, phase);
		}
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
			if (stored === undefined || (u.table !== undefined && u.table.name !== stored.q))
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
			};
		});
	}

	#classify(error: unknown, phase: Phase): CpError {
		if (CpError.is(error)) return error;
		if (SequencerError.is(error) && error.code === "SEQUENCER_CLEANED_UP")
			return new CpError("CP_CLOSED", "the partition was closed during the command", {
				cause: error,
				committed: phase === "prepare" ? "no" : phase === "plog" ? "unknown" : "yes",
			});
		const committed: CpCommitted =
			phase === "prepare" ? "no" : phase === "plog" ? "unknown" : "yes";
		if (TTLStorageError.is(error))
			return storageFailure(
				error,
				committed,
				phase === "apply" ? "applying the event" : "the command",
			);
		this.#ctx.log.error(
			{ event: "command-error", partitionId: this.partitionId, err: error },
			`command failed: ${error instanceof Error ? error.message : String(error)}`,
		);
		return new CpError(
			"CP_INTERNAL",
			`the command failed: ${error instanceof Error ? error.message : String(error)}`,
			{
				cause: error,
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
		const k = cpKeys.record(this.#ctx.appId, wsid, id);
		let bytes: Uint8Array | undefined;
		try {
			bytes = await this.#ctx.storage.get(k.pKey, k.cCols);
		} catch (error) {
			throw storageFailure(error, "no", "reading the record");
		}
		const stored = bytes === undefined ? undefined : decodeRecordValue(bytes);
		if (bytes !== undefined && stored === undefined)
			throw new CpError("CP_INTERNAL", `id: record ${id} holds a value that is not a record`, {
				field: "id",
			});
		if (stored === undefined || (table !== undefined && stored.q !== table))
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
		const appId = this.#ctx.appId;
		return this.#readLog(
			(bucket) => wlogPKey(appId, wsid, bucket),
			from,
			limit,
			(_o, bytes) => decodeLogValue(bytes),
		);
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
			actualizing: s.actualizing,
			nextPLogOffset: s.nextPLogOffset,
			unflushedValues: s.unflushedValues,
		};
	}

	close(): Promise<void> {
		if (this.#closing !== undefined) return this.#closing;
		this.#closed = true;
		this.#closing = (async () => {
			// Cleanup first: a command waiting on the sequencer (a storage read) is cut short.
			await this.#handle.cleanup();
			await this.#queue.idle();
			this.#ctx.onClosed(this.partitionId);
		})();
		return this.#closing;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

function closedError(): CpError {
	return new CpError("CP_CLOSED", "the partition is closed (undeployed)");
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
