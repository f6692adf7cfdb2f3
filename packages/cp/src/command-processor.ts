import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { RetryOptions, SeqStorage, SequencerParams } from "@vvm/isequencer";
import { createSequencer } from "@vvm/isequencer";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { App } from "./app-def.ts";
import type { AppPartition, DeployOptions, SequencerFactory } from "./app-partition.ts";
import { AppPartitionImpl } from "./app-partition.ts";
import { demoApp } from "./demo-app.ts";
import type { SequencesTrustLevel } from "./event-writer.ts";
import { partitionOf } from "./partition.ts";
import { checkCpAdmission, checkCpSettings } from "./settings.ts";
import type { PartitionStats } from "./stats.ts";
import { CoalescingStorage } from "./write-coalescer.ts";

/**
 * Options of {@link createCommandProcessor}.
 *
 * @example
 * ```ts
 * const options: CommandProcessorOptions = { storage, appId: 1, partitions: 10, trustLevel: 0 };
 * ```
 */
export interface CommandProcessorOptions {
	/** Any TTL storage driver (mem, level, cas, dyn); the caller owns it (closes it). */
	readonly storage: TTLStorage;
	/** The application; default {@link demoApp}. */
	readonly app?: App;
	/** Cluster application ID, `0..2^32-1`: every key is scoped by it. */
	readonly appId: number;
	/** The application's partition count (`1..65536`); `partition = wsid mod partitions`. Fixed for the app's lifetime. */
	readonly partitions: number;
	/** SequencesTrustLevel (`VVMConfig.SequencesTrustLevel`); default 0. */
	readonly trustLevel?: SequencesTrustLevel;
	/** Wall clock for event timestamps and the sequencer's timers; default the system clock. */
	readonly clock?: Clock;
	/** Sequencer parameters (`seqTypes` come from the app). */
	readonly sequencer?: Omit<SequencerParams, "seqTypes">;
	/** Backoff of the sequencer's storage retries (default 500/500 ms, as voedger). */
	readonly sequencerRetry?: RetryOptions;
	/** Called on each failed (and retried) storage call of a sequencer, for metrics. */
	readonly onSequencerStorageError?: (error: unknown, operation: string, attempt: number) => void;
	/** The `retryAfterMs` of `CP_BUSY`; default 1000. */
	readonly retryAfterMs?: number;
	/**
	 * How long a record or WLog read waits for a partition that has not yet caught up with its
	 * PLog (its first actualization, which applies what an earlier holder committed) before it
	 * answers `CP_BUSY`; `0`: at once. A read never answers from storage before then, so a read after
	 * `committed: "yes"` sees the command. Default 1000; `0..2^31-1`.
	 */
	readonly readWaitMs?: number;
	/** Commands queued per partition before `CP_BUSY`; default 1000. */
	readonly maxQueuedCommands?: number;
	/**
	 * Admission by time: a command whose estimated wait in its partition's queue (the commands
	 * ahead of it times the measured service time per command) exceeds this is answered `CP_BUSY`
	 * at once (committed "no", `retryAfterMs` the backlog's drain time) instead of queueing.
	 * Bursts are absorbed up to this bound. Default 5000 (a partition with 16 clients' commands
	 * in flight on a loaded machine stays well within it); `>= 1`.
	 */
	readonly maxQueueWaitMs?: number;
	/**
	 * The wait of a standing queue: once the estimated wait has stayed above this for 100 ms (a
	 * queue that does not drain, not a burst), a command is admitted only while its estimated wait
	 * is within it (or no other command is waiting), until the estimate has stayed within it for
	 * 100 ms: under sustained overload accepted commands wait about this long and the excess is
	 * shed. Default 500 (`DEFAULT_QUEUE_WAIT_TARGET_MS`), or `maxQueueWaitMs` when that is lower:
	 * a steady load of 16 writers on one partition is shed only once a command takes over 33 ms;
	 * `0..maxQueueWaitMs` (`maxQueueWaitMs` turns it off).
	 */
	readonly queueWaitTargetMs?: number;
	/**
	 * Group commit: unconditional writes (level 2 events, level 1/2 records, updates, the
	 * sequencer's flushes) of all partitions that arrive while one batch is at the storage go out as
	 * the next batch. Default `true`, except over a storage that does it itself
	 * (`supports.groupCommit`, e.g. `@vvm/ttlstorage-level`).
	 */
	readonly coalesceWrites?: boolean;
	/** With group commit: batches at the storage at once (later ones queue and merge). Default 2. */
	readonly writeBatchesInFlight?: number;
	/**
	 * The storage applies each `putBatch` all or nothing (true of `@vvm/ttlstorage-level`, one
	 * LevelDB write batch; not of Cassandra, whose batches are split by size, nor of DynamoDB's
	 * BatchWriteItem). At level 2 a command then writes its PLog entry and its effects in one batch
	 * (one storage round trip instead of two). Default: the storage's `supports.atomicBatches`.
	 * Refused (TypeError) over a storage with `"ordered"` fencing, whose fenced batches are not.
	 */
	readonly atomicBatches?: boolean;
	/**
	 * Levels 0 and 1: a command writes its PLog entry and all its effects with one all-or-nothing
	 * `putBatchIf` (each key in the level's mode: inserts, swaps from the values read, puts), one
	 * storage round trip instead of two or more; when a condition fails nothing is written and the
	 * single conditional writes take over (and find the conflict). Default: whether the storage has
	 * `putBatchIf` (`@vvm/ttlstorage-level`, `@vvm/ttlstorage-mem`). Refused (TypeError) when it
	 * has not.
	 */
	readonly conditionalBatches?: boolean;
	/**
	 * Commands of one partition in flight at once, `1..32`; default 1 (one at a time, as always).
	 * Above 1, over `conditionalBatches` (a storage with `putBatchIf`, any level; elsewhere it has no
	 * effect), a command that only creates records (`createRecord`, `sys.CUD` without updates) is
	 * admitted once the previous command has taken its numbers and issued its PLog write, so the
	 * storage's group commit can carry several commands of a partition in one batch. Effects land
	 * and answers are given in PLog order; updates and application commands wait until no command
	 * is in flight. See the README, "Pipelined numbering".
	 */
	readonly pipelineDepth?: number;
	/**
	 * How long an idempotency key (`idempotencyKey` of a command) is kept, in seconds: a retry
	 * within it answers the first execution's result. Default 86 400 (24 h); `1..31 536 000`.
	 */
	readonly idempotencyTtlSeconds?: number;
	/**
	 * **Unsafe, for tests and benchmarks only**: write without fences even where the storage
	 * supports them, and acknowledge without checking the lease (a deposed holder's late writes
	 * then land): the build the fenced-writes checker must catch. Default `false`.
	 * @internal
	 */
	readonly unsafeUnfenced?: boolean;
	/**
	 * Any pino-compatible logger (`@vvm/log`): corrupted offsets (warn), conflicts found by
	 * recovery and application commands that threw (error), and the sequencers' storage retries
	 * (warn). Default: nothing is logged.
	 */
	readonly logger?: Logger;
	/**
	 * Builds each partition's sequencer; default `createSequencer` of `@vvm/isequencer`. For
	 * instrumentation in tests.
	 * @internal
	 */
	readonly createSequencer?: SequencerFactory;
}

/**
 * Counters of all deployed partitions, summed, and per partition.
 *
 * @example
 * ```ts
 * const { totals, partitions } = cp.stats();
 * ```
 */
export interface CommandProcessorStats {
	readonly totals: Omit<
		PartitionStats,
		| "partitionId"
		| "actualizing"
		| "nextPLogOffset"
		| "epoch"
		| "deposed"
		| "queueWaitMs"
		| "serviceMs"
	> & {
		readonly actualizing: number;
	};
	readonly partitions: readonly PartitionStats[];
}

/**
 * The command processor of one application: deploys its partitions (one sequencer each) over a
 * TTL storage driver.
 *
 * @example
 * ```ts
 * const cp = createCommandProcessor({ storage, appId: 1, partitions: 10 });
 * const p = cp.deploy(cp.partitionOf(1001));
 * await p.ready();
 * ```
 */
export interface CommandProcessor extends AsyncDisposable {
	readonly app: App;
	readonly appId: number;
	readonly partitions: number;
	readonly trustLevel: SequencesTrustLevel;
	/** `wsid mod partitions`. */
	partitionOf(wsid: number): number;
	/**
	 * Deploys a partition: raises its fence to the lease's epoch (or the next one), then creates
	 * its sequencer, which actualizes from the durable PLog (recovery re-applies the events whose
	 * effects may be missing). Throws a RangeError if it is deployed; a TypeError when a `lease` is
	 * given over a storage that cannot fence writes.
	 */
	deploy(partitionId: number, options?: DeployOptions): AppPartition;
	/** The deployed partition, or `undefined`. */
	partition(partitionId: number): AppPartition | undefined;
	/** Closes a deployed partition (no-op when it is not deployed). */
	undeploy(partitionId: number): Promise<void>;
	stats(): CommandProcessorStats;
	/** Undeploys every partition and waits for queued writes. The storage stays open. */
	close(): Promise<void>;
}

class CommandProcessorImpl implements CommandProcessor {
	readonly app: App;
	readonly appId: number;
	readonly partitions: number;
	readonly trustLevel: SequencesTrustLevel;
	readonly #deployed = new Map<number, AppPartitionImpl>();
	readonly #options: CommandProcessorOptions;
	readonly #coalescer: CoalescingStorage | undefined;
	readonly #fencing: boolean;
	/** Fenced, and the storage orders fenced writes per record (`supports.fencing: "ordered"`). */
	readonly #orderedFencing: boolean;
	readonly #idempotencyTtl: number;
	readonly #maxQueueWaitMs: number;
	readonly #queueWaitTargetMs: number;
	readonly #readWaitMs: number;
	readonly #pipelineDepth: number;
	#closed = false;

	constructor(options: CommandProcessorOptions) {
		if (typeof options !== "object" || options === null)
			throw new TypeError("[@vvm/cp] options are required");
		if (typeof options.storage?.insertIfNotExists !== "function")
			throw new TypeError("[@vvm/cp] options.storage must be a TTLStorage");
		if (!Number.isInteger(options.appId) || options.appId < 0 || options.appId > 0xffff_ffff)
			throw new RangeError(
				`[@vvm/cp] appId must be an integer in 0..2^32-1, got ${String(options.appId)}`,
			);
		const settings = checkCpSettings(options);
		const admission = checkCpAdmission(options);
		for (const [name, v, min] of [
			["retryAfterMs", options.retryAfterMs, 0],
			["maxQueuedCommands", options.maxQueuedCommands, 1],
			["writeBatchesInFlight", options.writeBatchesInFlight, 1],
		] as const)
			if (v !== undefined && (!Number.isSafeInteger(v) || v < min))
				throw new RangeError(`[@vvm/cp] ${name} must be an integer >= ${min}, got ${v}`);
		this.#maxQueueWaitMs = admission.maxQueueWaitMs;
		this.#queueWaitTargetMs = admission.queueWaitTargetMs;
		this.#readWaitMs = admission.readWaitMs;
		this.#idempotencyTtl = settings.idempotencyTtlSeconds;
		this.#pipelineDepth = settings.pipelineDepth;
		this.#fencing =
			options.unsafeUnfenced !== true &&
			options.storage.supports?.fencing !== undefined &&
			typeof options.storage.raiseFence === "function";
		this.#orderedFencing = this.#fencing && options.storage.supports?.fencing === "ordered";
		// A batch that drops its superseded items and writes the rest is not all or nothing: a
		// deposed holder's level 2 batch would leave the effects of an event nobody sees.
		if (options.atomicBatches === true && this.#orderedFencing)
			throw new TypeError(
				'[@vvm/cp] atomicBatches: a storage with "ordered" fencing writes a fenced batch item by item (a superseded item is dropped, the rest lands), so its batches are not all or nothing',
			);
		if (options.conditionalBatches === true && typeof options.storage.putBatchIf !== "function")
			throw new TypeError("[@vvm/cp] conditionalBatches: the storage has no putBatchIf");
		this.#options = options;
		this.app = options.app ?? demoApp;
		this.appId = options.appId;
		this.partitions = options.partitions;
		this.trustLevel = settings.trustLevel;
		this.#coalescer =
			(options.coalesceWrites ?? options.storage.supports?.groupCommit !== true) === false
				? undefined
				: new CoalescingStorage(options.storage, {
						...(options.writeBatchesInFlight === undefined
							? {}
							: { maxInFlight: options.writeBatchesInFlight }),
					});
	}

	partitionOf(wsid: number): number {
		return partitionOf(wsid, this.partitions);
	}

	deploy(partitionId: number, deployOptions: DeployOptions = {}): AppPartition {
		if (this.#closed) throw new RangeError("[@vvm/cp] the command processor is closed");
		if (!Number.isInteger(partitionId) || partitionId < 0 || partitionId >= this.partitions)
			throw new RangeError(
				`[@vvm/cp] partitionId must be an integer in 0..${this.partitions - 1}, got ${partitionId}`,
			);
		if (this.#deployed.has(partitionId))
			throw new RangeError(`[@vvm/cp] partition ${partitionId} is already deployed`);
		const lease = deployOptions.lease;
		if (lease !== undefined) {
			if (typeof lease.epoch !== "bigint" || lease.epoch < 0n || typeof lease.valid !== "function")
				throw new TypeError("[@vvm/cp] lease must be { epoch: bigint >= 0n, valid(): boolean }");
			if (!this.#fencing && this.#options.unsafeUnfenced !== true)
				throw new TypeError(
					"[@vvm/cp] a lease needs a storage that fences writes (supports.fencing and raiseFence): without it a deposed holder's late writes would land",
				);
		}
		const o = this.#options;
		const seqTypes = this.app.seqTypes;
		const factory = o.createSequencer ?? createSequencer;
		const partition = new AppPartitionImpl(
			{
				app: this.app,
				appId: this.appId,
				partitions: this.partitions,
				storage: o.storage,
				writes: this.#coalescer ?? o.storage,
				trustLevel: this.trustLevel,
				atomicBatches: o.atomicBatches ?? o.storage.supports?.atomicBatches === true,
				conditionalBatches: o.conditionalBatches ?? typeof o.storage.putBatchIf === "function",
				pipelineDepth: this.#pipelineDepth,
				fencing: this.#fencing,
				orderedFencing: this.#orderedFencing,
				unsafeUnfenced: o.unsafeUnfenced === true,
				idempotencyTtlSeconds: this.#idempotencyTtl,
				clock: o.clock ?? systemClock,
				retryAfterMs: o.retryAfterMs ?? 1000,
				readWaitMs: this.#readWaitMs,
				maxQueued: o.maxQueuedCommands ?? 1000,
				maxQueueWaitMs: this.#maxQueueWaitMs,
				queueWaitTargetMs: this.#queueWaitTargetMs,
				log: libraryLogger(o.logger, { pkg: "@vvm/cp" }),
				newSequencer: (storage: SeqStorage, count: (error: unknown) => void) =>
					factory({ ...o.sequencer, seqTypes }, storage, {
						...(o.clock === undefined ? {} : { clock: o.clock }),
						...(o.sequencerRetry === undefined ? {} : { retry: o.sequencerRetry }),
						...(o.logger === undefined ? {} : { logger: o.logger }),
						onStorageError: (error, operation, attempt) => {
							count(error);
							o.onSequencerStorageError?.(error, operation, attempt);
						},
					}),
				onClosed: (id) => {
					if (this.#deployed.get(id) === partition) this.#deployed.delete(id);
				},
			},
			partitionId,
			lease,
		);
		this.#deployed.set(partitionId, partition);
		return partition;
	}

	partition(partitionId: number): AppPartition | undefined {
		return this.#deployed.get(partitionId);
	}

	async undeploy(partitionId: number): Promise<void> {
		await this.#deployed.get(partitionId)?.close();
	}

	stats(): CommandProcessorStats {
		const partitions = [...this.#deployed.values()].map((p) => p.stats());
		const sum = (f: (s: PartitionStats) => number): number =>
			partitions.reduce((a, s) => a + f(s), 0);
		return {
			totals: {
				commands: sum((s) => s.commands),
				replayed: sum((s) => s.replayed),
				failed: sum((s) => s.failed),
				rejected: sum((s) => s.rejected),
				conflicts: sum((s) => s.conflicts),
				busy: sum((s) => s.busy),
				shed: sum((s) => s.shed),
				storageErrors: sum((s) => s.storageErrors),
				corruptedOffsets: sum((s) => s.corruptedOffsets),
				actualizations: sum((s) => s.actualizations),
				actualizedEvents: sum((s) => s.actualizedEvents),
				reappliedEvents: sum((s) => s.reappliedEvents),
				sequencerStorageErrors: sum((s) => s.sequencerStorageErrors),
				queued: sum((s) => s.queued),
				unflushedValues: sum((s) => s.unflushedValues),
				actualizing: sum((s) => (s.actualizing ? 1 : 0)),
			},
			partitions,
		};
	}

	async close(): Promise<void> {
		this.#closed = true;
		await Promise.all([...this.#deployed.values()].map((p) => p.close()));
		await this.#coalescer?.close();
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/**
 * Creates the command processor of one application over a TTL storage driver. Deploy the
 * partitions this VVM serves; each gets its sequencer (seed 004 `IAppPartition.Sequencer`).
 * Bad options throw a RangeError/TypeError.
 *
 * @example
 * ```ts
 * const cp = createCommandProcessor({ storage: createMemTTLStorage(), appId: 1, partitions: 4, trustLevel: 0 });
 * const p = cp.deploy(1);
 * await p.ready();
 * const r = await p.createRecord({ wsid: 1001, table: "app1pkg.Customer", fields: { name: "Ada" } });
 * // r = { CurrentWLogOffset: 1, NewIDs: { "1": 322685000131072 }, plogOffset: 1 }
 * await cp.close();
 * ```
 */
export function createCommandProcessor(options: CommandProcessorOptions): CommandProcessor {
	return new CommandProcessorImpl(options);
}
