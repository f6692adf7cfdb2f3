// cp's pipelined numbering (`pipelineDepth` 8, cp README "Pipelined numbering") over the real
// drivers that have `putBatchIf`: cpTestSuite and deposedLeaderSuite again, with nothing else.
// Kept apart from src/drivers.ts's list so a driver's file runs them next to its matrix; each is
// a driver factory of its own (its own gate and server resource), named as the driver it covers.
import { createRedisTTLStorage } from "@vvm/ttlstorage-redis";
import { onDisk } from "./drivers.ts";
import type { DriverFactory, MatrixDriver } from "./matrix.ts";
import { defineDriver } from "./matrix.ts";
import type { RedisServer } from "./servers.ts";
import { redisGate, redisPrefix } from "./servers.ts";

/** The depth these runs use: the one cp's own suite runs over mem (test/pipeline-suite.test.ts). */
const PIPELINE_DEPTH = 8;

const processorOptions = { pipelineDepth: PIPELINE_DEPTH } as const;
const onlyCp = "pipelined numbering is a cp setting: the driver's matrix runs this suite";

/** What a pipelined configuration gives: how its storages are made, and its timeouts. */
type PipelinedConfig<S> = Pick<
	DriverFactory<S>,
	"name" | "gate" | "setup" | "supports" | "createStorage" | "disposeStorage"
> & {
	/** Per-case timeouts of the two suites (a server's fsyncs are slow on the shared machine). */
	readonly timeoutMs?: { readonly cp: number; readonly deposedLeader: number };
};

/**
 * A driver factory that runs only cp's two suites, at {@link PIPELINE_DEPTH}, titled
 * `cp over ttlstorage-<name> (cp pipelineDepth 8)`.
 */
function pipelined<S>(config: PipelinedConfig<S>): MatrixDriver {
	const { timeoutMs, ...driver } = config;
	return defineDriver<S>({
		...driver,
		label: `cp pipelineDepth ${PIPELINE_DEPTH}`,
		tune: {
			cp: {
				processorOptions,
				...(timeoutMs === undefined ? {} : { timeoutMs: timeoutMs.cp }),
				// Its random latency sits in a fault wrapper in front of the storage, so it hands a
				// partition's PLog writes to the driver out of call order: a write that arrives
				// before its predecessor is refused (CP_BUSY), which the case counts as a failure.
				// Skipped for mem (cp's test/pipeline-suite.test.ts) and pg at depth 8 too.
				skipTests: [
					"the sequencer of a partition is never used concurrently; partitions run concurrently",
				],
			},
			deposedLeader: {
				processorOptions,
				...(timeoutMs === undefined ? {} : { timeoutMs: timeoutMs.deposedLeader }),
			},
		},
		leaveOut: { ttlstorage: onlyCp, elections: onlyCp, leases: onlyCp },
	});
}

/** The pipelined configurations, one per driver with `putBatchIf` (pg's is in src/drivers.ts). */
const pipelinedDrivers: readonly MatrixDriver[] = [
	pipelined<undefined>({
		name: "level",
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		...onDisk(),
	}),
	pipelined<RedisServer>({
		name: "redis",
		gate: redisGate,
		setup: redisPrefix,
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		// cp's suites run on the system clock: the production setting, the server's clock.
		createStorage: (_ctx, { client, keyPrefix }) => createRedisTTLStorage({ client, keyPrefix }),
		timeoutMs: { cp: 180_000, deposedLeader: 120_000 },
	}),
];

/**
 * Registers cpTestSuite and deposedLeaderSuite at {@link PIPELINE_DEPTH} over the driver `name`
 * in the calling test file, next to its `runMatrix`.
 *
 * @example
 * ```ts
 * await runMatrix("level");
 * await runPipelined("level");
 * ```
 */
export async function runPipelined(name: string): Promise<void> {
	const driver = pipelinedDrivers.find((d) => d.name === name);
	if (driver === undefined)
		throw new Error(`no pipelined configuration "${name}" in src/pipelined.ts`);
	await driver.run();
}
