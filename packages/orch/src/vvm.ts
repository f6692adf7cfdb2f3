import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type {
	Elections,
	ElectionsOptions,
	ITTLStorage,
	Killer,
	LeadershipEvent,
} from "@vvm/ielections";
import { createElections } from "@vvm/ielections";
import type { Logger } from "@vvm/log";
import { libraryLogger, silentLogger } from "@vvm/log";
import { VVMError } from "./errors.ts";
import type { VVMEvent, VVMLifecycleEvent } from "./events.ts";
import type { VVMService, VVMServiceContext } from "./service.ts";
import { checkVVMTimings, MAX_LEADERSHIP_SECONDS } from "./timings.ts";

/** Default leadership duration of {@link VVM.launch}, seconds (voedger's default). */
export const DEFAULT_LEADERSHIP_DURATION_SECONDS = 20;
/** Default acquisition duration of {@link VVM.launch}, ms (voedger's default). */
export const DEFAULT_ACQUISITION_DURATION_MS = 120_000;
/** Default pause between acquisition attempts, ms, on the VVM's clock. */
export const DEFAULT_ACQUIRE_RETRY_MS = 1_000;

/** Factory of the elections a VVM uses; defaults to `createElections` of `@vvm/ielections`. */
export type ElectionsFactory = (
	storage: ITTLStorage<number, string>,
	options: ElectionsOptions<number, string>,
) => Elections<number, string>;

/** Configuration of {@link provideVVM}. */
export interface VVMConfig {
	/** Leadership storage, e.g. `vvmLeadershipStorage(driver)` from `@vvm/ielections`. */
	readonly storage: ITTLStorage<number, string>;
	/**
	 * The value of the leader record. Ownership is checked by value only, so it must be unique
	 * per process incarnation, not just per VVM: append a random nonce (`10.0.0.5:8080#3f9a1c2e`),
	 * or a restarted or misconfigured VVM with the same value could delete or renew another's record.
	 */
	readonly address: string;
	/** Number of leader slots `1..numVVM` (VVMs that may lead at once). Default 1. */
	readonly numVVM?: number;
	/** Time source for elections and the acquisition loop. Default `systemClock`. */
	readonly clock?: Clock;
	/** Killer the elections arm (seed 001). Default `processKiller()` of `@vvm/ielections`. */
	readonly killer?: Killer;
	/** Services started in order once leader, stopped in reverse at shutdown. */
	readonly services?: readonly VVMService[];
	/** Lifecycle and leadership events, for metrics; a throwing listener is ignored. */
	readonly onEvent?: (event: VVMEvent) => void;
	/**
	 * Where lifecycle and leadership events are logged: any pino-compatible logger (see
	 * `@vvm/log`). Default: nothing is logged.
	 */
	readonly logger?: Logger;
	/** Pause between acquisition attempts, ms, on `clock` (Go sleeps a real second). Default 1000. */
	readonly acquireRetryMs?: number;
	/** Builds the elections; for tests and custom elections. Default `createElections`. */
	readonly createElections?: ElectionsFactory;
	/**
	 * Wall-clock skew between hosts the deployment guarantees, in ms (default 0): the lease ends
	 * and the killer fires that much earlier before the record's expiry. See `@vvm/ielections`
	 * `ElectionsOptions.maxClockSkewMs`.
	 */
	readonly maxClockSkewMs?: number;
}

/**
 * The local view of this VVM's leadership. Its times are readings of the VVM clock's
 * `monotonic()`: compare them only with that clock.
 */
export interface VVMLeadership {
	/** The slot held, in `1..numVVM`. */
	readonly slot: number;
	/** The value of the leader record (this VVM's address). */
	readonly address: string;
	readonly durationSeconds: number;
	/** `clock.monotonic()` when the insert that acquired the leadership was sent. */
	readonly acquiredAt: number;
	/** Successful renewals so far. */
	readonly renewals: number;
	/** `clock.monotonic()` when the last successful renewal (or the insert) was sent. */
	readonly lastRenewedAt: number;
	/**
	 * `lastRenewedAt + 0.8 * duration` on `clock.monotonic()`: the VVM may act as leader only
	 * before this moment.
	 */
	readonly leaseDeadline: number;
	/** `leaseDeadline - clock.monotonic()` when read (negative once passed). */
	readonly leaseTimeLeftMs: number;
	/** The fencing token of the acquisition, when the storage keeps tokens. */
	readonly fencingToken: number | undefined;
}

/**
 * A VVM: launched once under leadership of one slot, shut down once.
 *
 * @see voedger pkg/vvm VoedgerVM (Launch, Shutdown)
 * @example
 * ```ts
 * const vvm = provideVVM({ storage: vvmLeadershipStorage(driver), address: "10.0.0.5:8080" });
 * const problem = await vvm.launch(20, 120_000);
 * await new Promise((resolve) => problem.addEventListener("abort", resolve));
 * const error = await vvm.shutdown();
 * ```
 */
export interface VVM extends AsyncDisposable {
	/**
	 * Acquires leadership of a slot in `1..numVVM` (scanning the slots, retrying every
	 * `acquireRetryMs` until `acquisitionDurationMs` passed), starts the leadership monitor and the
	 * services, and resolves to the problem signal. On failure the signal is already aborted with
	 * the problem. Never rejects; throws synchronously when called twice or with bad arguments.
	 */
	launch(leadershipDurationSeconds?: number, acquisitionDurationMs?: number): Promise<AbortSignal>;
	/**
	 * Stops everything (the leadership monitor, the services in reverse order, then the elections,
	 * which delete the leader record, then waits for the acquisition to end) and resolves to the
	 * problem or `undefined`. A problem written before this call is returned; a leadership loss
	 * after it is part of the shutdown, not a problem. Does not wait for a service `start()` that
	 * has not settled (it is stopped when it does). May be called while `launch` is still
	 * acquiring (acquisition stops). Repeated calls return the same promise. Throws synchronously
	 * before `launch`.
	 */
	shutdown(): Promise<Error | undefined>;
	/** The leadership held, or `undefined`. */
	leadership(): VVMLeadership | undefined;
	/**
	 * `true` while the leadership is held and the monotonic clock is before its lease deadline (a
	 * wall-clock step cannot extend or cut the lease).
	 */
	leaseValid(): boolean;
	/** The first problem, or `undefined`. */
	problem(): Error | undefined;
	/**
	 * `await using vvm = provideVVM(…)`: {@link VVM.shutdown} at the end of scope when launched
	 * (its problem, if any, stays readable through {@link VVM.problem}); nothing before launch.
	 */
	[Symbol.asyncDispose](): Promise<void>;
}

type State = "idle" | "launched" | "shutting-down";

interface Held {
	readonly slot: number;
	readonly signal: AbortSignal;
	readonly durationSeconds: number;
}

class VVMImpl implements VVM {
	readonly #storage: ITTLStorage<number, string>;
	readonly #address: string;
	readonly #numVVM: number;
	readonly #clock: Clock;
	readonly #killer: Killer | undefined;
	readonly #services: readonly VVMService[];
	readonly #onEvent: ((event: VVMEvent) => void) | undefined;
	readonly #logger: Logger | undefined;
	readonly #log: Logger;
	readonly #retryMs: number;
	readonly #createElections: ElectionsFactory;
	readonly #maxClockSkewMs: number | undefined;

	#state: State = "idle";
	/** The acquisition step of `launch`; settles once leader, failed, or stopped by shutdown. */
	#acquiring: Promise<boolean> | undefined;
	/** Set by shutdown once it stopped the started services: a later `start()` is stopped at once. */
	#servicesStopped = false;
	#shuttingDown: Promise<Error | undefined> | undefined;
	#problem: Error | undefined;
	readonly #problemCtl = new AbortController();
	/** vvmShutCtx: aborted when shutdown is requested; stops the acquisition loop. */
	readonly #shutCtl = new AbortController();
	/** The services' signal: aborted on shutdown or on the first problem. */
	readonly #servicesCtl = new AbortController();
	#elections: Elections<number, string> | undefined;
	#held: Held | undefined;
	#stopMonitor: (() => void) | undefined;
	readonly #started: VVMService[] = [];

	constructor(config: VVMConfig) {
		this.#storage = config.storage;
		this.#address = config.address;
		this.#numVVM = config.numVVM ?? 1;
		this.#clock = config.clock ?? systemClock;
		this.#killer = config.killer;
		this.#services = [...(config.services ?? [])];
		this.#onEvent = config.onEvent;
		this.#logger = config.logger;
		this.#log = libraryLogger(config.logger, { pkg: "@vvm/orch" });
		this.#retryMs = config.acquireRetryMs ?? DEFAULT_ACQUIRE_RETRY_MS;
		this.#createElections = config.createElections ?? createElections;
		this.#maxClockSkewMs = config.maxClockSkewMs;
	}

	launch(
		leadershipDurationSeconds: number = DEFAULT_LEADERSHIP_DURATION_SECONDS,
		acquisitionDurationMs: number = DEFAULT_ACQUISITION_DURATION_MS,
	): Promise<AbortSignal> {
		if (this.#state !== "idle") throw new Error("[@vvm/orch] VVM is launched already");
		checkVVMTimings(
			{
				numVVM: this.#numVVM,
				leadershipSeconds: leadershipDurationSeconds,
				acquisitionDurationMs,
				acquireRetryMs: this.#retryMs,
				maxClockSkewMs: this.#maxClockSkewMs ?? 0,
			},
			(option) => (option === "leadershipSeconds" ? "leadershipDurationSeconds" : option),
		);
		this.#state = "launched";
		return this.#launch(leadershipDurationSeconds, acquisitionDurationMs);
	}

	shutdown(): Promise<Error | undefined> {
		if (this.#state === "idle") throw new Error("[@vvm/orch] VVM must be launched before shutdown");
		this.#shuttingDown ??= this.#shutdown();
		return this.#shuttingDown;
	}

	leadership(): VVMLeadership | undefined {
		const held = this.#held;
		const state = held && this.#elections?.leadership(held.slot);
		if (held === undefined || state === undefined || state.signal !== held.signal) return undefined;
		return {
			slot: held.slot,
			address: state.value,
			durationSeconds: state.durationSeconds,
			acquiredAt: state.acquiredAt,
			renewals: state.renewals,
			lastRenewedAt: state.lastRenewedAt,
			leaseDeadline: state.leaseDeadline,
			leaseTimeLeftMs: state.leaseTimeLeftMs,
			fencingToken: state.fencingToken,
		};
	}

	leaseValid(): boolean {
		const held = this.#held;
		if (held === undefined || held.signal.aborted) return false;
		const state = this.#elections?.leadership(held.slot);
		return (
			state !== undefined &&
			state.signal === held.signal &&
			this.#clock.monotonic() < state.leaseDeadline
		);
	}

	problem(): Error | undefined {
		return this.#problem;
	}

	async [Symbol.asyncDispose](): Promise<void> {
		if (this.#state !== "idle") await this.shutdown();
	}

	// --- launcher -------------------------------------------------------------------------------

	async #launch(durationSeconds: number, acquisitionDurationMs: number): Promise<AbortSignal> {
		this.#emit({
			type: "launching",
			at: this.#clock.now(),
			address: this.#address,
			numVVM: this.#numVVM,
			durationSeconds,
			acquisitionDurationMs,
		});
		// Set synchronously (before launch() returns), so shutdown can always await it.
		this.#acquiring = this.#acquireStep(durationSeconds, acquisitionDurationMs);
		if (await this.#acquiring) await this.#startServices();
		return this.#problemCtl.signal;
	}

	/** Acquires a slot and starts the monitor; `true` when the services should start. Never rejects. */
	async #acquireStep(durationSeconds: number, acquisitionDurationMs: number): Promise<boolean> {
		try {
			const held = await this.#acquire(durationSeconds, acquisitionDurationMs);
			if (held === undefined) {
				if (!this.#shutCtl.signal.aborted) {
					this.#updateProblem(
						new VVMError(
							"VVM_LEADERSHIP_ACQUISITION",
							`failed to acquire leadership of any slot in 1..${this.#numVVM} as "${this.#address}" within ${acquisitionDurationMs} ms`,
						),
					);
				}
				return false;
			}
			this.#held = held;
			if (this.#shutCtl.signal.aborted) return false; // shutdown releases it
			this.#startMonitor(held);
			this.#emit({
				type: "leader",
				at: this.#clock.now(),
				slot: held.slot,
				address: this.#address,
				leaseDeadline: this.leadership()?.leaseDeadline ?? Number.NaN,
				leaseLeftMs: this.leadership()?.leaseTimeLeftMs ?? Number.NaN,
			});
			return true;
		} catch (error) {
			this.#updateProblem(
				new VVMError("VVM_LEADERSHIP_ACQUISITION", "failed to acquire leadership", {
					cause: error,
				}),
			);
			return false;
		}
	}

	async #acquire(
		durationSeconds: number,
		acquisitionDurationMs: number,
	): Promise<Held | undefined> {
		const options: ElectionsOptions<number, string> = {
			clock: this.#clock,
			onEvent: (event: LeadershipEvent<number, string>) => this.#emit(event),
			...(this.#killer === undefined ? {} : { killer: this.#killer }),
			...(this.#maxClockSkewMs === undefined ? {} : { maxClockSkewMs: this.#maxClockSkewMs }),
			...(this.#logger === undefined ? {} : { logger: this.#logger }),
		};
		const elections = this.#createElections(this.#storage, options);
		this.#elections = elections;
		const shut = this.#shutCtl.signal;
		// A deadline this process keeps for itself: monotonic, so a clock step cannot shorten it.
		const deadline = this.#clock.monotonic() + acquisitionDurationMs;
		let slot = 1;
		for (;;) {
			if (shut.aborted) return undefined;
			const signal = await elections.acquireLeadership(slot, this.#address, durationSeconds);
			if (signal !== undefined) return { slot, signal, durationSeconds };
			slot = (slot % this.#numVVM) + 1;
			const left = deadline - this.#clock.monotonic();
			if (left <= 0 || shut.aborted) return undefined;
			try {
				await this.#clock.sleep(Math.min(this.#retryMs, left), shut);
			} catch {
				return undefined; // shutdown requested while waiting
			}
		}
	}

	/** The leadership monitor: a problem on loss. The killer is armed by the elections already. */
	#startMonitor(held: Held): void {
		const onLost = (): void => {
			this.#stopMonitor = undefined;
			this.#updateProblem(
				new VVMError("VVM_LEADERSHIP_LOST", `leadership of slot ${held.slot} lost`, {
					cause: held.signal.reason,
				}),
			);
		};
		if (held.signal.aborted) {
			onLost();
			return;
		}
		held.signal.addEventListener("abort", onLost, { once: true });
		this.#stopMonitor = () => held.signal.removeEventListener("abort", onLost);
	}

	async #startServices(): Promise<void> {
		const context: VVMServiceContext = {
			signal: this.#servicesCtl.signal,
			leaseValid: () => this.leaseValid(),
			fencingToken: this.leadership()?.fencingToken,
		};
		for (const service of this.#services) {
			if (this.#servicesCtl.signal.aborted) return; // shutdown or a problem: start no more
			try {
				await service.start(context);
			} catch (error) {
				// Once shutdown is requested a start that fails (most likely because its signal
				// aborted) is part of the shutdown, not a problem: it cannot turn a graceful stop
				// into a failure, nor change a result shutdown() may already have returned.
				if (this.#state === "shutting-down") return;
				this.#updateProblem(
					new VVMError("VVM_SERVICES_LAUNCH", `service "${service.name}" failed to start`, {
						cause: error,
					}),
				);
				return;
			}
			if (this.#servicesStopped) {
				// shutdown() already stopped the started services and did not wait for this start
				await service.stop().catch(() => {});
				return;
			}
			this.#started.push(service);
		}
		this.#emit({
			type: "services-started",
			at: this.#clock.now(),
			services: this.#started.map((s) => s.name),
		});
	}

	// --- shutdowner -----------------------------------------------------------------------------

	async #shutdown(): Promise<Error | undefined> {
		this.#state = "shutting-down";
		this.#emit({ type: "shutdown-started", at: this.#clock.now() });
		// 1. the leadership monitor first: a loss from here on is the shutdown itself, not a
		//    problem (a problem written before this call stays and is returned)
		this.#stopMonitor?.();
		this.#stopMonitor = undefined;
		// 2. signal: the acquisition loop stops, the services stop acting
		const reason = new Error("[@vvm/orch] VVM shutdown");
		this.#shutCtl.abort(reason);
		this.#servicesCtl.abort(reason);
		// 3. the started services, in reverse order of start; a start() still running is not
		//    awaited (it may hang): #startServices stops it when it settles
		this.#servicesStopped = true;
		for (const service of this.#started.splice(0).reverse()) {
			try {
				await service.stop();
			} catch (error) {
				this.#updateProblem(
					new VVMError("VVM_SHUTDOWN", `service "${service.name}" failed to stop`, {
						cause: error,
					}),
				);
			}
		}
		// 4. elections: no more acquisitions (a pending one is undone), the leader record deleted
		//    by compare-and-delete, renewal loops ended. Not after the launcher: it may hang.
		try {
			await this.#elections?.cleanup();
		} catch (error) {
			this.#updateProblem(
				new VVMError("VVM_SHUTDOWN", "failed to release the leadership", { cause: error }),
			);
		}
		// 5. the launcher's acquisition step, which the shutdown signal and cleanup have ended
		await this.#acquiring;
		await this.#releaseLate();
		this.#held = undefined;
		this.#emit({ type: "shutdown-done", at: this.#clock.now(), problem: this.#problem });
		return this.#problem;
	}

	/** Releases a leadership acquired after cleanup began, by elections that did not refuse it. */
	async #releaseLate(): Promise<void> {
		const held = this.#held;
		if (held === undefined || held.signal.aborted) return;
		try {
			await this.#elections?.releaseLeadership(held.slot);
		} catch (error) {
			this.#updateProblem(
				new VVMError("VVM_SHUTDOWN", "failed to release the leadership", { cause: error }),
			);
		}
	}

	/** The only way a problem is reported: the first one wins; later ones are dropped. */
	#updateProblem(error: Error): void {
		if (this.#problem !== undefined) return;
		this.#problem = error;
		this.#emit({ type: "problem", at: this.#clock.now(), error });
		this.#servicesCtl.abort(error);
		this.#problemCtl.abort(error);
	}

	#emit(event: VVMLifecycleEvent | LeadershipEvent<number, string>): void {
		// Leadership events are logged by the elections (they get the same logger).
		if (this.#log !== silentLogger && isLifecycle(event)) logLifecycle(this.#log, event);
		if (this.#onEvent === undefined) return;
		try {
			this.#onEvent(event);
		} catch {
			// a listener must not break the VVM
		}
	}
}

const LIFECYCLE: ReadonlySet<string> = new Set([
	"launching",
	"leader",
	"services-started",
	"problem",
	"shutdown-started",
	"shutdown-done",
]);

function isLifecycle(event: VVMEvent): event is VVMLifecycleEvent {
	return LIFECYCLE.has(event.type);
}

/** `info` for the lifecycle, `error` for a problem. */
function logLifecycle(log: Logger, event: VVMLifecycleEvent): void {
	const { type, ...rest } = event;
	if (type === "problem")
		log.error({ event: type, ...rest }, `VVM problem: ${event.error.message}`);
	else log.info({ event: type, ...rest }, `VVM ${type}`);
}

function validateConfig(config: VVMConfig): void {
	if (typeof config !== "object" || config === null) {
		throw new TypeError("[@vvm/orch] config must be an object");
	}
	const s = config.storage as unknown as Record<string, unknown> | undefined;
	if (
		typeof s !== "object" ||
		s === null ||
		typeof s.insertIfNotExist !== "function" ||
		typeof s.compareAndSwap !== "function" ||
		typeof s.compareAndDelete !== "function"
	) {
		throw new TypeError(
			"[@vvm/orch] config.storage must be an ITTLStorage<number, string>, e.g. vvmLeadershipStorage(driver)",
		);
	}
	if (typeof config.address !== "string" || config.address.length === 0) {
		throw new TypeError("[@vvm/orch] config.address must be a non-empty string");
	}
	// The rest at launch, with the durations (the skew is judged against the leadership).
	checkVVMTimings(
		{
			...(config.numVVM === undefined ? {} : { numVVM: config.numVVM }),
			...(config.acquireRetryMs === undefined ? {} : { acquireRetryMs: config.acquireRetryMs }),
			...(config.maxClockSkewMs === undefined ? {} : { maxClockSkewMs: config.maxClockSkewMs }),
			leadershipSeconds: MAX_LEADERSHIP_SECONDS,
		},
		(option) => `config.${option}`,
	);
	const names = new Set<string>();
	for (const service of config.services ?? []) {
		if (
			typeof service?.name !== "string" ||
			typeof service.start !== "function" ||
			typeof service.stop !== "function"
		) {
			throw new TypeError("[@vvm/orch] every service needs a name, start() and stop()");
		}
		if (names.has(service.name)) {
			throw new TypeError(`[@vvm/orch] duplicate service name "${service.name}"`);
		}
		names.add(service.name);
	}
}

/**
 * Wires a VVM without starting anything: no storage call, no timer, until {@link VVM.launch}.
 *
 * @see voedger pkg/vvm Provide
 * @example
 * ```ts
 * import { vvmLeadershipStorage } from "@vvm/ielections";
 * import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
 * const vvm = provideVVM({
 *   storage: vvmLeadershipStorage(createMemTTLStorage()),
 *   address: "127.0.0.1:8080",
 *   services: [httpService],
 * });
 * ```
 */
export function provideVVM(config: VVMConfig): VVM {
	validateConfig(config);
	return new VVMImpl(config);
}
