// Every storage driver of the matrix, one factory each: every suite runs over every configuration
// listed here (src/matrix.ts), from the driver's test file. A new driver is one entry below and
// one file test/<name>.test.ts (see the README).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage } from "@vvm/ttlstorage-cas";
import { createDynamoTTLStorage } from "@vvm/ttlstorage-dyn";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { createPgTTLStorage } from "@vvm/ttlstorage-pg";
import { createRedisTTLStorage } from "@vvm/ttlstorage-redis";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import type { DriverConfig, MatrixDriver, StorageContext } from "./matrix.ts";
import { defineDriver } from "./matrix.ts";
import {
	cassandraGate,
	cassandraKeyspace,
	dynamoGate,
	dynamoTable,
	postgresGate,
	postgresSchema,
	redisGate,
	redisPrefix,
} from "./servers.ts";

/** The level driver over classic-level (LevelDB on disk), a temp directory per storage. */
export function onDisk(
	syncReads = true,
): Pick<DriverConfig<undefined>, "createStorage" | "disposeStorage"> {
	const dirs = new WeakMap<TTLStorage, string>();
	return {
		createStorage: async ({ clock }: StorageContext) => {
			const dir = await mkdtemp(join(tmpdir(), "vvm-matrix-level-"));
			const storage = createLevelTTLStorage({
				db: new ClassicLevel(dir),
				clock,
				ownsDb: true,
				syncReads,
			});
			dirs.set(storage, dir);
			return storage;
		},
		disposeStorage: async (storage) => {
			await storage.close();
			const dir = dirs.get(storage);
			if (dir !== undefined) await rm(dir, { recursive: true, force: true });
		},
	};
}

const levelOnDisk = onDisk();
const onlyForCp = "a cp configuration (processor options): the other suites do not read them";

/** The drivers of the matrix, each run by its own test file. */
export const drivers: readonly MatrixDriver[] = [
	defineDriver({
		name: "mem",
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		createStorage: ({ clock }) => createMemTTLStorage({ clock }),
		leaveOut: {
			deposedLeader:
				"epoch fences are level's too, which runs it on disk; mem runs it with ordered fences",
		},
		variants: [
			{
				// Levels 0/1 without putBatchIf: the single conditional writes, every cp case again.
				label: "no conditional batches",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				createStorage: ({ clock }) => createMemTTLStorage({ clock }),
				tune: { cp: { processorOptions: { conditionalBatches: false } } },
				leaveOut: {
					ttlstorage: onlyForCp,
					elections: onlyForCp,
					deposedLeader: onlyForCp,
					leases: onlyForCp,
				},
			},
			{
				// Per-record fences as DynamoDB and Cassandra have them, without a server.
				label: "fencing: ordered",
				supports: { atomicBatches: false, fencing: "ordered" },
				createStorage: ({ clock }) => createMemTTLStorage({ clock, fencing: "ordered" }),
				leaveOut: {
					elections: "no fences involved: the default configuration runs it",
					cp: "cas and dyn run it over ordered fences; here the deposed-leader suite does",
					leases: "no fences involved: the default configuration runs it",
				},
			},
		],
	}),
	defineDriver({
		name: "level",
		label: "memory-level",
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		// The cleaner runs on the suites' MockClock too (every 60 s of mock time), as in production.
		createStorage: ({ clock }) =>
			createLevelTTLStorage({ db: new MemoryLevel(), clock, ownsDb: true }),
		// Levels 0/1 here without putBatchIf (the single conditional writes); on disk with it.
		tune: {
			leases: { randomizedIntervals: 60 },
			cp: { processorOptions: { conditionalBatches: false } },
		},
		leaveOut: { deposedLeader: "the driver's code is the same on disk, which runs it" },
		variants: [
			{
				label: "classic-level on disk",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				...levelOnDisk,
				tune: { leases: { randomizedIntervals: 40 } },
			},
			{
				// Atomic batches are cp's default here (supports.atomicBatches): every cp case again,
				// crash points included, with them off (level 2's event and effects in two batches)
				// over epoch fences, which no other configuration runs.
				label: "classic-level on disk, atomicBatches off",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				...levelOnDisk,
				tune: { cp: { processorOptions: { atomicBatches: false } } },
				leaveOut: {
					ttlstorage: onlyForCp,
					elections: onlyForCp,
					deposedLeader: onlyForCp,
					leases: onlyForCp,
				},
			},
			{
				// The default reads on the calling thread (getSync); this one on libuv's pool.
				label: "classic-level on disk, syncReads off",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				...onDisk(false),
				leaveOut: {
					elections: "reads are the storage contract's: the ttlstorage suite covers them",
					cp: "reads are the storage contract's: the ttlstorage suite covers them",
					deposedLeader: "reads are the storage contract's: the ttlstorage suite covers them",
					leases: "reads are the storage contract's: the ttlstorage suite covers them",
				},
			},
		],
	}),
	defineDriver({
		name: "cas",
		gate: cassandraGate,
		setup: cassandraKeyspace,
		// Cassandra expires records by its own clock.
		time: "real",
		supports: { atomicBatches: false, fencing: "ordered" },
		createStorage: (_ctx, { client, keyspace }) => createCassandraTTLStorage({ client, keyspace }),
		tune: { cp: { timeoutMs: 180_000 }, deposedLeader: { timeoutMs: 120_000 } },
	}),
	defineDriver({
		name: "dyn",
		gate: dynamoGate,
		setup: dynamoTable,
		// The driver compares expiry with its clock (the server's TTL only reaps, later).
		supports: { atomicBatches: false, fencing: "ordered" },
		createStorage: ({ clock }, { client, tableName }) =>
			createDynamoTTLStorage({ client, tableName, clock }),
		tune: {
			cp: { timeoutMs: 180_000 },
			deposedLeader: { timeoutMs: 120_000 },
			leases: { randomizedIntervals: 40 },
		},
	}),
	defineDriver({
		name: "pg",
		gate: postgresGate,
		setup: postgresSchema,
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		// The suites' MockClock as the driver's test clock (expiry compared with it, sent as a
		// parameter); on the system clock (cp's suites) the production setting: the database's clock.
		createStorage: ({ clock }, { pool, schema }) =>
			clock === systemClock
				? createPgTTLStorage({ pool, schema })
				: createPgTTLStorage({ pool, schema, clock }),
		tune: { cp: { timeoutMs: 180_000 }, deposedLeader: { timeoutMs: 120_000 } },
		variants: [
			{
				// Production settings in real time: the database's clock decides expiry.
				label: "database clock",
				time: "real",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				createStorage: (_ctx, { pool, schema }) =>
					createPgTTLStorage({ pool, schema, table: "vvm_ttl_real", sweepIntervalMs: 1_000 }),
				leaveOut: {
					cp: "its storages are on the database clock already in the default configuration",
					deposedLeader:
						"its storages are on the database clock already in the default configuration",
					leases: "the lease suite moves a MockClock: the default configuration runs it",
				},
			},
			{
				// Pipelined numbering (cp's pipelineDepth 8 over putBatchIf): a partition's PLog writes
				// in flight at once, each conditioned on its predecessor's entry; group commit must
				// decide them in call order.
				label: "cp pipelineDepth 8",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				createStorage: (_ctx, { pool, schema }) => createPgTTLStorage({ pool, schema }),
				tune: {
					cp: {
						timeoutMs: 180_000,
						processorOptions: { pipelineDepth: 8 },
						// Its random latency sits in front of the storage (a fault wrapper), so it hands
						// a partition's PLog writes to the driver out of call order: a write that arrives
						// before its predecessor is refused (CP_BUSY), which the case counts as a
						// failure. Skipped for mem at depth 8 too (cp's test/pipeline-suite.test.ts).
						skipTests: [
							"the sequencer of a partition is never used concurrently; partitions run concurrently",
						],
					},
					deposedLeader: { timeoutMs: 120_000, processorOptions: { pipelineDepth: 8 } },
				},
				leaveOut: {
					ttlstorage: onlyForCp,
					elections: onlyForCp,
					leases: onlyForCp,
				},
			},
		],
	}),
	defineDriver({
		name: "redis",
		gate: redisGate,
		setup: redisPrefix,
		supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
		// The suites' MockClock as the driver's test clock (expiry compared with it, sent to each
		// script); on the system clock (cp's suites) the production setting: the server's clock.
		createStorage: ({ clock }, { client, keyPrefix }) =>
			clock === systemClock
				? createRedisTTLStorage({ client, keyPrefix })
				: createRedisTTLStorage({ client, keyPrefix, clock }),
		// appendfsync always: every write waits for an fsync (about 3 ms on the shared machine under load),
		// so the randomized lease case (200 intervals of writes in sequence) gets more than 60 s.
		tune: {
			cp: { timeoutMs: 180_000 },
			deposedLeader: { timeoutMs: 120_000 },
			leases: { timeoutMs: 240_000 },
		},
		variants: [
			{
				// Production settings in real time: the server's clock (TIME) decides expiry.
				label: "server clock",
				time: "real",
				supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
				createStorage: (_ctx, { client, keyPrefix }) =>
					createRedisTTLStorage({ client, keyPrefix: `${keyPrefix}real:`, sweepIntervalMs: 1_000 }),
				leaveOut: {
					cp: "its storages are on the server clock already in the default configuration",
					deposedLeader:
						"its storages are on the server clock already in the default configuration",
					leases: "the lease suite moves a MockClock: the default configuration runs it",
				},
			},
		],
	}),
];

/**
 * Registers every suite over the driver `name` in the calling test file (its only line).
 *
 * @example
 * ```ts
 * await runMatrix("mem");
 * ```
 */
export async function runMatrix(name: string): Promise<void> {
	const driver = drivers.find((d) => d.name === name);
	if (driver === undefined) throw new Error(`no driver "${name}" in src/drivers.ts`);
	await driver.run();
}
