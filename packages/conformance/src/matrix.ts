// How one driver runs the published suites: the shape of a driver factory (src/drivers.ts lists
// them) and the registration of every suite over each of its configurations.
import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { CpSuiteOptions, DeposedSuiteOptions } from "@vvm/cp/testing";
import { cpTestSuite, deposedLeaderSuite } from "@vvm/cp/testing";
import type { ElectionsSuiteOptions } from "@vvm/ielections/testing";
import { electionsTestSuite } from "@vvm/ielections/testing";
import type { LeasesSuiteOptions } from "@vvm/leases/testing";
import { leasesTestSuite } from "@vvm/leases/testing";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { TTLStorageSuiteOptions } from "@vvm/ttlstorage/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { afterAll, beforeAll } from "vitest";

/**
 * The suites of the matrix, each with the options a driver may tune: case names to leave out
 * (`skipTests`, each with its reason in a comment), timeouts, and the suite's own knobs.
 */
interface SuiteTuning {
	/** `ttlStorageTestSuite` of `@vvm/ttlstorage/testing` (the contract, fences included). */
	readonly ttlstorage?: Pick<TTLStorageSuiteOptions, "skipTests" | "timeoutMs">;
	/** `electionsTestSuite` of `@vvm/ielections/testing`. */
	readonly elections?: Pick<ElectionsSuiteOptions, "skipTests" | "timeoutMs">;
	/** `cpTestSuite` of `@vvm/cp/testing`. */
	readonly cp?: Pick<CpSuiteOptions, "skipTests" | "timeoutMs" | "processorOptions">;
	/** `deposedLeaderSuite` of `@vvm/cp/testing`. */
	readonly deposedLeader?: Pick<DeposedSuiteOptions, "timeoutMs" | "processorOptions">;
	/** `leasesTestSuite` of `@vvm/leases/testing`. */
	readonly leases?: Pick<LeasesSuiteOptions, "skipTests" | "timeoutMs" | "randomizedIntervals">;
}

/** A suite of the matrix. */
type SuiteName = keyof SuiteTuning;

/** What a storage is created with: the clock it compares expiry with (see `time`). */
export interface StorageContext {
	readonly clock: Clock;
}

/**
 * A server resource of one test file (a keyspace, a table): opened before the file's tests and
 * closed after them, never when the driver's gate skipped the file.
 */
export interface ServerSetup<S> {
	open(): Promise<S>;
	close(server: S): Promise<void>;
}

/** One configuration of a driver: how its storages are made and what they declare. */
export interface DriverConfig<S> {
	/** Told apart in the titles: `ttlstorage-level (classic-level on disk)`. */
	readonly label?: string;
	/**
	 * What the storages declare (`storage.supports`): the conformance suite checks it and runs the
	 * fencing cases of its kind; the other suites read it from the storage itself.
	 */
	readonly supports: NonNullable<TTLStorageSuiteOptions["supports"]>;
	/** A fresh storage for one case, over the file's `server` (from `setup`, when there is one). */
	readonly createStorage: (ctx: StorageContext, server: S) => TTLStorage | Promise<TTLStorage>;
	/** After each case; default `storage.close()`. */
	readonly disposeStorage?: (storage: TTLStorage) => Promise<void>;
	/** Options for single suites. */
	readonly tune?: SuiteTuning;
	/** Suites this configuration does not run, each with the reason. */
	readonly leaveOut?: Partial<Record<SuiteName, string>>;
	/**
	 * Who enforces expiry: `"mock"` (default), the driver, by the `clock` it is created with (the
	 * suites move a `MockClock`); `"real"`, the server, by its own clock (the suites wait). A
	 * variant without it takes its driver's.
	 */
	readonly time?: "mock" | "real";
}

/**
 * A storage driver of the matrix: its default configuration, the server it needs, and more
 * configurations of the same driver (`variants`) when one is not enough.
 */
export interface DriverFactory<S> extends DriverConfig<S> {
	/** Short name, as in `@vvm/ttlstorage-<name>` and the host's `--storage <name>`. */
	readonly name: string;
	/** The server's gate: `false` when it is reachable, else the reason to skip (throws in CI). */
	readonly gate?: () => Promise<false | string>;
	/** The file's keyspace, table or schema on that server. */
	readonly setup?: ServerSetup<S>;
	/** Further configurations, each run through the suites like the default one. */
	readonly variants?: readonly DriverConfig<S>[];
}

/** A driver ready for the matrix (its server type hidden: see {@link defineDriver}). */
export interface MatrixDriver {
	readonly name: string;
	/** It has a gate: its test file is `<name>.integration.test.ts`. */
	readonly needsServer: boolean;
	/**
	 * Registers every suite over every configuration of the driver in the calling test file, with
	 * the file's server set up around them.
	 */
	run(): Promise<void>;
}

/**
 * Makes a factory a {@link MatrixDriver}, so drivers whose servers differ share one list.
 *
 * @example
 * ```ts
 * const mem = defineDriver({
 *   name: "mem",
 *   supports: { atomicBatches: true, fencing: "epoch" },
 *   createStorage: ({ clock }) => createMemTTLStorage({ clock }),
 * });
 * ```
 */
export function defineDriver<S = undefined>(factory: DriverFactory<S>): MatrixDriver {
	return {
		name: factory.name,
		needsServer: factory.gate !== undefined,
		run: () => runSuites(factory),
	};
}

async function runSuites<S>(driver: DriverFactory<S>): Promise<void> {
	const skip = (await driver.gate?.()) ?? false;
	let server: S | undefined;
	const setup = driver.setup;
	if (!skip && setup !== undefined) {
		beforeAll(async () => {
			server = await setup.open();
		});
		afterAll(async () => {
			if (server !== undefined) await setup.close(server);
		});
	}
	for (const config of [driver, ...(driver.variants ?? [])]) {
		const time = config.time ?? driver.time ?? "mock";
		const title = `ttlstorage-${driver.name}${config.label === undefined ? "" : ` (${config.label})`}`;
		// Cases create storages only once the file's hooks ran: `server` is set by then (a driver
		// without a setup has `S = undefined`).
		const createStorage = (ctx: StorageContext) => config.createStorage(ctx, server as S);
		const dispose =
			config.disposeStorage === undefined ? {} : { disposeStorage: config.disposeStorage };
		// cp's suites build their own processors and clocks: their storages run on the system clock.
		const onSystemClock = {
			createStorage: () => createStorage({ clock: systemClock }),
			...dispose,
		};
		const runs = (suite: SuiteName): boolean => config.leaveOut?.[suite] === undefined;
		const tune = config.tune ?? {};
		if (runs("ttlstorage"))
			ttlStorageTestSuite(title, {
				createStorage,
				...dispose,
				skip,
				time,
				supports: config.supports,
				...tune.ttlstorage,
			});
		if (runs("elections"))
			electionsTestSuite(title, { createStorage, ...dispose, skip, time, ...tune.elections });
		if (runs("cp")) cpTestSuite(`cp over ${title}`, { ...onSystemClock, skip, ...tune.cp });
		if (runs("deposedLeader"))
			deposedLeaderSuite(`deposed leader over ${title}`, {
				...onSystemClock,
				// A server's storages open the same data: each deposed holder gets its own driver.
				storagesShareData: driver.gate !== undefined,
				skip,
				...tune.deposedLeader,
			});
		if (runs("leases"))
			leasesTestSuite(title, { createStorage, ...dispose, skip, time, ...tune.leases });
	}
}
