import type { CpPartitions, PartitionPlacement } from "@vvm/appparts";
import { deployCpPartitions, isLeasesPlacement } from "@vvm/appparts";
import { systemClock } from "@vvm/clock";
import { createCommandProcessor } from "@vvm/cp";
import type { Killer } from "@vvm/ielections";
import { processKiller, VVM_LEADER_PREFIX, vvmLeadershipStorage } from "@vvm/ielections";
import type { VVM, VVMEvent } from "@vvm/orch";
import { createLeaderValue, provideVVM, VVMError } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import { u32 } from "@vvm/ttlstorage";
import type { DestinationStream } from "pino";
import type { HostConfig } from "./config.ts";
import { createCpMetrics } from "./cp-metrics.ts";
import { createPlacement } from "./create-placement.ts";
import { apiV2Route } from "./http/api-v2.ts";
import type { OperatorState } from "./http/operator-routes.ts";
import { operatorRoutes } from "./http/operator-routes.ts";
import { partitionRoutes } from "./http/partition-routes.ts";
import type { HttpServer } from "./http/router.ts";
import { createRouteTable, startHttpServer } from "./http/router.ts";
import { createLeaseMetrics } from "./lease-metrics.ts";
import { createLeaseWorker } from "./lease-worker.ts";
import { servePartitions } from "./leases-mode.ts";
import { createHostLogger, describeError, logVVMEvent } from "./logger.ts";
import { createHostMetrics } from "./metrics.ts";
import { partitionsSection } from "./partitions-section.ts";
import { placementStatus } from "./status-placement.ts";
import type { OpenedStorage } from "./storage.ts";
import { openStorage } from "./storage.ts";
import { unsafeMutantHooks } from "./unsafe-mutants.ts";
import { createWaitingReporter } from "./waiting-reporter.ts";

/** The cluster application ID of the host's one application (`@vvm/cp` scopes every key by it). */
export const HOST_APP_ID = 1;

/** Exit codes of the host. */
export const EXIT = Object.freeze({ OK: 0, FAILURE: 1, BAD_CONFIG: 2 });

/** How long a shutdown waits for the command processor's queued writes. */
const CP_CLOSE_TIMEOUT_MS = 5_000;

/** Closes the command processor, giving up (logged) after `ms`: the durable PLog covers the rest. */
async function closeWithin(
	parts: CpPartitions,
	ms: number,
	logger: ReturnType<typeof createHostLogger>,
): Promise<void> {
	let timer: NodeJS.Timeout | undefined;
	const timeout = new Promise<"timeout">((resolve) => {
		timer = setTimeout(resolve, ms, "timeout");
	});
	try {
		const outcome = await Promise.race([parts.close().then(() => "closed" as const), timeout]);
		if (outcome === "timeout")
			logger.warn(
				{ event: "cp-close-timeout", ms },
				`the command processor did not close within ${ms} ms (storage not answering?); exiting anyway: recovery re-applies what the PLog holds`,
			);
	} catch (error) {
		logger.error({ event: "cp-close-failed", err: error }, "closing the command processor failed");
	} finally {
		clearTimeout(timer);
	}
}

/** Which flag to fix after a failed listen: the port when it is taken, else the host. */
function listenHint(error: unknown): string {
	const code = (error as { code?: unknown } | undefined)?.code;
	if (code === "EADDRINUSE") return "the port is in use: choose another with --http-port";
	if (code === "EACCES") return "no permission for this port: use --http-port above 1023";
	return "this machine has no such address: check --http-host";
}

/**
 * A host started with {@link startHost}: `done` resolves to the exit code; `stop()` (or
 * `await using`) shuts it down gracefully, as SIGTERM would, and resolves to the exit code.
 */
export interface HostHandle extends AsyncDisposable {
	readonly done: Promise<number>;
	stop(): Promise<number>;
	[Symbol.asyncDispose](): Promise<void>;
}

/** Options of {@link runHost}, mostly for tests. */
export interface RunHostOptions {
	/** Log destination; default stdout, synchronous. */
	readonly logDestination?: DestinationStream;
	/** Killer; default `processKiller()` (a worker-thread watchdog that SIGKILLs the process). */
	readonly killer?: Killer;
	/** Where human-readable failure messages go; default stderr. */
	readonly stderr?: (line: string) => void;
	/** Resolves the run as if SIGTERM arrived; default: SIGINT and SIGTERM of this process. */
	readonly stop?: AbortSignal;
	/**
	 * A storage the caller opened and keeps (several in-process hosts on one mem storage: a lease
	 * cluster in one process): used instead of `--storage`, never closed by the host.
	 */
	readonly storage?: TTLStorage;
}

/**
 * Runs the host until a signal, a launch failure or a leadership loss, and resolves to the exit
 * code: 0 graceful, 1 launch failure or leadership lost. The caller exits the process right away
 * (the killer stays armed after a graceful shutdown, as seed 001 requires).
 *
 * @example
 * ```ts
 * const parsed = parseHostConfig(process.argv.slice(2), process.env);
 * if (!parsed.help) process.exit(await runHost(parsed.config));
 * ```
 */
export async function runHost(config: HostConfig, options: RunHostOptions = {}): Promise<number> {
	const logger = createHostLogger(config.logLevel, options.logDestination);
	const stderr = options.stderr ?? ((line: string) => process.stderr.write(`${line}\n`));
	const fail = (message: string): number => {
		logger.error({ event: "exit", code: EXIT.FAILURE }, message);
		stderr(`vvm-host: ${message}`);
		return EXIT.FAILURE;
	};

	// Stop requests (signals) are honoured at every stage from here on.
	const stopCtl = new AbortController();
	const onSignal = (signal: NodeJS.Signals): void => {
		logger.info({ event: "signal", signal }, `received ${signal}: shutting down gracefully`);
		stopCtl.abort(signal);
	};
	const external = options.stop;
	if (external === undefined) {
		process.once("SIGINT", onSignal);
		process.once("SIGTERM", onSignal);
	} else {
		external.addEventListener("abort", () => stopCtl.abort("stop"), { once: true });
	}
	const cleanupSignals = (): void => {
		process.off("SIGINT", onSignal);
		process.off("SIGTERM", onSignal);
	};

	let storage: OpenedStorage | undefined;
	let http: HttpServer | undefined;
	let parts: CpPartitions | undefined;
	let placement: PartitionPlacement | undefined;
	// Empty unless the test-only VVM_UNSAFE_MUTANTS and --unsafe-allow-mutants are both given.
	const mutants = unsafeMutantHooks(config.unsafeMutants);
	try {
		logger.info(
			{ event: "starting", storage: config.storage },
			`vvm-host starting on ${config.storage} storage`,
		);
		if (config.unsafeMutants.length > 0) {
			logger.warn(
				{ event: "unsafe-mutants", mutants: config.unsafeMutants },
				`UNSAFE TEST-ONLY MUTANTS ACTIVE (${config.unsafeMutants.join(", ")}): this host can act as a second leader; never in production`,
			);
		}
		try {
			storage =
				options.storage === undefined
					? await openStorage(config, { signal: stopCtl.signal })
					: { driver: options.storage, location: "a storage of the caller", close: async () => {} };
		} catch (error) {
			if (stopCtl.signal.aborted) {
				logger.info({ event: "exit", code: EXIT.OK }, "stopped during start-up");
				return EXIT.OK;
			}
			return fail(describeError(error) ?? "cannot open the storage");
		}
		logger.info(
			{ event: "storage-open", storage: config.storage, location: storage.location },
			"storage open",
		);
		const driver = storage.driver;
		const leadershipStorage = vvmLeadershipStorage(driver);

		let address = config.address ?? "";
		let current: VVM | undefined;
		const worker = createLeaseWorker({
			intervalMs: config.workIntervalMs,
			logger,
			leadership: () => current?.leadership(),
			checkLease: mutants.checkLease,
		});
		const metrics = createHostMetrics({
			leadership: () => current?.leadership(),
			leaseValid: () => current?.leaseValid() ?? false,
			monotonic: () => systemClock.monotonic(),
		});
		const reportWaiting = createWaitingReporter({
			logger,
			leadership: leadershipStorage,
			driver: storage.driver,
			monotonic: () => systemClock.monotonic(),
			now: () => systemClock.now(),
		});
		// One command processor over the host's storage; the placement deploys its partitions.
		const cp = createCommandProcessor({
			storage: driver,
			appId: HOST_APP_ID,
			partitions: config.partitions,
			trustLevel: config.sequencesTrustLevel,
			idempotencyTtlSeconds: config.idempotencyKeyTtlSeconds,
			...(mutants.unfenced ? { unsafeUnfenced: true } : {}),
			logger: logger.child({ component: "cp" }),
		});
		const partitions = deployCpPartitions(cp, { logger });
		parts = partitions;
		// Created once the HTTP port (and so this host's advertised address) is known; until then
		// the routes that need it answer 503.
		let served: PartitionPlacement | undefined;
		const state: OperatorState = {
			vvm: undefined,
			phase: "starting",
			address: () => address,
			// Leases mode holds no slot: no slot records to read for /leadership and /status.
			numVVM: config.placement === "leases" ? 0 : config.numVVM,
			now: () => systemClock.now(),
			monotonic: () => systemClock.monotonic(),
			holderOf: (slot) => leadershipStorage.get(slot),
			expiresInOf: (slot) => driver.queryTTL(u32(VVM_LEADER_PREFIX), u32(slot)),
			registry: metrics.registry,
			worker,
			placement: () => placementStatus(config.placement, served, systemClock.now()),
			sections: async () => (served === undefined ? [] : [partitionsSection(served, partitions)]),
		};
		// The one route table: the command processor's, the partition probe, the operator's.
		const routes = createRouteTable([
			apiV2Route({
				partitions: config.partitions,
				placement: () => served,
				partition: (p) => partitions.partition(p),
				fencingToken: (p) => partitions.fencingToken(p),
				self: () => address,
				metrics: createCpMetrics(
					metrics.registry,
					() => cp,
					() => served,
				),
				logger,
			}),
			...partitionRoutes({
				mode: config.placement,
				placement: () => served,
				partitions: config.partitions,
				self: () => address,
				logger,
			}),
			...operatorRoutes(state),
		]);

		try {
			http = await startHttpServer(routes, config.httpHost, config.httpPort);
		} catch (error) {
			return fail(
				`cannot listen on ${config.httpHost}:${config.httpPort}: ${describeError(error)} (${listenHint(error)})`,
			);
		}
		if (address === "") address = `${config.httpHost}:${http.port}`;
		// The leader record's value: the address plus a nonce unique to this run (`createLeaderValue` of @vvm/orch).
		const leaderValue = createLeaderValue(address);
		logger.info(
			{
				event: "listening",
				host: config.httpHost,
				port: http.port,
				url: `http://${config.httpHost}:${http.port}`,
				address,
				holder: leaderValue,
			},
			`HTTP on http://${config.httpHost}:${http.port}`,
		);

		const leaseMetrics =
			config.placement === "leases"
				? createLeaseMetrics(metrics.registry, () =>
						served !== undefined && isLeasesPlacement(served) ? served.leaseMetrics() : undefined,
					)
				: undefined;
		const created = createPlacement(config.placement, {
			partitions: config.partitions,
			numVVM: config.numVVM,
			handlers: partitions.handlers,
			leadership: () => current?.leadership(),
			leaderOf: (slot) => leadershipStorage.get(slot),
			storage: driver,
			address: () => address,
			clock: systemClock,
			logger,
			leases: {
				intervalMs: config.leaseIntervalMs,
				maxClockSkewMs: config.leaseMaxClockSkewMs,
				namespace: config.leaseNamespace,
				...(leaseMetrics === undefined ? {} : { onEvent: leaseMetrics.onEvent }),
			},
		});
		const placed = created.placement;
		served = placed;
		placement = placed;

		if (created.lost !== undefined) {
			// Partitions are leased one by one: no VVM slot leadership is needed (nor launched).
			return await servePartitions(
				{ placement: placed, lost: created.lost },
				{ state, logger, stop: stopCtl.signal, fail },
			);
		}

		const vvm = provideVVM({
			storage: leadershipStorage,
			address: leaderValue,
			numVVM: config.numVVM,
			clock: systemClock,
			killer: options.killer ?? mutants.killer ?? processKiller({ logger }),
			...(mutants.createElections === undefined
				? {}
				: { createElections: mutants.createElections }),
			acquireRetryMs: config.acquireRetryMs,
			maxClockSkewMs: config.maxClockSkewMs,
			services: [worker, ...created.services],
			onEvent: (event: VVMEvent) => {
				metrics.onEvent(event);
				logVVMEvent(logger, event);
				reportWaiting(event);
				if (event.type === "services-started") state.phase = "leader";
				if (event.type === "problem" && state.phase !== "stopping") state.phase = "failed";
			},
		});
		state.vvm = vvm;
		current = vvm;
		if (stopCtl.signal.aborted) return EXIT.OK; // stopped before launch: nothing held yet
		await placed.start(stopCtl.signal);
		state.phase = "waiting";
		const launched = vvm.launch(config.leadershipSeconds, config.acquireTimeoutMs);
		const problem = new Promise<void>((resolve) => {
			void launched.then((signal) => {
				if (signal.aborted) resolve();
				else signal.addEventListener("abort", () => resolve(), { once: true });
			});
		});
		const stopped = new Promise<void>((resolve) => {
			if (stopCtl.signal.aborted) resolve();
			else stopCtl.signal.addEventListener("abort", () => resolve(), { once: true });
		});
		await Promise.race([problem, stopped]);
		if ((state.phase as OperatorState["phase"]) !== "failed") state.phase = "stopping";
		const error = await vvm.shutdown();
		if (error === undefined) {
			logger.info({ event: "exit", code: EXIT.OK }, "graceful shutdown complete");
			return EXIT.OK;
		}
		if (VVMError.is(error) && error.code === "VVM_LEADERSHIP_ACQUISITION") {
			return fail(`launch failed: ${describeError(error)}`);
		}
		if (VVMError.is(error) && error.code === "VVM_LEADERSHIP_LOST") {
			return fail(`leadership lost, exiting: ${describeError(error)}`);
		}
		return fail(`stopped because of a problem: ${describeError(error)}`);
	} finally {
		cleanupSignals();
		await http?.close().catch(() => {});
		// After the VVM's shutdown stopped its services: nothing is served any more; wait for the
		// queued writes, but not forever: a storage that stopped answering must not keep the process.
		await placement?.close().catch(() => {});
		if (parts !== undefined) await closeWithin(parts, CP_CLOSE_TIMEOUT_MS, logger);
		await storage?.close().catch(() => {});
	}
}

/**
 * Runs the host in this process without taking its signals: for embedding and tests.
 *
 * @example
 * ```ts
 * await using host = startHost(config);
 * // … until the end of the scope, which stops it gracefully
 * ```
 */
export function startHost(
	config: HostConfig,
	options: Omit<RunHostOptions, "stop"> = {},
): HostHandle {
	const stopCtl = new AbortController();
	const done = runHost(config, { ...options, stop: stopCtl.signal });
	const stop = (): Promise<number> => {
		stopCtl.abort();
		return done;
	};
	return {
		done,
		stop,
		async [Symbol.asyncDispose]() {
			await stop();
		},
	};
}
