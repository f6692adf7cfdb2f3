/**
 * Counters of one partition (since it was deployed) and its sequencer's state, for metrics.
 *
 * @example
 * ```ts
 * const { commands, conflicts, busy, unflushedValues } = partition.stats();
 * ```
 */
export interface PartitionStats {
	readonly partitionId: number;
	/** Commands that succeeded (replays of an idempotency key not included). */
	readonly commands: number;
	/** Commands answered with their idempotency key's first answer (nothing written). */
	readonly replayed: number;
	/** Commands that failed, for any reason (the counters below break some of them down). */
	readonly failed: number;
	/** Rejected as bad input (`CP_BAD_REQUEST`, `CP_NOT_FOUND`, `CP_NOT_ALLOWED`, `CP_WRONG_PARTITION`). */
	readonly rejected: number;
	/** Sequences violations: commands failed with `CP_CONFLICT`, plus events marked corrupted by recovery. */
	readonly conflicts: number;
	/** Answered `CP_BUSY` ("server is busy", 503). */
	readonly busy: number;
	/**
	 * Of those, commands shed at admission: the queue was past `maxQueuedCommands`, or their
	 * estimated wait past `maxQueueWaitMs` (or `queueWaitTargetMs` of a standing queue). Nothing
	 * written.
	 */
	readonly shed: number;
	/** Commands failed with `CP_STORAGE`. */
	readonly storageErrors: number;
	/** PLog offsets holding a value this package did not write, consumed as corrupted. */
	readonly corruptedOffsets: number;
	/** Actualizations of the sequencer (the one at deploy included). */
	readonly actualizations: number;
	/** PLog events read by actualizations. */
	readonly actualizedEvents: number;
	/** Of those, events re-applied (their records and WLog entry written again, idempotently). */
	readonly reappliedEvents: number;
	/** Failed storage calls of the sequencer (each retried). */
	readonly sequencerStorageErrors: number;
	/** Commands queued or running. */
	readonly queued: number;
	/** How long a command submitted now would wait in the queue (ms, estimated). */
	readonly queueWaitMs: number;
	/** Moving average of a command's service time in the queue (ms); 0 until one ran. */
	readonly serviceMs: number;
	/** The sequencer is actualizing (commands are answered `CP_BUSY`). */
	readonly actualizing: boolean;
	/** The PLog offset of the next event. */
	readonly nextPLogOffset: number;
	/** Flush lag: sequence values the sequencer has not written to storage yet. */
	readonly unflushedValues: number;
	/** The fencing epoch the partition writes under (decimal), once raised; none when unfenced. */
	readonly epoch: string | undefined;
	/** A newer holder refused one of its writes (or holds the fence): it takes no more commands. */
	readonly deposed: boolean;
}

/** @internal Mutable counters behind {@link PartitionStats}. */
export class Counters {
	commands = 0;
	replayed = 0;
	failed = 0;
	rejected = 0;
	conflicts = 0;
	busy = 0;
	shed = 0;
	storageErrors = 0;
	corruptedOffsets = 0;
	actualizations = 0;
	actualizedEvents = 0;
	reappliedEvents = 0;
	sequencerStorageErrors = 0;
}
