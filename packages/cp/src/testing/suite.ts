import type { TTLStorage } from "@vvm/ttlstorage";
import { describe, it } from "vitest";
import type { CommandProcessorOptions } from "../command-processor.ts";
import type { CpSuiteCase } from "./case.ts";
import { commandCases } from "./cases-commands.ts";
import { failoverCases } from "./cases-failover.ts";
import { recoveryCases } from "./cases-recovery.ts";
import { sequenceCases } from "./cases-sequences.ts";

/**
 * Options of {@link cpTestSuite}.
 *
 * @example
 * ```ts
 * const options: CpSuiteOptions = { createStorage: () => createMemTTLStorage() };
 * ```
 */
export interface CpSuiteOptions {
	/**
	 * A storage for one case. Cases use run-unique application IDs, so one shared storage (or
	 * server) for all of them is fine.
	 */
	readonly createStorage: () => TTLStorage | Promise<TTLStorage>;
	/** After each case; default `close()`. */
	readonly disposeStorage?: (storage: TTLStorage) => void | Promise<void>;
	/** Skip the whole suite with this reason. */
	readonly skip?: false | string;
	/** Case names to leave out, each with a reason in the caller's code. */
	readonly skipTests?: readonly string[];
	/** Per-case timeout; default 60 s. */
	readonly timeoutMs?: number;
	/**
	 * Options for every command processor of the suite: a driver's own configuration (e.g.
	 * `{ atomicBatches: true }` for a storage whose batches are all or nothing).
	 */
	readonly processorOptions?: Partial<
		Pick<
			CommandProcessorOptions,
			| "atomicBatches"
			| "conditionalBatches"
			| "coalesceWrites"
			| "writeBatchesInFlight"
			| "pipelineDepth"
		>
	>;
}

/**
 * The cases of {@link cpTestSuite}, as plain functions.
 *
 * @example
 * ```ts
 * for (const c of cpTestCases(options)) await c.run({ storage, options: {} });
 * ```
 */
export function cpTestCases(options: Pick<CpSuiteOptions, "skipTests"> = {}): CpSuiteCase[] {
	const skipped = new Set(options.skipTests ?? []);
	return [...sequenceCases(), ...commandCases(), ...recoveryCases(), ...failoverCases()].filter(
		(c) => !skipped.has(c.name),
	);
}

/**
 * The command processor's shared suite, run by every storage driver: seed 004's
 * `it.BuiltInSequences` and `it.SequencesTrustLevel0/1/2` (the next record, PLog and WLog keys
 * corrupted, with what each level detects and overwrites), the API shapes, validation before any
 * write, "server is busy", serialization per partition, restart and actualization from the durable
 * PLog (reads counted), every crash point of a command (a fault-injecting storage, and "crash" = a
 * process whose storage view is cut off, replaced by a new one), idempotency keys across holders,
 * the lease's say over writes and answers, fences, and undeploy during a command.
 *
 * @example
 * ```ts
 * cpTestSuite("cp over mem", { createStorage: () => createMemTTLStorage() });
 * ```
 */
export function cpTestSuite(name: string, options: CpSuiteOptions): void {
	const timeout = options.timeoutMs ?? 60_000;
	const body = (): void => {
		for (const c of cpTestCases(options))
			it(
				c.name,
				async () => {
					const storage = await options.createStorage();
					try {
						await c.run({ storage, options: options.processorOptions ?? {} });
					} finally {
						await (options.disposeStorage ?? ((s: TTLStorage) => s.close()))(storage);
					}
				},
				timeout,
			);
	};
	// The caller's reason (e.g. "Cassandra is not reachable at …") is shown in the skipped title;
	// real-server gates throw instead of skipping in CI (see @vvm/vitest-config/servers).
	if (options.skip) describe.skip(`${name} [skipped: ${options.skip}]`, body);
	else describe(`${name}: cpTestSuite`, body);
}
