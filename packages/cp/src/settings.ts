// The command processor's settings a deployment chooses (a CLI, a config file), with their rules
// in one place: the constructor applies them, and a host checks its flags with them before any
// I/O, naming each setting as its user wrote it.
import { MAX_TTL_SECONDS } from "@vvm/ttlstorage";
import type { SequencesTrustLevel } from "./event-writer.ts";
import { DEFAULT_IDEMPOTENCY_TTL_SECONDS } from "./idempotency.ts";
import { MAX_PARTITIONS } from "./partition.ts";

/** The settings of a command processor that a deployment chooses. */
export interface CpSettings {
	/** The application's partition count, `1..65536`: `partition = wsid mod partitions`. */
	readonly partitions: number;
	/** SequencesTrustLevel 0, 1 or 2. Default 0. */
	readonly trustLevel: SequencesTrustLevel;
	/** How long an idempotency key is remembered, `1..MAX_TTL_SECONDS`. Default one day. */
	readonly idempotencyTtlSeconds: number;
	/**
	 * Commands of a partition in flight at once, `1..MAX_PIPELINE_DEPTH`. Default 1: one at a
	 * time. Above 1 a command that reads nothing earlier ones write (creates only) is admitted once
	 * the previous one's PLog write was issued (README, "Pipelined numbering"); it takes effect only
	 * with `conditionalBatches` (a storage with `putBatchIf`, at every level).
	 */
	readonly pipelineDepth: number;
}

/** The largest `pipelineDepth`. */
export const MAX_PIPELINE_DEPTH = 32;

const integerIn = (what: string, v: unknown, min: number, max: number): number => {
	if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min || v > max)
		throw new RangeError(
			`[@vvm/cp] ${what} must be an integer in ${min}..${max}, got ${String(v)}`,
		);
	return v;
};

/**
 * The rules of {@link CpSettings}, for a caller that takes them from elsewhere and wants them
 * checked before it builds anything; `createCommandProcessor` applies the same. Missing values
 * take their defaults. `name` says how the caller calls a setting in its messages (default: its
 * own name). Throws a `RangeError` naming it.
 *
 * @example
 * ```ts
 * checkCpSettings({ partitions: 0 }, (s) => `--${s}`);
 * // RangeError: [@vvm/cp] --partitions must be an integer in 1..65536, got 0
 * ```
 */
export function checkCpSettings(
	settings: Partial<CpSettings> & Pick<CpSettings, "partitions">,
	name: (setting: keyof CpSettings) => string = (setting) => setting,
): CpSettings {
	return {
		partitions: integerIn(name("partitions"), settings.partitions, 1, MAX_PARTITIONS),
		trustLevel: integerIn(
			name("trustLevel"),
			settings.trustLevel ?? 0,
			0,
			2,
		) as SequencesTrustLevel,
		idempotencyTtlSeconds: integerIn(
			name("idempotencyTtlSeconds"),
			settings.idempotencyTtlSeconds ?? DEFAULT_IDEMPOTENCY_TTL_SECONDS,
			1,
			MAX_TTL_SECONDS,
		),
		pipelineDepth: integerIn(
			name("pipelineDepth"),
			settings.pipelineDepth ?? 1,
			1,
			MAX_PIPELINE_DEPTH,
		),
	};
}

/** The largest delay a timer takes (2^31 - 1 ms): longer waits are refused, not clamped. */
const MAX_WAIT_MS = 2_147_483_647;

/** `maxQueueWaitMs`'s default (README, "Admission"). */
export const DEFAULT_MAX_QUEUE_WAIT_MS = 5000;

/**
 * `queueWaitTargetMs`'s default (or `maxQueueWaitMs` when that is lower). Ten times the 50 ms
 * that shed a steady load of 16 closed-loop writers on one partition of a loaded machine: such a
 * queue stays at 15 commands, so it is shed only once a command takes over 33 ms; an open-loop
 * overload's queue grows without limit and stands above it within a fraction of a second.
 */
export const DEFAULT_QUEUE_WAIT_TARGET_MS = 500;

/** `readWaitMs`'s default. */
export const DEFAULT_READ_WAIT_MS = 1000;

/** A command processor's admission bounds (README, "Admission"), with their defaults applied. */
export interface CpAdmission {
	/** No command is admitted whose estimated queue wait exceeds this, `1..2^31-1` ms. Default 5000. */
	readonly maxQueueWaitMs: number;
	/**
	 * The bound of a standing queue's estimated wait, `0..maxQueueWaitMs`. Default
	 * {@link DEFAULT_QUEUE_WAIT_TARGET_MS}, or `maxQueueWaitMs` when that is lower.
	 */
	readonly queueWaitTargetMs: number;
	/** How long a read waits for a partition still catching up with its PLog, `0..2^31-1` ms. */
	readonly readWaitMs: number;
}

/**
 * The rules of {@link CpAdmission}, for a caller that checks its flags before any I/O;
 * `createCommandProcessor` applies the same. Missing values take their defaults; `name` says how
 * the caller calls a setting in its messages. Throws a `RangeError` naming it.
 *
 * @example
 * ```ts
 * checkCpAdmission({ maxQueueWaitMs: 40, queueWaitTargetMs: 50 }, (s) => `--${s}`);
 * // RangeError: [@vvm/cp] --queueWaitTargetMs 50 must be at most --maxQueueWaitMs (40): …
 * ```
 */
export function checkCpAdmission(
	admission: Partial<CpAdmission>,
	name: (setting: keyof CpAdmission) => string = (setting) => setting,
): CpAdmission {
	const maxQueueWaitMs = integerIn(
		name("maxQueueWaitMs"),
		admission.maxQueueWaitMs ?? DEFAULT_MAX_QUEUE_WAIT_MS,
		1,
		MAX_WAIT_MS,
	);
	const target = admission.queueWaitTargetMs;
	const queueWaitTargetMs =
		target === undefined
			? Math.min(DEFAULT_QUEUE_WAIT_TARGET_MS, maxQueueWaitMs)
			: integerIn(name("queueWaitTargetMs"), target, 0, MAX_WAIT_MS);
	if (queueWaitTargetMs > maxQueueWaitMs)
		throw new RangeError(
			`[@vvm/cp] ${name("queueWaitTargetMs")} ${queueWaitTargetMs} must be at most ${name("maxQueueWaitMs")} (${maxQueueWaitMs}): a standing queue's bound cannot exceed every queue's bound`,
		);
	const readWaitMs = integerIn(
		name("readWaitMs"),
		admission.readWaitMs ?? DEFAULT_READ_WAIT_MS,
		0,
		MAX_WAIT_MS,
	);
	return { maxQueueWaitMs, queueWaitTargetMs, readWaitMs };
}
