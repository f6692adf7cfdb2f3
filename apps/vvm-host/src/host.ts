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
import { API_PREFIX } from "./http/api-routes.ts";
import { apiV2Route } from "./http/api-v2.ts";
import type { Authenticator } from "./http/auth.ts";
import { AuthConfigError, createAuthenticator, guardRoutes, readTlsFiles } from "./http/auth.ts";
import { authority } from "./http/host-names.ts";
import { openApiRoute } from "./http/openapi.ts";
import type { OperatorState } from "./http/operator-routes.ts";
import { operatorRoutes } from "./http/operator-routes.ts";
import type { LoadShedder, LoopDelaySource } from "./http/overload.ts";
import { createLoadShedder } from "./http/overload.ts";
import { partitionRoutes } from "./http/partition-routes.ts";
import type { HttpServer, TlsFiles } from "./http/router.ts";
import { createRouteTable, startHttpServer } from "./http/router.ts";
import { createLeaseMetrics } from "./lease-metrics.ts";
import { createLeaseWorker } from "./lease-worker.ts";
import { servePartitions } from "./leases-mode.ts";
import { createHostLogger, describeError, logVVMEvent } from "./logger.ts";
import { createHostMetrics, registerShedMetrics } from "./metrics.ts";
import { partitionsSection } from "./partitions-section.ts";
import { placementStatus } from "./status-placement.ts";
import type { OpenedStorage } from "./storage/index.ts";
import { openStorage } from "./storage/index.ts";
import { unsafeMutantHooks } from "./unsafe-mutants.ts";
import { hostVersion } from "./version.ts";
import { createWaitingReporter } from "./waiting-reporter.ts";

/** The cluster application ID of the host's one application (`@vvm/cp` scopes every key by it). */
export const HOST_APP_ID = 1;

/**
 * Exit codes of the host. `FORCED`: a second SIGINT/SIGTERM while the host was stopping ended it
 * at once, the graceful shutdown unfinished (logged as `forced-exit`).
 */
export const EXIT = Object.freeze({ OK: 0, FAILURE: 1, BAD_CONFIG: 2, FORCED: 3 });

/**
 * A signal this soon after the first is the same stop request, not a second one: a wrapper (npx,
 * pnpm, tsx) forwards the terminal's Ctrl-C that the host's process group got too.
 */
const REPEAT_SIGNAL_MS = 1_000;

/** How long a shutdown waits for the command processor's queued writes. */
const CP_CLOSE_TIMEOUT_MS = 5_000;

/**
 * How long a stop waits, still leading, for the API requests admitted before it to be answered
 * (a command waits in cp's queue at most `--max-queue-wait-ms`, then runs in milliseconds).
 */
const DRAIN_TIMEOUT_MS = 5_000;

/** How long closing HTTP waits for replies still being written before it resets connections. */
const HTTP_CLOSE_GRACE_MS = 1_000;

/** Closes the command processor, giving up (logged) after `ms`: the durable PLog covers the rest. */
async function closeWithin(parts: CpPartitions, ms: number, logger: HostLogger): Promise<void> {
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

type HostLogger = ReturnType<typeof createHostLogger>;

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
	/**
	 * How late the event loop runs, for `--max-event-loop-delay-ms` (tests inject one); default a
	 * timer-drift sampler. Closed by the host.
	 */
	readonly loopDelay?: LoopDelaySource;
}

/** What a run opened, closed in reverse order at its end. */
interface Opened {
	storage?: OpenedStorage;
	http?: HttpServer;
	parts?: CpPartitions;
	placement?: PartitionPlacement;
	shedder?: LoadShedder;
}

/** What a forced exit says was left unfinished: filled in as the run goes. */
interface Progress {
	/** The slot whose leader record this host wrote and has not released (nor lost). */
	leader?: { readonly slot: number; readonly durationSeconds: number };
	placement?: PartitionPlacement;
	/** The command processor is deployed (its queued writes are awaited by the shutdown). */
	cp?: boolean;
	/** The storage is open (closed last by the shutdown). */
	storage?: boolean;
}

/** The stop requests of a run, and what a second one must say. */
interface StopRequests {
	readonly signal: AbortSignal;
	readonly progress: Progress;
	/** The run is in its last steps (its closes); the listeners stay until {@link release}. */
	readonly dispose: () => void;
	/** The run is over: the signal listeners are removed. */
	readonly release: () => void;
}

/** What a shutdown ended by a second signal leaves undone, one phrase each, for its log line. */
function unfinished(progress: Progress): string[] {
	const left: string[] = [];
	const held = progress.leader;
	if (held !== undefined)
		left.push(
			`the leader record of slot ${held.slot} was not released: another host takes the slot once it expires, within ${held.durationSeconds} s`,
		);
	const served = progress.placement?.served() ?? [];
	if (served.length > 0)
		left.push(
			`partitions ${served.join(",")} were still served here: their leases were not released and expire within --lease-interval-ms`,
		);
	if (progress.cp === true)
		left.push(
			"commands in flight were not awaited: their clients see a dropped connection (outcome unknown; a retry with the same Idempotency-Key is safe), and the next start applies what reached the PLog",
		);
	if (progress.storage === true) left.push("the storage was not closed cleanly");
	if (left.length === 0) left.push("the start-up was abandoned before the storage was open");
	return left;
}

/**
 * Step 1: SIGINT/SIGTERM (or the embedder's `stop`) become one abort signal. A second signal
 * (not a repeat within {@link REPEAT_SIGNAL_MS}) while stopping ends the process at once with
 * {@link EXIT.FORCED}, after a `forced-exit` line that says what was left undone; the listeners
 * stay for the whole run, its closes included (once it removed them, and node's default action
 * killed the host by the signal, silently).
 */
function stopRequests(options: RunHostOptions, logger: HostLogger): StopRequests {
	const stopCtl = new AbortController();
	const progress: Progress = {};
	let first: { signal: NodeJS.Signals; at: number } | undefined;
	const onSignal = (signal: NodeJS.Signals): void => {
		const now = performance.now();
		if (first === undefined) {
			first = { signal, at: now };
			logger.info({ event: "signal", signal }, `received ${signal}: shutting down gracefully`);
			stopCtl.abort(signal);
			return;
		}
		const sinceMs = Math.round(now - first.at);
		if (sinceMs < REPEAT_SIGNAL_MS) {
			logger.info(
				{ event: "signal-repeat", signal, sinceMs },
				`received ${signal} again ${sinceMs} ms after the first: the same stop request (send it again after ${REPEAT_SIGNAL_MS} ms to force an exit)`,
			);
			return;
		}
		const left = unfinished(progress);
		logger.error(
			{ event: "forced-exit", signal, code: EXIT.FORCED, stoppingMs: sinceMs, unfinished: left },
			`received ${signal} again while stopping (for ${sinceMs} ms): exiting now with code ${EXIT.FORCED}, the graceful shutdown unfinished: ${left.join("; ")}`,
		);
		process.exit(EXIT.FORCED);
	};
	let ended = false;
	const listener = (signal: NodeJS.Signals): void => {
		if (!ended) onSignal(signal);
	};
	const remove = (): void => {
		process.off("SIGINT", listener);
		process.off("SIGTERM", listener);
	};
	// After a stop by signal the caller exits right away: a signal in between changes nothing
	// (without a listener, node's default action would end the exit by that signal), and the
	// listeners go a moment later, for an embedder that lives on.
	const release = (): void => {
		if (first === undefined) {
			remove();
			return;
		}
		ended = true;
		setTimeout(remove, REPEAT_SIGNAL_MS).unref();
	};
	if (options.stop === undefined) {
		process.on("SIGINT", listener);
		process.on("SIGTERM", listener);
	} else {
		options.stop.addEventListener("abort", () => stopCtl.abort("stop"), { once: true });
	}
	return { signal: stopCtl.signal, progress, dispose: () => {}, release };
}

/** Step 2: the storage of `--storage`, or the caller's (kept open by it). */
async function openHostStorage(
	config: HostConfig,
	options: RunHostOptions,
	signal: AbortSignal,
	logger: HostLogger,
): Promise<OpenedStorage> {
	if (options.storage !== undefined)
		return { driver: options.storage, location: "a storage of the caller", close: async () => {} };
	return openStorage(config.storage, signal, logger);
}

/**
 * Runs the host until a signal, a launch failure or a leadership loss, and resolves to the exit
 * code: 0 graceful, 1 launch failure or leadership lost. The caller exits the process right away
 * (the killer stays armed after a graceful shutdown, as seed 001 requires). The steps, in order:
 * stop requests, storage, the command processor and its partitions, HTTP (one route table), the
 * placement, then either the lease cluster (`--placement leases`) or the VVM's slot leadership.
 *
 * @example
 * ```ts
 * const parsed = parseHostConfig(process.argv.slice(2), process.env);
 * if (!parsed.help) process.exit(await runHost(parsed.config));
 * ```
 */
export async function runHost(config: HostConfig, options: RunHostOptions = {}): Promise<number> {
	const logger = createHostLogger(config.logLevel, options.logDestination);
	// The signal listeners outlive the run's own closes: a second signal during them is handled.
	const stop = stopRequests(options, logger);
	try {
		return await run(config, options, logger, stop);
	} finally {
		stop.release();
	}
}

/** {@link runHost}'s steps, under `stop`. */
async function run(
	config: HostConfig,
	options: RunHostOptions,
	logger: HostLogger,
	stop: StopRequests,
): Promise<number> {
	const stderr = options.stderr ?? ((line: string) => process.stderr.write(`${line}\n`));
	const fail = (message: string): number => {
		logger.error({ event: "exit", code: EXIT.FAILURE }, message);
		stderr(`vvm-host: ${message}`);
		return EXIT.FAILURE;
	};
	const opened: Opened = {};
	// Empty unless the test-only VVM_UNSAFE_MUTANTS and --unsafe-allow-mutants are both given.
	const mutants = unsafeMutantHooks(config.unsafeMutants);
	// Who may call the host: its files are read now, before any storage I/O; a bad one is a bad
	// configuration (exit 2).
	let auth: Authenticator | undefined;
	let tls: TlsFiles | undefined;
	try {
		auth = await createAuthenticator(config.auth);
		tls = readTlsFiles(config.http);
	} catch (error) {
		if (!(error instanceof AuthConfigError)) throw error;
		logger.error({ event: "exit", code: EXIT.BAD_CONFIG }, error.message);
		stderr(`vvm-host: bad configuration: ${error.message}`);
		return EXIT.BAD_CONFIG;
	}
	const scheme = tls === undefined ? "http" : "https";
	try {
		logger.info(
			{ event: "starting", storage: config.storage.kind },
			`vvm-host starting on ${config.storage.kind} storage`,
		);
		if (config.unsafeMutants.length > 0) {
			logger.warn(
				{ event: "unsafe-mutants", mutants: config.unsafeMutants },
				`UNSAFE TEST-ONLY MUTANTS ACTIVE (${config.unsafeMutants.join(", ")}): this host can act as a second leader; never in production`,
			);
		}

		// 2. Storage.
		try {
			opened.storage = await openHostStorage(config, options, stop.signal, logger);
		} catch (error) {
			if (stop.signal.aborted) {
				logger.info({ event: "exit", code: EXIT.OK }, "stopped during start-up");
				return EXIT.OK;
			}
			return fail(describeError(error) ?? "cannot open the storage");
		}
		stop.progress.storage = true;
		logger.info(
			{ event: "storage-open", storage: config.storage.kind, location: opened.storage.location },
			"storage open",
		);
		const driver = opened.storage.driver;
		const leadershipStorage = vvmLeadershipStorage(driver);

		// What the later steps fill in and the routes read as the host runs.
		const state: HostState = {
			vvm: undefined,
			placement: undefined,
			address: config.http.address ?? "",
		};
		const worker = createLeaseWorker({
			intervalMs: config.http.workIntervalMs,
			logger,
			leadership: () => state.vvm?.leadership(),
			checkLease: mutants.checkLease,
		});
		const metrics = createHostMetrics({
			leadership: () => state.vvm?.leadership(),
			leaseValid: () => state.vvm?.leaseValid() ?? false,
			monotonic: () => systemClock.monotonic(),
		});

		// 3. The command processor; the placement deploys its partitions.
		const cp = createCommandProcessor({
			storage: driver,
			appId: HOST_APP_ID,
			partitions: config.cp.partitions,
			trustLevel: config.cp.trustLevel,
			idempotencyTtlSeconds: config.cp.idempotencyTtlSeconds,
			pipelineDepth: config.cp.pipelineDepth,
			maxQueueWaitMs: config.cp.maxQueueWaitMs,
			readWaitMs: config.cp.readWaitMs,
			...(config.cp.queueWaitTargetMs === undefined
				? {}
				: { queueWaitTargetMs: config.cp.queueWaitTargetMs }),
			...(mutants.unfenced ? { unsafeUnfenced: true } : {}),
			logger: logger.child({ component: "cp" }),
		});
		const partitions = deployCpPartitions(cp, { logger });
		opened.parts = partitions;
		stop.progress.cp = true;

		// 4. HTTP: one route table; routes that need the placement answer 503 until it exists.
		// Overload: API requests are shed before the table past the in-flight bound or while the
		// event loop is behind.
		const shedder = createLoadShedder({
			maxDelayMs: config.http.maxEventLoopDelayMs,
			maxInFlight: config.http.maxRequestsInFlight,
			maxUtilizationPercent: config.http.maxEventLoopUtilization,
			logger,
			...(options.loopDelay === undefined ? {} : { source: options.loopDelay }),
		});
		opened.shedder = shedder;
		registerShedMetrics(metrics.registry, shedder);
		const operator: OperatorState = {
			vvm: undefined,
			phase: "starting",
			address: () => state.address,
			// Leases mode holds no slot: no slot records to read for /leadership and /status.
			numVVM: config.placement.mode === "leases" ? 0 : config.leadership.numVVM,
			now: () => systemClock.now(),
			monotonic: () => systemClock.monotonic(),
			holderOf: (slot) => leadershipStorage.get(slot),
			expiresInOf: (slot) => driver.queryTTL(u32(VVM_LEADER_PREFIX), u32(slot)),
			registry: metrics.registry,
			worker,
			placement: () => placementStatus(config.placement.mode, state.placement, systemClock.now()),
			sections: async () =>
				state.placement === undefined ? [] : [partitionsSection(state.placement, partitions)],
		};
		const routes = guardRoutes(
			createRouteTable([
				apiV2Route({
					partitions: config.cp.partitions,
					placement: () => state.placement,
					partition: (p) => partitions.partition(p),
					fencingToken: (p) => partitions.fencingToken(p),
					self: () => state.address,
					scheme,
					metrics: createCpMetrics(
						metrics.registry,
						() => cp,
						() => state.placement,
					),
					logger,
					shedLog: shedder,
				}),
				...partitionRoutes({
					mode: config.placement.mode,
					placement: () => state.placement,
					partitions: config.cp.partitions,
					self: () => state.address,
					scheme,
					logger,
				}),
				...operatorRoutes(operator),
				openApiRoute(hostVersion()),
			]),
			auth,
			config.http.allowedHosts,
		);
		if (auth !== undefined)
			logger.info(
				{ event: "auth" },
				"bearer tokens required on every route but /healthz and /readyz",
			);
		const { host, port } = config.http;
		try {
			opened.http = await startHttpServer(routes, host, port, {}, tls, (_method, url) =>
				url.pathname.startsWith(API_PREFIX) ? (shedder.enter() ?? shedder.leave) : undefined,
			);
		} catch (error) {
			return fail(
				`cannot listen on ${host}:${port}: ${describeError(error)} (${listenHint(error)})`,
			);
		}
		// An IPv6 literal in brackets: "::1:8080" was no address a URL or a 421's Location can use.
		if (state.address === "") state.address = authority(host, opened.http.port);
		// The leader record's value: the address plus a nonce unique to this run (`createLeaderValue` of @vvm/orch).
		const leaderValue = createLeaderValue(state.address);
		const url = `${scheme}://${authority(host, opened.http.port)}`;
		logger.info(
			{
				event: "listening",
				host,
				port: opened.http.port,
				url,
				address: state.address,
				holder: leaderValue,
			},
			`HTTP on ${url}`,
		);

		// 5. The placement of --placement.
		const leaseMetrics =
			config.placement.mode === "leases"
				? createLeaseMetrics(metrics.registry, () =>
						state.placement !== undefined && isLeasesPlacement(state.placement)
							? state.placement.leaseMetrics()
							: undefined,
					)
				: undefined;
		const created = createPlacement(config.placement.mode, {
			partitions: config.cp.partitions,
			numVVM: config.leadership.numVVM,
			numVVMFrom: config.placement.numVVMFrom,
			handlers: partitions.handlers,
			leadership: () => state.vvm?.leadership(),
			leaderOf: (slot) => leadershipStorage.get(slot),
			storage: driver,
			address: () => state.address,
			clock: systemClock,
			logger,
			leases: {
				...config.placement.lease,
				...(leaseMetrics === undefined ? {} : { onEvent: leaseMetrics.onEvent }),
			},
		});
		state.placement = created.placement;
		opened.placement = created.placement;
		stop.progress.placement = created.placement;

		// 6a. --placement leases: partitions are leased one by one; no VVM slot is needed.
		if (created.lost !== undefined) {
			return await servePartitions(
				{ placement: created.placement, lost: created.lost },
				{ state: operator, logger, stop: stop.signal, fail },
			);
		}

		// 6b. --placement static: the VVM leads a slot; the placement serves the slot's partitions.
		const reportWaiting = createWaitingReporter({
			logger,
			leadership: leadershipStorage,
			driver,
			monotonic: () => systemClock.monotonic(),
			now: () => systemClock.now(),
		});
		const vvm = provideVVM({
			storage: leadershipStorage,
			address: leaderValue,
			numVVM: config.leadership.numVVM,
			clock: systemClock,
			killer: options.killer ?? mutants.killer ?? processKiller({ logger }),
			...(mutants.createElections === undefined
				? {}
				: { createElections: mutants.createElections }),
			acquireRetryMs: config.leadership.acquireRetryMs,
			maxClockSkewMs: config.leadership.maxClockSkewMs,
			services: [worker, ...created.services],
			onEvent: (event: VVMEvent) => {
				metrics.onEvent(event);
				logVVMEvent(logger, event);
				reportWaiting(event);
				if (event.type === "leader")
					stop.progress.leader = {
						slot: event.slot,
						durationSeconds: config.leadership.leadershipSeconds,
					};
				if (event.type === "released" || event.type === "lost") delete stop.progress.leader;
				if (event.type === "services-started") operator.phase = "leader";
				if (event.type === "problem" && operator.phase !== "stopping") operator.phase = "failed";
			},
		});
		state.vvm = vvm;
		operator.vvm = vvm;
		if (stop.signal.aborted) return EXIT.OK; // stopped before launch: nothing held yet
		try {
			// static: refuses a --num-vvm other than the cluster's stored one (create-placement.ts).
			await created.placement.start(stop.signal);
		} catch (error) {
			if (stop.signal.aborted) return EXIT.OK;
			return fail(describeError(error) ?? "the placement could not start");
		}
		operator.phase = "waiting";
		return await leadSlot(vvm, config.leadership, {
			operator,
			logger,
			stop: stop.signal,
			fail,
			drain: () => shedder.drain(DRAIN_TIMEOUT_MS),
		});
	} finally {
		stop.dispose();
		await opened.http?.close(HTTP_CLOSE_GRACE_MS).catch(() => {});
		opened.shedder?.close();
		// After the VVM's shutdown stopped its services: nothing is served any more; wait for the
		// queued writes, but not forever: a storage that stopped answering must not keep the process.
		await opened.placement?.close().catch(() => {});
		if (opened.parts !== undefined) await closeWithin(opened.parts, CP_CLOSE_TIMEOUT_MS, logger);
		await opened.storage?.close().catch(() => {});
	}
}

/** What the routes and the placement read as the host goes through its steps. */
interface HostState {
	vvm: VVM | undefined;
	placement: PartitionPlacement | undefined;
	/** This host's advertised address: `--address`, or `<http-host>:<bound port>` once listening. */
	address: string;
}

/**
 * Step 6b: launches the VVM, serves while it leads, and shuts it down on a stop request or a
 * problem (leadership lost, launch failed): the exit code.
 */
async function leadSlot(
	vvm: VVM,
	timings: HostConfig["leadership"],
	context: {
		readonly operator: OperatorState;
		readonly logger: HostLogger;
		readonly stop: AbortSignal;
		readonly fail: (message: string) => number;
		/** Refuses new API requests and waits (bounded) for those admitted: see `LoadShedder.drain`. */
		readonly drain: () => Promise<number>;
	},
): Promise<number> {
	const { operator, logger, stop, fail } = context;
	const launched = vvm.launch(timings.leadershipSeconds, timings.acquisitionDurationMs);
	const problem = new Promise<void>((resolve) => {
		void launched.then((signal) => {
			if (signal.aborted) resolve();
			else signal.addEventListener("abort", () => resolve(), { once: true });
		});
	});
	const stopped = new Promise<void>((resolve) => {
		if (stop.aborted) resolve();
		else stop.addEventListener("abort", () => resolve(), { once: true });
	});
	const first = await Promise.race([problem.then(() => "problem"), stopped.then(() => "stop")]);
	if ((operator.phase as OperatorState["phase"]) !== "failed") operator.phase = "stopping";
	if (first === "stop") {
		// While the leadership still holds: the commands admitted finish under it and are
		// answered; new ones get 503 "stopping" (nothing written). Before, the grants ended first
		// and HTTP then reset every connection: requests in flight were reset or answered
		// "unknown" although written (found by review).
		const left = await context.drain();
		logger.info(
			{ event: "drained", left },
			left === 0
				? "every API request admitted was answered; new ones are refused while stopping"
				: `${left} API request(s) still in flight after ${DRAIN_TIMEOUT_MS} ms; stopping anyway`,
		);
	}
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
