import type { Clock } from "@vvm/clock";
import { MockClock, systemClock } from "@vvm/clock";
import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual, fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type { FaultyTTLStorage, SuiteCase } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import type { Elections, ElectionsOptions } from "../elections.ts";
import { createElections } from "../elections.ts";
import { createElectionsStorage } from "../elections-storage.ts";
import type { ElectionsErrorCode } from "../errors.ts";
import { ElectionsError } from "../errors.ts";
import type { LeadershipEvent } from "../events.ts";
import { LEADERSHIP_TIMINGS } from "../timings.ts";
import type { ITTLStorage } from "../ttl-storage.ts";
import { RecordingKiller } from "./recording-killer.ts";

export type { SuiteCase } from "@vvm/ttlstorage/testing";

/** Options of {@link electionsTestSuite}. */
export interface ElectionsSuiteOptions {
	/**
	 * A `TTLStorage` DRIVER for one case; the suite adapts it to `ITTLStorage<string, string>` with
	 * a run-unique `pKey` prefix, so a shared backend is fine. In `"mock"` time the driver must
	 * compare expiry with `ctx.clock` (the `MockClock` the elections run on).
	 */
	readonly createStorage: (ctx: { clock: Clock }) => TTLStorage | Promise<TTLStorage>;
	/** Called after each case; default `storage.close()`. */
	readonly disposeStorage?: (s: TTLStorage) => void | Promise<void>;
	/**
	 * `"mock"` (default): elections and driver share a `MockClock` the suite moves.
	 * `"real"`: the server enforces TTL in real time (Cassandra); cases use 2 s leaderships and wait
	 * real time; cases that check exact timings are left out.
	 */
	readonly time?: "mock" | "real";
	/** Skip the whole suite with this reason (`false` runs it). */
	readonly skip?: false | string;
	/** Case names to leave out, each with a reason in the caller's code. */
	readonly skipTests?: readonly string[];
	/** Per-case timeout; default 30 s (60 s in real time). */
	readonly timeoutMs?: number;
	/**
	 * Builds the elections under test; default `createElections`. For the package's own mutation
	 * tests only.
	 * @internal
	 */
	readonly createElections?: (
		storage: ITTLStorage<string, string>,
		options: ElectionsOptions<string, string>,
	) => Elections<string, string>;
}

type Event = LeadershipEvent<string, string>;

/** Events of one elections instance, with waits that fail instead of hanging. */
class EventLog {
	readonly events: Event[] = [];
	#waiters: Array<() => void> = [];
	readonly #guardMs: number;

	constructor(guardMs: number) {
		this.#guardMs = guardMs;
	}

	readonly push = (event: Event): void => {
		this.events.push(event);
		const waiters = this.#waiters;
		this.#waiters = [];
		for (const w of waiters) w();
	};

	of<T extends Event["type"]>(type: T): Array<Extract<Event, { type: T }>> {
		return this.events.filter((e): e is Extract<Event, { type: T }> => e.type === type);
	}

	/** Resolves with the `n`-th event of `type` (1-based), failing after a real-time guard. */
	nth<T extends Event["type"]>(type: T, n = 1): Promise<Extract<Event, { type: T }>> {
		return this.#first(
			(e): e is Extract<Event, { type: T }> => e.type === type,
			n,
			`${n} "${type}" event(s)`,
		);
	}

	/** Resolves with the first end of a leadership: `released` or `release-failed`. */
	ending(): Promise<Extract<Event, { type: "released" | "release-failed" }>> {
		return this.#first(
			(e): e is Extract<Event, { type: "released" | "release-failed" }> =>
				e.type === "released" || e.type === "release-failed",
			1,
			'a "released" or "release-failed" event',
		);
	}

	async #first<E extends Event>(is: (e: Event) => e is E, n: number, what: string): Promise<E> {
		const started = performance.now();
		for (;;) {
			const found = this.events.filter(is)[n - 1];
			if (found !== undefined) return found;
			const left = this.#guardMs - (performance.now() - started);
			if (left <= 0) {
				throw new Error(
					`expected ${what} within ${this.#guardMs} ms; got: ${this.events.map((e) => e.type).join(", ") || "none"}`,
				);
			}
			await new Promise<void>((resolve) => {
				const guard = setTimeout(resolve, left);
				this.#waiters.push(() => {
					clearTimeout(guard);
					resolve();
				});
			});
		}
	}
}

/** Rejects if `p` does not settle within `ms` of real time: turns a deadlock into a failure. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
	let guard: NodeJS.Timeout | undefined;
	try {
		return await Promise.race([
			p,
			new Promise<never>((_, reject) => {
				guard = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
			}),
		]);
	} finally {
		clearTimeout(guard);
	}
}

function gate(): { open: () => void; wait: Promise<void> } {
	let open!: () => void;
	const wait = new Promise<void>((resolve) => {
		open = resolve;
	});
	return { open, wait };
}

/**
 * Makes the next compare-and-swap hang, moves time to the next renewal tick and waits until that
 * renewal is in flight; `open()` lets the call through.
 */
async function hangNextRenewal(f: Fixture): Promise<{ open: () => void }> {
	const cas = gate();
	const started = gate();
	f.driver.inject({
		on: "compareAndSwap",
		times: 1,
		action: faults.hook(async () => {
			started.open();
			await cas.wait;
		}),
	});
	f.advance(f.interval(f.d));
	await within(started.wait, f.guardMs, "the renewal");
	return cas;
}

/**
 * `elector` acquires `k` as soon as the record of a leader whose renewal hangs has expired (mock:
 * at the expiry; real: polling); fails when it cannot within the guard.
 */
async function takeOverAfterExpiry(
	f: Fixture,
	elector: Elector,
	k: string,
	value: string,
): Promise<AbortSignal> {
	let signal: AbortSignal | undefined;
	if (f.mock) {
		(f.clock as MockClock).advance(f.d * 1000 - f.interval(f.d));
		signal = await elector.elections.acquireLeadership(k, value, f.d);
	} else {
		const until = performance.now() + f.guardMs;
		while (signal === undefined && performance.now() < until) {
			signal = await elector.elections.acquireLeadership(k, value, f.d);
			if (signal === undefined) await systemClock.sleep(100);
		}
	}
	expect(signal, `${value} could not take the expired key`).toBeDefined();
	return signal as AbortSignal;
}

interface Elector {
	readonly elections: Elections<string, string>;
	readonly killer: RecordingKiller;
	readonly log: EventLog;
}

interface Fixture extends Elector {
	readonly clock: Clock;
	readonly mock: boolean;
	/** The driver as the elections see it, for fault injection and call counts. */
	readonly driver: FaultyTTLStorage;
	readonly storage: ITTLStorage<string, string>;
	/** Default leadership duration in seconds: 10 (mock), 2 (real). */
	readonly d: number;
	/** Renewal interval of a `seconds` leadership, in ms. */
	interval(seconds: number): number;
	/** Another elections instance ("another process") on the same storage. */
	elector(): Elector;
	key(): string;
	/** Mock: moves the clock by `ms` (firing due timers). Real: nothing; timers fire by themselves. */
	advance(ms: number): void;
	/** Lets `ms` pass: mock advances the clock, real waits. */
	pass(ms: number): Promise<void>;
	/** Real-time guard for waits that must not hang. */
	readonly guardMs: number;
	/** Compare-and-swap calls whose old value is `value`. */
	casCalls(value: string): number;
}

let runCounter = 0;
const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;

function expectReason(signal: AbortSignal | undefined, code: ElectionsErrorCode): void {
	expect(signal?.aborted, "signal should be aborted").toBe(true);
	const reason: unknown = signal?.reason;
	expect(
		ElectionsError.is(reason),
		`reason should be an ElectionsError, got ${String(reason)}`,
	).toBe(true);
	expect((reason as ElectionsError).code).toBe(code);
}

type CaseBody = (f: Fixture) => Promise<void>;

function defineCases(time: "mock" | "real"): Array<[string, CaseBody]> {
	const mock = time === "mock";
	const T = LEADERSHIP_TIMINGS;
	const cases: Array<[string, CaseBody]> = [
		// --- voedger ElectionsTestSuite (pkg/ielections/impl_testsuite.go), one-to-one ---
		[
			"BasicUsage",
			async (f) => {
				const k = f.key();
				const t0 = f.clock.monotonic();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				expect(signal).toBeDefined();
				expect(signal?.aborted).toBe(false);
				expect(await f.storage.get(k)).toBe("v");
				const state = f.elections.leadership(k);
				expect(state?.value).toBe("v");
				expect(state?.durationSeconds).toBe(f.d);
				expect(state?.signal).toBe(signal);
				expect(state?.renewals).toBe(0);
				expect(state?.lastRenewedAt).toBeGreaterThanOrEqual(t0);
				expect(state?.leaseDeadline).toBe(
					(state?.lastRenewedAt ?? 0) + f.d * 1000 * T.killerAfterRenewal,
				);
				await f.elections.releaseLeadership(k);
				expectReason(signal, "ELECTIONS_RELEASED");
				expect(f.elections.leadership(k)).toBeUndefined();
				expect(await f.storage.get(k)).toBeUndefined();
				expect(f.log.events.map((e) => e.type)).toEqual(["acquired", "released"]);
			},
		],
		[
			"AcquireLeadershipIfAcquiredAlready",
			async (f) => {
				const k = f.key();
				expect(await f.storage.insertIfNotExist(k, "v1", f.d)).toBe(true);
				expect(await f.elections.acquireLeadership(k, "v2", f.d)).toBeUndefined();
				expect((await f.log.nth("acquire-failed")).reason).toBe("held");
				expect(await f.storage.get(k)).toBe("v1");
				// Held locally: refused without touching storage.
				const k2 = f.key();
				expect(await f.elections.acquireLeadership(k2, "v", f.d)).toBeDefined();
				const inserts = f.driver.count("insertIfNotExists");
				expect(await f.elections.acquireLeadership(k2, "v", f.d)).toBeUndefined();
				expect(f.driver.count("insertIfNotExists")).toBe(inserts);
				expect(f.elections.leadership(k2)?.signal.aborted).toBe(false);
			},
		],
		[
			"CloseContextOnCompareAndSwapFailure_KeyChanged",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v1", f.d);
				expect(signal).toBeDefined();
				expect(await f.storage.compareAndSwap(k, "v1", "v2", 2 * f.d)).toBe(true);
				f.advance(f.interval(f.d));
				expect((await f.log.nth("lost")).reason).toBe("ELECTIONS_LOST");
				await f.log.nth("released");
				expectReason(signal, "ELECTIONS_LOST");
				// The release must never delete someone else's value.
				expect(await f.storage.get(k)).toBe("v2");
				expect(f.elections.leadership(k)).toBeUndefined();
			},
		],
		[
			"CloseContextOnCompareAndSwapFailure_KeyDeleted",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				expect(await f.storage.compareAndDelete(k, "v")).toBe(true);
				f.advance(f.interval(f.d));
				expect((await f.log.nth("lost")).reason).toBe("ELECTIONS_LOST");
				expectReason(signal, "ELECTIONS_LOST");
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		[
			"ReleaseLeadershipWithoutAcquire",
			async (f) => {
				const held = f.key();
				const signal = await f.elections.acquireLeadership(held, "v", f.d);
				await f.elections.releaseLeadership(f.key());
				expect(signal?.aborted).toBe(false);
				expect(await f.storage.get(held)).toBe("v");
				expect(f.log.events.map((e) => e.type)).toEqual(["acquired"]);
				expect(f.driver.count("compareAndDelete")).toBe(0);
			},
		],
		[
			"AcquireFailingAfterCleanup",
			async (f) => {
				const k1 = f.key();
				const signal = await f.elections.acquireLeadership(k1, "v", f.d);
				expect(signal).toBeDefined();
				await within(f.elections.cleanup(), f.guardMs, "cleanup");
				expectReason(signal, "ELECTIONS_CLEANUP");
				expect(await f.storage.get(k1)).toBeUndefined();
				const k2 = f.key();
				expect(await f.elections.acquireLeadership(k2, "v", f.d)).toBeUndefined();
				expect((await f.log.nth("acquire-failed")).reason).toBe("finalized");
				expect(await f.storage.get(k2)).toBeUndefined();
				await within(f.elections.cleanup(), f.guardMs, "second cleanup");
			},
		],
		[
			"CleanupDuringRenewal",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				f.advance(f.interval(f.d));
				await f.log.nth("renewed");
				await within(f.elections.cleanup(), f.guardMs, "cleanup");
				expectReason(signal, "ELECTIONS_CLEANUP");
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		// --- voedger pkg/ielections/impl_test.go retry tests, adapted to seed 001 (3 attempts, d/20 apart) ---
		[
			"TransientErrorRecovery",
			async (f) => {
				const d = mock ? 40 : f.d;
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", d);
				f.driver.inject({ on: "compareAndSwap", action: faults.fail(), times: 2 });
				f.advance(f.interval(d));
				expect((await f.log.nth("renewal-failed", 1)).attempt).toBe(1);
				expect(signal?.aborted).toBe(false);
				f.advance(d * 1000 * T.retryFraction);
				expect((await f.log.nth("renewal-failed", 2)).attempt).toBe(2);
				expect(signal?.aborted).toBe(false);
				f.advance(d * 1000 * T.retryFraction);
				await f.log.nth("renewed");
				expect(f.driver.count("compareAndSwap")).toBe(3);
				expect(signal?.aborted).toBe(false);
				expect(f.elections.leadership(k)?.renewals).toBe(1);
				expect(f.log.of("lost")).toEqual([]);
				await f.elections.releaseLeadership(k);
				expectReason(signal, "ELECTIONS_RELEASED");
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		[
			"AcquireLeadershipFailureAfterCompareAndSwapError",
			async (f) => {
				const d = mock ? 40 : f.d;
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", d);
				f.driver.inject({ on: "compareAndSwap", action: faults.fail() });
				f.advance(f.interval(d));
				await f.log.nth("renewal-failed", 1);
				expect(signal?.aborted).toBe(false);
				f.advance(d * 1000 * T.retryFraction);
				await f.log.nth("renewal-failed", 2);
				expect(signal?.aborted, "gave up after 2 attempts; seed 001 makes 3").toBe(false);
				f.advance(d * 1000 * T.retryFraction);
				await f.log.nth("renewal-failed", 3);
				const lost = await f.log.nth("lost");
				expect(lost.reason).toBe("ELECTIONS_STORAGE_ERROR");
				expect(TTLStorageError.is(lost.error)).toBe(true);
				expectReason(signal, "ELECTIONS_STORAGE_ERROR");
				const reason: unknown = signal?.reason;
				expect(TTLStorageError.is((reason as ElectionsError).cause)).toBe(true);
				expect(f.driver.count("compareAndSwap")).toBe(3);
				await f.log.nth("released");
				expect(await f.storage.get(k)).toBeUndefined();
				await f.pass(2 * f.interval(d));
				expect(f.driver.count("compareAndSwap"), "renewed after giving up").toBe(3);
			},
		],
		[
			"CleanupDuringCompareAndSwapRetries",
			async (f) => {
				const d = mock ? 40 : f.d;
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", d);
				f.driver.inject({ on: "compareAndSwap", action: faults.fail() });
				f.advance(f.interval(d));
				await f.log.nth("renewal-failed", 1);
				f.advance(d * 1000 * T.retryFraction);
				await f.log.nth("renewal-failed", 2);
				// The loop now waits on its retry timer.
				await within(f.elections.cleanup(), f.guardMs, "cleanup during retries");
				expectReason(signal, "ELECTIONS_CLEANUP");
				const calls = f.driver.count("compareAndSwap");
				await f.pass(2 * f.interval(d));
				expect(f.driver.count("compareAndSwap")).toBe(calls);
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		// --- beyond the Go suite ---
		[
			"RenewalKeepsTheRecordAlivePastItsFirstTTL",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				const ticks = 6; // 1.5 d
				for (let i = 1; i <= ticks; i++) {
					f.advance(f.interval(f.d));
					await f.log.nth("renewed", i);
				}
				expect(signal?.aborted).toBe(false);
				expect(await f.storage.get(k)).toBe("v");
				expect(f.elections.leadership(k)?.renewals).toBe(ticks);
				expect(f.killer.firedAt(), "the killer would have fired on a healthy leader").toBe(
					undefined,
				);
			},
		],
		[
			"ExpiredAndTakenOver: a leader whose record expired and was taken by another never renews again",
			async (f) => {
				const k = f.key();
				const signalA = await f.elections.acquireLeadership(k, "A", f.d);
				const cas = await hangNextRenewal(f);
				// A's renewal hangs while its record expires; B takes the key.
				const b = f.elector();
				const signalB = await takeOverAfterExpiry(f, b, k, "B");
				const takeover = f.clock.monotonic();
				if (mock) {
					// B took over exactly at expiry: A's killer (armed before its hanging attempt) is due.
					const firedA = f.killer.firedAt(takeover);
					expect(firedA, "A's killer had not fired when B took over").toBeDefined();
					expect(firedA).toBeLessThanOrEqual(takeover);
				}
				// A's signal aborted at its local lease deadline, before B could take over, even though
				// its renewal call still hangs.
				expect(signalA?.aborted, "A still acted as leader when B took over").toBe(true);
				expectReason(signalA, "ELECTIONS_STORAGE_ERROR");
				expect((await f.log.nth("lost")).reason).toBe("ELECTIONS_STORAGE_ERROR");
				cas.open();
				// A's compare-and-delete ran when it gave up. On a real cluster under load it may time
				// out: "release-failed" with the storage's error is then the honest end (A's record
				// expires by its TTL, which is what let B in). A fake storage always answers.
				const end = await f.log.ending();
				if (end.type === "release-failed") {
					expect(mock, "a release failed on a storage that always answers").toBe(false);
					expect(TTLStorageError.is(end.error), `release failed with ${String(end.error)}`).toBe(
						true,
					);
				}
				expect(await f.storage.get(k)).toBe("B");
				expect(f.elections.leadership(k)).toBeUndefined();
				const aCalls = f.casCalls("A");
				for (let i = 1; i <= 2; i++) {
					f.advance(f.interval(f.d));
					await b.log.nth("renewed", i);
				}
				expect(f.casCalls("A"), "A renewed after losing").toBe(aCalls);
				expect(signalB?.aborted).toBe(false);
				expect(await f.storage.get(k)).toBe("B");
			},
		],
		[
			"FencingTokens: every acquisition of a key gets a greater token (release, restart, expiry and takeover)",
			async (f) => {
				const k = f.key();
				const tokens: number[] = [];
				const record = (e: Elector): void => {
					const token = e.elections.leadership(k)?.fencingToken;
					expect(token, "no fencing token").toBeTypeOf("number");
					expect(e.log.of("acquired").at(-1)?.fencingToken).toBe(token);
					tokens.push(token as number);
				};
				expect(await f.elections.acquireLeadership(k, "A", f.d)).toBeDefined();
				record(f);
				await f.elections.releaseLeadership(k);
				expect(await f.elections.acquireLeadership(k, "A", f.d)).toBeDefined();
				record(f);
				await f.elections.releaseLeadership(k);
				const restarted = f.elector(); // another process on the same storage
				expect(await restarted.elections.acquireLeadership(k, "B", f.d)).toBeDefined();
				record(restarted);
				await restarted.elections.releaseLeadership(k);
				// A leads again; its renewal hangs while its record expires; C takes the key over.
				expect(await f.elections.acquireLeadership(k, "A", f.d)).toBeDefined();
				record(f);
				const cas = await hangNextRenewal(f);
				const c = f.elector();
				await takeOverAfterExpiry(f, c, k, "C");
				record(c);
				cas.open();
				expect(tokens[0]).toBeGreaterThanOrEqual(1);
				for (let i = 1; i < tokens.length; i++) {
					expect(tokens[i], `token ${i} after ${tokens.join(", ")}`).toBeGreaterThan(
						tokens[i - 1] as number,
					);
				}
			},
		],
		[
			"Race: 10 electors for one key through one storage give exactly one leader",
			async (f) => {
				const k = f.key();
				let lastToken = 0;
				for (let round = 0; round < 2; round++) {
					const electors = Array.from({ length: 10 }, () => f.elector());
					const signals = await Promise.all(
						electors.map((e, i) => e.elections.acquireLeadership(k, `v${round}-${i}`, f.d)),
					);
					const winners = signals.flatMap((s, i) => (s === undefined ? [] : [i]));
					expect(winners).toHaveLength(1);
					const w = winners[0] as number;
					expect(await f.storage.get(k)).toBe(`v${round}-${w}`);
					const token = (electors[w] as Elector).elections.leadership(k)?.fencingToken ?? 0;
					expect(token, "the winner's token is greater than the last round's").toBeGreaterThan(
						lastToken,
					);
					lastToken = token;
					for (const [i, e] of electors.entries()) {
						if (i !== w) expect(e.log.of("acquire-failed")[0]?.reason).toBe("held");
					}
					await (electors[w] as Elector).elections.releaseLeadership(k);
					expect(await f.storage.get(k)).toBeUndefined();
				}
			},
		],
		[
			"Cleanup during an in-flight compare-and-swap ends without waiting for it",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				const cas = await hangNextRenewal(f);
				const first = f.elections.cleanup();
				expect(f.elections.cleanup()).toBe(first);
				await within(first, f.guardMs, "cleanup with a hanging compare-and-swap");
				expectReason(signal, "ELECTIONS_CLEANUP");
				cas.open();
				await f.pass(2 * f.interval(f.d));
				expect(f.log.of("renewed")).toEqual([]);
				expect(f.driver.count("compareAndSwap")).toBe(1);
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		[
			"Cleanup during a pending acquisition waits for it and releases what it inserted",
			async (f) => {
				const k = f.key();
				const insert = gate();
				f.driver.inject({
					on: "insertIfNotExists",
					times: 1,
					action: faults.hook(() => insert.wait),
				});
				const acquiring = f.elections.acquireLeadership(k, "v", f.d);
				let cleaned = false;
				const cleanup = f.elections.cleanup().then(() => {
					cleaned = true;
				});
				await new Promise<void>((resolve) => setImmediate(resolve));
				expect(cleaned, "cleanup finished before the pending acquisition").toBe(false);
				insert.open();
				expect(await within(acquiring, f.guardMs, "acquisition")).toBeUndefined();
				await within(cleanup, f.guardMs, "cleanup");
				expect(await f.storage.get(k)).toBeUndefined();
			},
		],
		[
			"ReleaseLeadership rejects with the storage error after cleaning local state",
			async (f) => {
				const k = f.key();
				const signal = await f.elections.acquireLeadership(k, "v", f.d);
				f.driver.inject({ on: "compareAndDelete", action: faults.fail(), times: 1 });
				const error = await f.elections.releaseLeadership(k).then(
					() => undefined,
					(e: unknown) => e,
				);
				expect(TTLStorageError.is(error)).toBe(true);
				expectReason(signal, "ELECTIONS_RELEASED");
				expect(f.elections.leadership(k)).toBeUndefined();
				expect((await f.log.nth("release-failed")).error).toBe(error);
				// Cleanup reports release failures as an AggregateError, after releasing everything.
				const k2 = f.key();
				const k3 = f.key();
				const s2 = await f.elections.acquireLeadership(k2, "v", f.d);
				const s3 = await f.elections.acquireLeadership(k3, "v", f.d);
				f.driver.inject({ on: "compareAndDelete", action: faults.fail(), times: 1 });
				const agg = await f.elections.cleanup().then(
					() => undefined,
					(e: unknown) => e,
				);
				expect(agg).toBeInstanceOf(AggregateError);
				expect((agg as AggregateError).errors).toHaveLength(1);
				expect(s2?.aborted && s3?.aborted).toBe(true);
			},
		],
		[
			"Bad durations are rejected with a RangeError before any I/O",
			async (f) => {
				for (const bad of [0, -1, 1.5, 31_536_001, Number.NaN, Number.POSITIVE_INFINITY]) {
					await expect(f.elections.acquireLeadership(f.key(), "v", bad)).rejects.toBeInstanceOf(
						RangeError,
					);
				}
				expect(f.driver.calls).toHaveLength(0);
				expect(await f.elections.acquireLeadership(f.key(), "v", 31_536_000)).toBeDefined();
			},
		],
	];
	if (mock) {
		cases.push([
			"FencingTokenOnlyWithinTheLease: a token that comes after the lease deadline is not used and the record is undone",
			async (f) => {
				const k = f.key();
				const clock = f.clock as MockClock;
				// The counter read (the first `get` of the acquisition) takes the whole lease.
				f.driver.inject({
					on: "get",
					times: 1,
					action: faults.hook(() => {
						clock.advance(f.d * 1000 * T.killerAfterRenewal);
					}),
				});
				expect(await f.elections.acquireLeadership(k, "A", f.d)).toBeUndefined();
				expect(f.log.of("acquire-failed")[0]?.reason).toBe("storage-error");
				expect(await f.storage.get(k), "the record was not undone").toBeUndefined();
				expect(f.killer.scheduled, "nothing was armed").toEqual([]);
				// The next acquisition gets a token again.
				expect(await f.elections.acquireLeadership(k, "A", f.d)).toBeDefined();
				expect(f.elections.leadership(k)?.fencingToken).toBeGreaterThanOrEqual(1);
			},
		]);
		cases.push([
			"KillerDeadlines: renewal every d/4, killer at exactly 0.8 d and 0.75 d (capped at the record's expiry minus the margin), retries d/20 apart",
			async (f) => {
				const d = 20;
				const k = f.key();
				const clock = f.clock as MockClock;
				const t0 = clock.monotonic();
				const margin = d * 1000 * T.killerMargin; // 500 ms
				const signal = await f.elections.acquireLeadership(k, "v", d);
				const got = (): Array<[number, number]> =>
					f.killer.scheduled.map((s) => [s.at - t0, s.delayMs]);
				expect(got()).toEqual([[0, 16_000]]);
				clock.advance(4_999);
				await new Promise<void>((resolve) => setImmediate(resolve));
				expect(f.driver.count("compareAndSwap"), "renewed before d/4").toBe(0);
				clock.advance(1);
				await f.log.nth("renewed", 1);
				expect(f.driver.count("compareAndSwap")).toBe(1);
				// An on-time tick's 0.75 d lands exactly on the record's expiry (d after the insert was
				// sent): the margin moves it earlier.
				expect(got()).toEqual([
					[0, 16_000],
					[5_000, 15_000 - margin],
					[5_000, 16_000],
				]);
				expect(f.elections.leadership(k)?.leaseDeadline).toBe(t0 + 5_000 + 16_000);
				// A failed attempt: the retry comes d/20 later, with its own 0.75 d deadline.
				f.driver.inject({ on: "compareAndSwap", action: faults.fail(), times: 1 });
				clock.advance(5_000);
				await f.log.nth("renewal-failed", 1);
				clock.advance(999);
				await new Promise<void>((resolve) => setImmediate(resolve));
				expect(f.driver.count("compareAndSwap"), "retried before d/20").toBe(2);
				clock.advance(1);
				await f.log.nth("renewed", 2);
				// Both attempts are capped at the expiry of the last record written (5 s + d) minus the
				// margin; the retry's 0.75 d would fall after that expiry.
				expect(got().slice(3)).toEqual([
					[10_000, 15_000 - margin],
					[11_000, 14_000 - margin],
					[11_000, 16_000],
				]);
				// The next tick stays on the d/4 grid: retry time counts toward the interval. Its
				// attempt is 4 s after the last renewal, so the seed's 0.75 d applies uncapped.
				clock.advance(3_999);
				await new Promise<void>((resolve) => setImmediate(resolve));
				expect(f.driver.count("compareAndSwap")).toBe(3);
				clock.advance(1);
				await f.log.nth("renewed", 3);
				expect(got().slice(6)).toEqual([
					[15_000, 15_000],
					[15_000, 16_000],
				]);
				expect(f.killer.firedAt()).toBeUndefined();
				expect(signal?.aborted).toBe(false);
			},
		]);
	}
	return cases;
}

/**
 * The cases of {@link electionsTestSuite} as plain functions, so a test can run them against
 * deliberately broken elections or drivers and assert that the suite catches it.
 *
 * @example
 * ```ts
 * for (const c of electionsCases({ createStorage: ({ clock }) => createMemTTLStorage({ clock }) }))
 *   await c.run();
 * ```
 */
export function electionsCases(options: ElectionsSuiteOptions): SuiteCase[] {
	const time = options.time ?? "mock";
	const mock = time === "mock";
	const skipped = new Set(options.skipTests ?? []);
	const build = options.createElections ?? createElections;
	return defineCases(time)
		.filter(([name]) => !skipped.has(name))
		.map(([name, body]) => ({
			name,
			async run() {
				const clock: Clock = mock ? new MockClock() : systemClock;
				const raw = await options.createStorage({ clock });
				const driver = withFaults(raw, { clock });
				const prefix = utf8(`elections/${runId}/${++runCounter}`);
				const storage = createElectionsStorage<string, string>(driver, {
					pKey: () => prefix,
					cCols: (key) => utf8(key),
					encodeValue: (value) => utf8(value),
					decodeValue: (bytes) => fromUtf8(bytes),
				});
				const guardMs = mock ? 5_000 : 20_000;
				const electors: Elector[] = [];
				const elector = (): Elector => {
					const killer = new RecordingKiller(clock);
					const log = new EventLog(guardMs);
					const elections = build(storage, { clock, killer, onEvent: log.push });
					const e = { elections, killer, log };
					electors.push(e);
					return e;
				};
				const main = elector();
				let keys = 0;
				const valueBytes = (value: string): Bytes => utf8(value);
				const fixture: Fixture = {
					...main,
					clock,
					mock,
					driver,
					storage,
					d: mock ? 10 : 2,
					interval: (seconds) => seconds * 1000 * LEADERSHIP_TIMINGS.renewFraction,
					elector,
					key: () => `key${++keys}`,
					advance(ms) {
						if (clock instanceof MockClock) clock.advance(ms);
					},
					async pass(ms) {
						if (clock instanceof MockClock) await clock.advanceAsync(ms);
						else await systemClock.sleep(ms);
					},
					guardMs,
					casCalls: (value) =>
						driver.calls.filter(
							(c) =>
								c.operation === "compareAndSwap" &&
								bytesEqual(c.args[2] as Bytes, valueBytes(value)),
						).length,
				};
				try {
					await body(fixture);
				} finally {
					driver.clear();
					await Promise.allSettled(
						electors.map((e) => within(e.elections.cleanup(), guardMs, "final cleanup")),
					);
					await (options.disposeStorage ?? ((s) => s.close()))(raw);
				}
			},
		}));
}

/**
 * The elections suite over a `TTLStorage` driver: voedger's `ElectionsTestSuite` cases under their
 * Go names, the three retry tests adapted to seed 001, exact killer deadlines and renewal timing,
 * takeover after expiry, 10 electors racing, and cleanup racing renewals, retries and
 * acquisitions. Call it once per driver configuration, in a vitest file.
 *
 * @example
 * ```ts
 * import { electionsTestSuite } from "@vvm/ielections/testing";
 * electionsTestSuite("ttlstorage-mem", { createStorage: ({ clock }) => createMemTTLStorage({ clock }) });
 * ```
 */
export function electionsTestSuite(name: string, options: ElectionsSuiteOptions): void {
	const real = options.time === "real";
	const timeout = options.timeoutMs ?? (real ? 60_000 : 30_000);
	const body = (): void => {
		for (const testCase of electionsCases(options)) {
			(real ? it.concurrent : it)(testCase.name, () => testCase.run(), timeout);
		}
	};
	// The caller's reason (e.g. "Cassandra is not reachable at …") is shown in the skipped title;
	// real-server gates throw instead of skipping in CI (see @vvm/vitest-config/servers).
	if (options.skip) describe.skip(`${name} [skipped: ${options.skip}]`, body);
	else describe(`${name}: electionsTestSuite`, body);
}
