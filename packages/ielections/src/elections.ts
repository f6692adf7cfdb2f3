import type { Clock, TimerHandle } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { libraryLogger, silentLogger } from "@vvm/log";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { ElectionsErrorCode } from "./errors.ts";
import { ElectionsError } from "./errors.ts";
import { logLeadershipEvent } from "./event-log.ts";
import type { LeadershipEvent } from "./events.ts";
import type { Killer } from "./killer.ts";
import { processKiller } from "./process-killer.ts";
import type { LeadershipTimings } from "./timings.ts";
import { LEADERSHIP_TIMINGS, validateDuration } from "./timings.ts";
import type { ITTLStorage } from "./ttl-storage.ts";

/**
 * Leadership for keys over an {@link ITTLStorage}: acquire by insert-if-not-exists, keep by
 * compare-and-swap of the value with itself every `d/4`, give up by compare-and-delete.
 *
 * @see server.design.orch/IElections (voedger pkg/ielections IElections)
 * @example
 * ```ts
 * const elections = createElections(vvmLeadershipStorage(driver));
 * const signal = await elections.acquireLeadership(1, "10.0.0.1", 20);
 * if (signal) runServices({ signal });
 * await elections.cleanup();
 * ```
 */
export interface Elections<K, V> extends AsyncDisposable {
	/**
	 * Inserts `(key, value)` with a TTL of `durationSeconds` and starts renewing it. Resolves to a
	 * signal that stays live while leadership is held (its `reason` is an {@link ElectionsError}
	 * once it aborts), or `undefined` when not acquired: the key exists in storage, is already held
	 * by this instance (storage is not touched), `cleanup()` was called, or storage failed.
	 * Rejects with a `RangeError` (before any I/O) unless `durationSeconds` is an integer in
	 * `1..31_536_000`, and with the `TypeError`/`RangeError` of the storage or codec for a key or
	 * value it cannot store.
	 */
	acquireLeadership(key: K, value: V, durationSeconds: number): Promise<AbortSignal | undefined>;
	/**
	 * Aborts the signal (`ELECTIONS_RELEASED`), compare-and-deletes the record and waits for the
	 * renewal loop to end. A no-op when the key is not held. Rejects with the storage error when
	 * the compare-and-delete failed, after local state is cleaned.
	 */
	releaseLeadership(key: K): Promise<void>;
	/**
	 * Forbids new acquisitions, releases every held key (`ELECTIONS_CLEANUP`) and waits for every
	 * renewal loop and pending acquisition to end. Idempotent: later calls return the same promise.
	 * Rejects with an `AggregateError` of the release failures, after finishing everything.
	 */
	cleanup(): Promise<void>;
	/** Local view of a held leadership, for hosts (e.g. an HTTP /leadership endpoint). */
	leadership(key: K): LeadershipState<V> | undefined;
	/**
	 * Who leads `key` now, as storage says: the value of its live record, or `undefined` when
	 * nobody does. One read; storage errors reject.
	 */
	currentLeader(key: K): Promise<V | undefined>;
	/** `await using elections = createElections(…)`: {@link Elections.cleanup} at the end of scope. */
	[Symbol.asyncDispose](): Promise<void>;
}

/**
 * A snapshot of one held leadership. Its times are readings of `clock.monotonic()` (they never
 * step with the wall clock): compare them only with that clock.
 *
 * @example
 * ```ts
 * const s = elections.leadership(1);
 * if (s && clock.monotonic() < s.leaseDeadline) doLeaderWork();
 * ```
 */
export interface LeadershipState<V> {
	readonly value: V;
	readonly durationSeconds: number;
	/** `clock.monotonic()` when the insert that acquired the leadership was sent. */
	readonly acquiredAt: number;
	/** Successful renewals so far. */
	readonly renewals: number;
	/** `clock.monotonic()` when the last successful compare-and-swap (or the insert) was SENT. */
	readonly lastRenewedAt: number;
	/**
	 * `lastRenewedAt + 0.8 d` (minus `maxClockSkewMs`), on `clock.monotonic()`: the process may act
	 * as leader only before this.
	 */
	readonly leaseDeadline: number;
	/** `leaseDeadline - clock.monotonic()` when the snapshot was taken (negative once passed). */
	readonly leaseTimeLeftMs: number;
	/**
	 * The fencing token of this acquisition: strictly greater than every earlier acquisition's of
	 * the key (across expiries, restarts and processes); `undefined` when the storage keeps no
	 * tokens ({@link ITTLStorage.fencing}). Put it on every write the leader makes and let the
	 * resource reject a smaller one.
	 */
	readonly fencingToken: number | undefined;
	readonly signal: AbortSignal;
}

/**
 * Options of {@link createElections}.
 *
 * @example
 * ```ts
 * createElections(storage, { clock: new MockClock(), killer: new RecordingKiller(), onEvent: console.log });
 * ```
 */
export interface ElectionsOptions<K, V> {
	/**
	 * Time for renewals, retries and every deadline (all on `clock.monotonic()`; `clock.now()` only
	 * stamps events for logs); default `systemClock`.
	 */
	readonly clock?: Clock;
	/** Ends the process when a deadline passes; default {@link processKiller}`()`. */
	readonly killer?: Killer;
	/** Leadership events, for metrics; a throwing listener is ignored and never breaks elections. */
	readonly onEvent?: (event: LeadershipEvent<K, V>) => void;
	/**
	 * Where leadership events are logged (acquired/released `info`, renewals `debug`, failed
	 * attempts `warn`, losses `error`): any pino-compatible logger. Default: nothing is logged.
	 */
	readonly logger?: Logger;
	/** Identity of a key for the local map (non-primitive keys); default `String(key)`. */
	readonly keyToString?: (key: K) => string;
	/**
	 * The largest difference, in ms, between this host's wall clock and any other host's that the
	 * deployment guarantees (default 0). It matters where record expiry is compared on the client
	 * (DynamoDB, level): a host whose clock runs `s` ms ahead sees a record expire `s` ms early.
	 * The lease then ends, and the killer fires, at least this long before the record's expiry:
	 * lease = `min(0.8 d, d - maxClockSkewMs - 0.025 d)` after the send. At most `d / 2`.
	 */
	readonly maxClockSkewMs?: number;
}

/**
 * Knobs for mutation tests only; not part of the public API.
 * @internal
 */
export interface ElectionsInternals<K, V> {
	readonly timings?: Partial<LeadershipTimings>;
	/** How a release removes the record; default `storage.compareAndDelete(key, value)`. */
	readonly deleteOnRelease?: (storage: ITTLStorage<K, V>, key: K, value: V) => Promise<boolean>;
	/**
	 * `false` removes the timer that aborts the signal at the lease deadline while a renewal hangs
	 * (a mutant for the suite and for vvm-host's chaos mutants); default `true`.
	 */
	readonly leaseTimer?: boolean;
}

type ReleaseOutcome = { readonly ok: true } | { readonly ok: false; readonly error: unknown };

interface Leader<K, V> {
	readonly key: K;
	readonly keyString: string;
	readonly value: V;
	readonly durationSeconds: number;
	readonly controller: AbortController;
	readonly acquiredAt: number;
	readonly fencingToken: number | undefined;
	renewals: number;
	lastRenewedAt: number;
	leaseDeadline: number;
	killerDeadline: number;
	killerReason: string;
	/** Aborts the signal at `leaseDeadline` if no renewal succeeded by then (a hanging storage call). */
	leaseTimer: TimerHandle | undefined;
	loop: Promise<void>;
	ending: Promise<ReleaseOutcome> | undefined;
}

const ABORTED: unique symbol = Symbol("aborted");

function isOutcomeUnknown(error: unknown): boolean {
	return TTLStorageError.is(error) && error.code === "TTLSTORAGE_OUTCOME_UNKNOWN";
}

/**
 * `promise`, or {@link ABORTED} as soon as `signal` aborts. The abort listener removes itself when
 * the promise settles: a renewal must leave nothing behind on a signal that lives as long as the
 * leadership (racing a long-lived promise instead keeps one reaction per renewal).
 */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | typeof ABORTED> {
	if (signal.aborted) {
		promise.catch(() => {}); // settles later; its outcome no longer matters
		return Promise.resolve(ABORTED);
	}
	return new Promise((resolve, reject) => {
		const onAbort = (): void => resolve(ABORTED);
		signal.addEventListener("abort", onAbort, { once: true });
		promise.then(
			(value) => {
				signal.removeEventListener("abort", onAbort);
				resolve(value);
			},
			(error: unknown) => {
				signal.removeEventListener("abort", onAbort);
				reject(error);
			},
		);
	});
}

class ElectionsImpl<K, V> implements Elections<K, V> {
	readonly #storage: ITTLStorage<K, V>;
	readonly #clock: Clock;
	readonly #killerOption: Killer | undefined;
	#defaultKiller: Killer | undefined;
	readonly #onEvent: ((event: LeadershipEvent<K, V>) => void) | undefined;
	readonly #log: Logger;
	readonly #keyToString: (key: K) => string;
	readonly #timings: LeadershipTimings;
	readonly #deleteOnRelease: (key: K, value: V) => Promise<boolean>;
	readonly #maxClockSkewMs: number;
	readonly #leaseTimerOn: boolean;

	readonly #leaders = new Map<string, Leader<K, V>>();
	readonly #pending = new Map<string, Promise<AbortSignal | undefined>>();
	readonly #loops = new Set<Promise<void>>();
	/**
	 * Releases still deleting their record, by key: a new acquisition of the same key waits for
	 * them, or a late compare-and-delete of the old leadership would delete the new record.
	 */
	readonly #endings = new Map<string, Promise<ReleaseOutcome>>();
	/** Release failures outside any held leadership (an acquisition undone by cleanup). */
	readonly #orphanErrors: unknown[] = [];
	#finalized = false;
	#cleanup: Promise<void> | undefined;
	/**
	 * The earliest killer deadline (monotonic) of a leadership that was lost (not released): it
	 * stays in force, so renewals of another key held here can never push the killer past it, and a
	 * voluntary release of another key never disarms it (seed 001: a lost leadership's killer is
	 * never cancelled).
	 */
	#lostFloor: { deadline: number; reason: string } | undefined;
	/** Whether a deadline was handed to the killer and not disarmed since. */
	#killerArmed = false;

	constructor(
		storage: ITTLStorage<K, V>,
		options: ElectionsOptions<K, V>,
		internals: ElectionsInternals<K, V>,
	) {
		this.#storage = storage;
		this.#clock = options.clock ?? systemClock;
		this.#killerOption = options.killer;
		this.#onEvent = options.onEvent;
		this.#log = libraryLogger(options.logger, { pkg: "@vvm/ielections" });
		this.#keyToString = options.keyToString ?? ((key: K) => String(key));
		this.#timings = { ...LEADERSHIP_TIMINGS, ...internals.timings };
		const skew = options.maxClockSkewMs ?? 0;
		if (!Number.isSafeInteger(skew) || skew < 0) {
			throw new RangeError(
				`[@vvm/ielections] maxClockSkewMs must be an integer >= 0, got ${String(skew)}`,
			);
		}
		this.#maxClockSkewMs = skew;
		this.#leaseTimerOn = internals.leaseTimer ?? true;
		const del = internals.deleteOnRelease;
		this.#deleteOnRelease =
			del === undefined
				? (key, value) => storage.compareAndDelete(key, value)
				: (key, value) => del(storage, key, value);
	}

	get #killer(): Killer {
		if (this.#killerOption !== undefined) return this.#killerOption;
		this.#defaultKiller ??= processKiller();
		return this.#defaultKiller;
	}

	#emit(event: LeadershipEvent<K, V>): void {
		if (this.#log !== silentLogger) logLeadershipEvent(this.#log, event);
		if (this.#onEvent === undefined) return;
		try {
			this.#onEvent(event);
		} catch {
			// A listener must never break elections (documented on ElectionsOptions.onEvent).
		}
	}

	/** Reports an acquisition that did not happen; returns `undefined` for the caller to return. */
	#notAcquired(
		key: K,
		value: V,
		reason: "held" | "finalized" | "storage-error",
		error?: unknown,
	): undefined {
		this.#emit({
			type: "acquire-failed",
			key,
			value,
			at: this.#clock.now(),
			reason,
			...(error === undefined ? {} : { error }),
		});
		return undefined;
	}

	#ms(durationSeconds: number, fraction: number): number {
		return Math.round(durationSeconds * 1000 * fraction);
	}

	/**
	 * The longest a process may live after sending a write of the record and still be gone before
	 * any host (clock up to `maxClockSkewMs` ahead) sees that record expire: `d - skew - margin`.
	 */
	#limitMs(durationSeconds: number): number {
		return (
			durationSeconds * 1000 -
			this.#maxClockSkewMs -
			this.#ms(durationSeconds, this.#timings.killerMargin)
		);
	}

	/** The local lease after a send: `min(0.8 d, limit)`. */
	#leaseMs(durationSeconds: number): number {
		return Math.min(
			this.#ms(durationSeconds, this.#timings.killerAfterRenewal),
			this.#limitMs(durationSeconds),
		);
	}

	/** Monotonic now: every deadline of this class is on it (never `clock.now()`). */
	#mono(): number {
		return this.#clock.monotonic();
	}

	async acquireLeadership(
		key: K,
		value: V,
		durationSeconds: number,
	): Promise<AbortSignal | undefined> {
		validateDuration(durationSeconds);
		if (this.#maxClockSkewMs > durationSeconds * 500) {
			throw new RangeError(
				`[@vvm/ielections] maxClockSkewMs ${this.#maxClockSkewMs} is too large for a ${durationSeconds} s leadership: at most half of it, ${durationSeconds * 500} ms`,
			);
		}
		const keyString = this.#keyToString(key);
		const ending = this.#endings.get(keyString);
		if (ending !== undefined) await ending;
		if (this.#finalized) return this.#notAcquired(key, value, "finalized");
		if (this.#leaders.has(keyString) || this.#pending.has(keyString)) {
			return this.#notAcquired(key, value, "held");
		}
		const attempt = this.#acquire(key, keyString, value, durationSeconds);
		this.#pending.set(keyString, attempt);
		try {
			return await attempt;
		} finally {
			this.#pending.delete(keyString);
		}
	}

	async #acquire(
		key: K,
		keyString: string,
		value: V,
		durationSeconds: number,
	): Promise<AbortSignal | undefined> {
		const sentAt = this.#mono();
		let inserted: boolean;
		try {
			inserted = await this.#storage.insertIfNotExist(key, value, durationSeconds);
		} catch (error) {
			// Argument mistakes (a key the codec cannot encode, a value too large for the driver) are
			// programming errors: they reject instead of reading as "not acquired".
			if (error instanceof TypeError || error instanceof RangeError) throw error;
			this.#notAcquired(key, value, "storage-error", error);
			// The insert may have been applied: remove it (only if it is ours) so the key does not
			// stay blocked for a whole duration with nobody renewing it.
			if (isOutcomeUnknown(error)) await this.#undoInsert(key, value, false);
			return undefined;
		}
		if (!inserted) return this.#notAcquired(key, value, "held");
		const leaseDeadline = sentAt + this.#leaseMs(durationSeconds);
		if (this.#mono() >= leaseDeadline) {
			// The insert took the whole lease: leading now would arm the killer at once.
			this.#notAcquired(
				key,
				value,
				"storage-error",
				new Error(`[@vvm/ielections] the insert of ${keyString} returned after its lease deadline`),
			);
			await this.#undoInsert(key, value, false);
			return undefined;
		}
		if (this.#finalized) {
			this.#notAcquired(key, value, "finalized");
			await this.#undoInsert(key, value, true);
			return undefined;
		}
		let fencingToken: number | undefined;
		if (this.#storage.fencing !== undefined) {
			try {
				fencingToken = await this.#nextFencingToken(key, leaseDeadline);
			} catch (error) {
				this.#notAcquired(key, value, "storage-error", error);
				await this.#undoInsert(key, value, false);
				return undefined;
			}
			if (fencingToken === undefined || this.#mono() >= leaseDeadline || this.#finalized) {
				const finalized = this.#finalized;
				this.#notAcquired(
					key,
					value,
					finalized ? "finalized" : "storage-error",
					finalized
						? undefined
						: new Error(
								`[@vvm/ielections] no fencing token for ${keyString} before its lease deadline`,
							),
				);
				await this.#undoInsert(key, value, finalized);
				return undefined;
			}
		}
		const controller = new AbortController();
		const leader: Leader<K, V> = {
			key,
			keyString,
			value,
			durationSeconds,
			controller,
			acquiredAt: sentAt,
			fencingToken,
			renewals: 0,
			lastRenewedAt: sentAt,
			leaseDeadline,
			killerDeadline: leaseDeadline,
			killerReason: "",
			leaseTimer: undefined,
			loop: Promise.resolve(),
			ending: undefined,
		};
		try {
			this.#scheduleKiller(
				leader,
				leaseDeadline,
				`leadership of ${keyString}: no renewal succeeded within ${this.#leaseMs(durationSeconds)} ms of the insert that acquired it (its lease deadline passed)`,
			);
		} catch (error) {
			await this.#undoInsert(key, value, true);
			throw error;
		}
		this.#leaders.set(keyString, leader);
		this.#armLease(leader);
		// #maintain arms its first timer synchronously, so when this resolves the loop is waiting.
		const loop = this.#maintain(leader);
		leader.loop = loop;
		this.#loops.add(loop);
		void loop.finally(() => this.#loops.delete(loop));
		this.#emit({
			type: "acquired",
			key,
			value,
			at: this.#clock.now(),
			leaseDeadline,
			leaseLeftMs: leaseDeadline - this.#mono(),
			...(fencingToken === undefined ? {} : { fencingToken }),
		});
		return controller.signal;
	}

	/**
	 * Advances the key's fencing counter while the new lease is valid and returns the new token;
	 * `undefined` once the lease deadline passed. Why this orders tokens: another process can only
	 * insert the key after this record expired, which is after this lease deadline; every advance
	 * here is sent before the deadline, and one that lands later finds the counter moved by the
	 * next holder, fails, and is not retried past the deadline. So a token handed out here is
	 * smaller than any later holder's.
	 */
	async #nextFencingToken(key: K, leaseDeadline: number): Promise<number | undefined> {
		const fencing = this.#storage.fencing as NonNullable<ITTLStorage<K, V>["fencing"]>;
		for (;;) {
			if (this.#mono() >= leaseDeadline) return undefined;
			const current = await fencing.read(key);
			if (this.#mono() >= leaseDeadline) return undefined;
			try {
				if (await fencing.advance(key, current)) return current + 1;
			} catch (error) {
				// Unknown outcome: it may have landed; never reuse it, read again and skip past it.
				if (!isOutcomeUnknown(error)) throw error;
			}
		}
	}

	/** Compare-and-deletes a record this instance inserted but does not hold. */
	async #undoInsert(key: K, value: V, reportToCleanup: boolean): Promise<void> {
		try {
			await this.#deleteOnRelease(key, value);
		} catch (error) {
			this.#emit({ type: "release-failed", key, value, at: this.#clock.now(), error });
			if (reportToCleanup) this.#orphanErrors.push(error);
		}
	}

	/**
	 * Sets the killer to the earliest deadline among the leaderships held here (with one key, the
	 * deadline just computed for it), so a healthy key can never push back a failing key's deadline.
	 */
	#scheduleKiller(leader: Leader<K, V>, deadline: number, reason: string): void {
		leader.killerDeadline = deadline;
		leader.killerReason = reason; // the killer prefixes its line with the package
		this.#applyKiller(leader);
	}

	/**
	 * Hands the killer the earliest deadline among the live leaderships (and `acquiring`, not yet in
	 * the map) and the lost floor; with
	 * none (every key released voluntarily, nothing lost) it disarms the killer.
	 */
	#applyKiller(acquiring?: Leader<K, V>): void {
		let target: { deadline: number; reason: string } | undefined = this.#lostFloor;
		const live = [...this.#leaders.values()];
		// An acquisition arms the killer before the leader joins the map.
		if (acquiring !== undefined && !live.includes(acquiring)) live.push(acquiring);
		for (const leader of live) {
			if (leader.controller.signal.aborted) continue;
			if (target === undefined || leader.killerDeadline < target.deadline) {
				target = { deadline: leader.killerDeadline, reason: leader.killerReason };
			}
		}
		if (target === undefined) {
			if (this.#killerArmed) this.#killer.disarm?.();
			this.#killerArmed = false;
			return;
		}
		this.#killer.schedule(Math.max(0, target.deadline - this.#mono()), target.reason);
		this.#killerArmed = true;
	}

	/**
	 * Beyond seed 001: the signal must not outlive the lease. Renewals normally succeed or give up
	 * long before `leaseDeadline`; only a storage call that hangs past it lets this timer fire, and
	 * then the signal aborts at the deadline instead of whenever the call returns.
	 */
	#armLease(leader: Leader<K, V>): void {
		leader.leaseTimer?.cancel();
		if (!this.#leaseTimerOn) return;
		leader.leaseTimer = this.#clock.setTimer(
			Math.max(0, leader.leaseDeadline - this.#mono()),
			() => {
				void this.#leaseExpired(leader);
			},
		);
	}

	/** Ends `leader`: its lease deadline passed with no renewal confirmed before it. */
	#leaseExpired(leader: Leader<K, V>): Promise<ReleaseOutcome> {
		return this.#end(
			leader,
			"ELECTIONS_STORAGE_ERROR",
			// A coded error, as every error this package hands out (the `lost` event carries it).
			new ElectionsError(
				"ELECTIONS_STORAGE_ERROR",
				`no renewal of ${leader.keyString} succeeded before its lease deadline (a storage call hung past it)`,
			),
		);
	}

	/** Waits `ms` on the clock: `true` when the time passed, `false` as soon as `signal` aborts. */
	#wait(signal: AbortSignal, ms: number): Promise<boolean> {
		if (signal.aborted) return Promise.resolve(false);
		return new Promise((resolve) => {
			let timer: TimerHandle | undefined;
			const onAbort = (): void => {
				timer?.cancel();
				resolve(false);
			};
			timer = this.#clock.setTimer(ms, () => {
				signal.removeEventListener("abort", onAbort);
				resolve(true);
			});
			signal.addEventListener("abort", onAbort, { once: true });
		});
	}

	async #maintain(leader: Leader<K, V>): Promise<void> {
		const signal = leader.controller.signal;
		const interval = this.#ms(leader.durationSeconds, this.#timings.renewFraction);
		let tick = this.#wait(signal, interval);
		try {
			for (;;) {
				if (!(await tick)) break;
				// Arm the next tick before renewing, so retry time counts toward the interval.
				tick = this.#wait(signal, interval);
				if (!(await this.#renew(leader))) break;
			}
		} catch (error) {
			// Only a throwing killer can get here; never leave a leadership unattended.
			await this.#end(leader, "ELECTIONS_STORAGE_ERROR", error);
		}
		if (leader.ending !== undefined) await leader.ending;
	}

	/** One renewal tick: up to `1 + maxRetries` compare-and-swaps. `false` ends the loop. */
	async #renew(leader: Leader<K, V>): Promise<boolean> {
		const { key, value, durationSeconds, keyString } = leader;
		const signal = leader.controller.signal;
		const t = this.#timings;
		const beforeCAS = this.#ms(durationSeconds, t.killerBeforeCAS);
		const afterRenewal = this.#leaseMs(durationSeconds);
		const retryMs = this.#ms(durationSeconds, t.retryFraction);
		const limit = this.#limitMs(durationSeconds);
		const beforeExpiry = durationSeconds * 1000 - limit;
		let lastError: unknown;
		for (let attempt = 1; attempt <= 1 + t.maxRetries; attempt++) {
			if (signal.aborted) return false;
			// Seed 001: 0.75 d from this attempt. Capped at the margin (plus the clock skew allowed)
			// before the expiry of the last record we wrote (its send time + d): an on-time tick's
			// 0.75 d lands exactly on that expiry, a retry's after it, when another node may lead.
			const sentAt = this.#mono();
			const deadline = Math.min(sentAt + beforeCAS, leader.lastRenewedAt + limit);
			this.#scheduleKiller(
				leader,
				deadline,
				`leadership of ${keyString}: renewal attempt ${attempt} did not finish within ${Math.round(deadline - sentAt)} ms (${beforeExpiry} ms before the last renewed record expires)`,
			);
			let outcome: boolean | typeof ABORTED;
			try {
				outcome = await raceAbort(
					this.#storage.compareAndSwap(key, value, value, durationSeconds),
					signal,
				);
			} catch (error) {
				if (signal.aborted) return false;
				lastError = error;
				this.#emit({ type: "renewal-failed", key, value, at: this.#clock.now(), attempt, error });
				// The retry timer is armed synchronously after the event, so a listener that awaits
				// the event finds it pending.
				if (attempt <= t.maxRetries && !(await this.#wait(signal, retryMs))) return false;
				continue;
			}
			if (outcome === ABORTED || signal.aborted) return false;
			if (!outcome) {
				await this.#end(leader, "ELECTIONS_LOST", undefined);
				return false;
			}
			// The lease deadline passed before this answer was handled (the lease timer runs late
			// on a busy loop): the leadership ended for good; a renewal never revives it.
			if (this.#mono() >= leader.leaseDeadline) {
				await this.#leaseExpired(leader);
				return false;
			}
			leader.renewals++;
			leader.lastRenewedAt = sentAt;
			leader.leaseDeadline = sentAt + afterRenewal;
			this.#armLease(leader);
			this.#scheduleKiller(
				leader,
				leader.leaseDeadline,
				`leadership of ${keyString}: no renewal succeeded within ${afterRenewal} ms of the last successful one (its lease deadline passed)`,
			);
			const returnedAt = this.#mono();
			this.#emit({
				type: "renewed",
				key,
				value,
				at: this.#clock.now(),
				leaseDeadline: leader.leaseDeadline,
				leaseLeftMs: leader.leaseDeadline - returnedAt,
				latencyMs: returnedAt - sentAt,
			});
			return true;
		}
		await this.#end(leader, "ELECTIONS_STORAGE_ERROR", lastError);
		return false;
	}

	/**
	 * Ends a leadership once: forget it locally, abort the signal (first, so nobody acts as leader
	 * while the record is being deleted), then compare-and-delete the record.
	 */
	#end(leader: Leader<K, V>, code: ElectionsErrorCode, cause: unknown): Promise<ReleaseOutcome> {
		if (leader.ending !== undefined) return leader.ending;
		const { key, value, keyString } = leader;
		leader.leaseTimer?.cancel();
		if (this.#leaders.get(keyString) === leader) this.#leaders.delete(keyString);
		const messages: Record<ElectionsErrorCode, string> = {
			ELECTIONS_RELEASED: `leadership of ${keyString} was released`,
			ELECTIONS_LOST: `leadership of ${keyString} was lost: the record changed or is gone`,
			ELECTIONS_STORAGE_ERROR: `leadership of ${keyString} was given up: renewals failed or did not finish before the lease deadline`,
			ELECTIONS_CLEANUP: `leadership of ${keyString} was released by cleanup`,
		};
		leader.controller.abort(
			new ElectionsError(code, messages[code], cause === undefined ? {} : { cause }),
		);
		// A voluntary release: the caller stopped acting as leader, so this key's deadline goes
		// (the killer is disarmed once no key and no lost floor is left). A passed deadline stays
		// final in the killer itself.
		if (code === "ELECTIONS_RELEASED" || code === "ELECTIONS_CLEANUP") this.#applyKiller();
		if (code === "ELECTIONS_LOST" || code === "ELECTIONS_STORAGE_ERROR") {
			if (this.#lostFloor === undefined || leader.killerDeadline < this.#lostFloor.deadline) {
				this.#lostFloor = {
					deadline: leader.killerDeadline,
					reason: `leadership of ${keyString} was lost (${code}) and this process was still running at its deadline`,
				};
			}
			this.#applyKiller();
			this.#emit({
				type: "lost",
				key,
				value,
				at: this.#clock.now(),
				reason: code,
				...(cause === undefined ? {} : { error: cause }),
			});
		}
		leader.ending = (async (): Promise<ReleaseOutcome> => {
			try {
				await this.#deleteOnRelease(key, value);
			} catch (error) {
				this.#emit({ type: "release-failed", key, value, at: this.#clock.now(), error });
				return { ok: false, error };
			}
			this.#emit({ type: "released", key, value, at: this.#clock.now(), reason: code });
			return { ok: true };
		})();
		const ending = leader.ending;
		this.#endings.set(keyString, ending);
		void ending.then(() => {
			if (this.#endings.get(keyString) === ending) this.#endings.delete(keyString);
		});
		return ending;
	}

	async releaseLeadership(key: K): Promise<void> {
		const keyString = this.#keyToString(key);
		const pending = this.#pending.get(keyString);
		if (pending !== undefined) await pending;
		const leader = this.#leaders.get(keyString);
		if (leader === undefined) {
			// Lost a moment ago: let its compare-and-delete finish (its failure was already reported).
			await this.#endings.get(keyString);
			return;
		}
		const outcome = await this.#end(leader, "ELECTIONS_RELEASED", undefined);
		await leader.loop;
		if (!outcome.ok) throw outcome.error;
	}

	cleanup(): Promise<void> {
		this.#cleanup ??= this.#runCleanup();
		return this.#cleanup;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.cleanup();
	}

	currentLeader(key: K): Promise<V | undefined> {
		return this.#storage.get(key);
	}

	async #runCleanup(): Promise<void> {
		this.#finalized = true;
		await Promise.allSettled([...this.#pending.values()]);
		const outcomes = await Promise.all(
			[...this.#leaders.values()].map((leader) =>
				this.#end(leader, "ELECTIONS_CLEANUP", undefined),
			),
		);
		await Promise.all([...this.#loops]);
		const errors = [
			...outcomes.flatMap((o) => (o.ok ? [] : [o.error])),
			...this.#orphanErrors.splice(0),
		];
		if (errors.length > 0) {
			throw new AggregateError(
				errors,
				`[@vvm/ielections] cleanup: ${errors.length} leadership release(s) failed; those records expire by their TTL`,
			);
		}
	}

	leadership(key: K): LeadershipState<V> | undefined {
		const leader = this.#leaders.get(this.#keyToString(key));
		if (leader === undefined) return undefined;
		return Object.freeze({
			value: leader.value,
			durationSeconds: leader.durationSeconds,
			acquiredAt: leader.acquiredAt,
			renewals: leader.renewals,
			lastRenewedAt: leader.lastRenewedAt,
			leaseDeadline: leader.leaseDeadline,
			leaseTimeLeftMs: leader.leaseDeadline - this.#mono(),
			fencingToken: leader.fencingToken,
			signal: leader.controller.signal,
		});
	}
}

/**
 * Creates elections over `storage` with the timings of seed 001 ({@link LEADERSHIP_TIMINGS}).
 *
 * @see server.design.orch/IElections (voedger pkg/ielections Provide)
 * @example
 * ```ts
 * const elections = createElections(vvmLeadershipStorage(driver), { onEvent: log });
 * const signal = await elections.acquireLeadership(1, "10.0.0.1", 20);
 * ```
 */
export function createElections<K, V>(
	storage: ITTLStorage<K, V>,
	options: ElectionsOptions<K, V> = {},
): Elections<K, V> {
	return new ElectionsImpl(storage, options, {});
}

/**
 * {@link createElections} with overridden internals, for the package's mutation tests only.
 * @internal
 */
export function createElectionsWithInternals<K, V>(
	storage: ITTLStorage<K, V>,
	options: ElectionsOptions<K, V>,
	internals: ElectionsInternals<K, V>,
): Elections<K, V> {
	return new ElectionsImpl(storage, options, internals);
}
