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
	 * with `conditionalBatches` (levels 0 and 1 over a storage with `putBatchIf`).
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
