// The static placement: partition p belongs to the VVM slot (p mod numVVM) + 1 and is served by
// that slot's leader (@vvm/orch), only while its lease is valid, under an epoch taken from the
// partition's own counter (not the slot's token: review 5, F2), and only under the cluster's
// stored numVVM.
import type { Clock, TimerHandle } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import { checkPartitions } from "@vvm/cp";
import type { Logger } from "@vvm/log";
import { silentLogger } from "@vvm/log";
import type { VVMLeadership, VVMService, VVMServiceContext } from "@vvm/orch";
import { checkVVMTimings, parseLeaderValue } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { EpochRetryOptions } from "./options.ts";
import { epochRetryDelay, resolveEpochRetry } from "./options.ts";
import {
	checkStaticNumVVM,
	DEFAULT_PLACEMENT_NAMESPACE,
	NumVVMMismatchError,
	readStaticNumVVM,
	takePartitionEpoch,
} from "./partition-epochs.ts";
import type { PartitionHolder, PartitionPlacement, PlacementHandlers } from "./placement.ts";
import { abortable, locateBy } from "./placement.ts";

/** Options of {@link createStaticPlacement}. */
export interface StaticPlacementOptions {
	/** Partitions `0 .. partitions - 1`; the same on every VVM. */
	readonly partitions: number;
	/**
	 * The VVM slots (`VVMConfig.numVVM`); slot s serves the partitions p with p mod numVVM = s - 1.
	 * Must equal the cluster's stored numVVM (the first VVM stores it): otherwise `start()` and
	 * every leadership's service start reject with {@link NumVVMMismatchError}, and a running
	 * placement that sees the stored value change stops serving. Change it with
	 * `changeStaticNumVVM` (README, "Changing numVVM").
	 */
	readonly numVVM: number;
	/**
	 * Where the partitions' epochs and the cluster's numVVM are kept: the same storage (keyspace) as
	 * the command processor's and every other VVM's.
	 */
	readonly storage: TTLStorage;
	/**
	 * Prefix of those records' keys (`<namespace>/partition-epochs`, `<namespace>/static-placement`);
	 * default `"vvm"`. Give the leases placement's `namespace` so a switch between the two keeps
	 * one epoch counter per partition.
	 */
	readonly namespace?: string;
	/** Deploy and undeploy partitions here (`deployCpPartitions(cp).handlers`). */
	readonly handlers: PlacementHandlers;
	/** This VVM's leadership (`vvm.leadership()`), `undefined` while it holds none. */
	readonly leadership: () => VVMLeadership | undefined;
	/** The value of a slot's leader record (`address#nonce`), `undefined` when free. */
	readonly leaderOf: (slot: number) => Promise<string | undefined>;
	/** How often the other slots' leader records are read for 421 answers; default 1000 ms. */
	readonly holderRefreshMs?: number;
	/**
	 * How a partition's epoch is taken again after a storage error, within the leadership: waits
	 * of 100 ms doubling to 5 s by default, until the leadership ends or the placement closes;
	 * `giveUpAfterMs` gives the slot up instead (README, "Partition epochs"). Checked by
	 * {@link resolveEpochRetry}.
	 */
	readonly epochRetry?: EpochRetryOptions;
	/** Default `systemClock` (its monotonic time and timers pace the epoch retries). */
	readonly clock?: Clock;
	/** Grants, ends, failed epoch takes (each one, at error) and declined deploys; default silent. */
	readonly logger?: Logger;
}

/**
 * Why a static placement gave its slot up: partitions of the slot still had no epoch
 * `giveUpAfterMs` after the leadership began (`epochRetry.giveUpAfterMs`; code
 * `APPPARTS_EPOCH_UNAVAILABLE`). The placement's service `start` rejects with it, so the VVM
 * reports a problem, shuts down and releases the slot for another VVM. `cause` is the last
 * storage error.
 *
 * @example
 * ```ts
 * if (vvm.problem()?.cause instanceof PartitionEpochUnavailableError) alertOperator();
 * ```
 */
export class PartitionEpochUnavailableError extends Error {
	readonly code = "APPPARTS_EPOCH_UNAVAILABLE";
	/** The slot given up. */
	readonly slot: number;
	/** The partitions of the slot that had no epoch, ascending. */
	readonly partitions: readonly number[];
	constructor(slot: number, partitions: readonly number[], afterMs: number, cause: unknown) {
		super(
			`[@vvm/appparts] giving slot ${slot} up: partition(s) ${partitions.join(", ")} still have no ` +
				`epoch ${afterMs} ms after the leadership began (the storage keeps failing: ${String(cause)})`,
			{ cause },
		);
		this.name = "PartitionEpochUnavailableError";
		this.slot = slot;
		this.partitions = partitions;
	}
}

/** The static placement; its `service` runs in the VVM and deploys the slot's partitions. */
export interface StaticPlacement extends PartitionPlacement {
	readonly mode: "static";
	/** Deploys the slot's partitions once the VVM leads; undeploys them when it stops leading. */
	readonly service: VVMService;
}

/** The slot whose leader serves `partition`: `(partition mod numVVM) + 1`. */
export function staticSlotOf(partition: number, numVVM: number): number {
	return (partition % numVVM) + 1;
}

/** The partitions of `slot`, ascending. */
export function staticPartitionsOf(slot: number, numVVM: number, partitions: number): number[] {
	const out: number[] = [];
	for (let p = slot - 1; p < partitions; p += numVVM) out.push(p);
	return out;
}

/** How many times `start()` reads the stored numVVM when the storage fails, before it rejects. */
const START_CHECK_ATTEMPTS = 5;

interface Grant {
	readonly ctl: AbortController;
	ready: boolean;
	/** The partition's epoch taken for this grant, once taken: served from then on. */
	epoch: bigint | undefined;
	/** Failed takes of the epoch in this leadership. */
	failures: number;
	/** The last failed take's error. */
	lastError: unknown;
	/** Handed to `onGranted`. A grant after a hand-back that never was gets no `onEnded`. */
	handed: boolean;
	/** Made by a hand-back: its partition's `onEnded` was already called. */
	readonly afterHandBack: boolean;
}

/** A grant not handed over yet, without an epoch. */
function newGrant(afterHandBack: boolean): Grant {
	return {
		ctl: new AbortController(),
		ready: false,
		epoch: undefined,
		failures: 0,
		lastError: undefined,
		handed: false,
		afterHandBack,
	};
}

/** A hand-back this long after the previous one of the partition pauses from the start again. */
const HAND_BACK_QUIET_MS = 60_000;

interface Held {
	readonly slot: number;
	readonly ctx: VVMServiceContext;
	readonly grants: Map<number, Grant>;
	/**
	 * Hand-backs (released or declined grants) per partition in this leadership: `total` for
	 * `describe()`; `streak` doubles the pause, and starts again after a quiet minute.
	 */
	readonly releases: Map<number, { total: number; streak: number; at: number }>;
}

/**
 * Creates the static placement. Nothing is deployed until the VVM leads (its `service` starts);
 * `locate(p)` is `served` only for this slot's partitions, only while `leaseValid()`, from the
 * grant on (a partition still actualizing answers "busy" itself). Otherwise it is `held` by the
 * address in the leader record of p's slot, read every `holderRefreshMs` (and at once after a
 * miss), so a 421 may name a holder up to that old: the named host then answers 421 or 503 itself.
 * Options are checked before anything runs (`RangeError`/`TypeError`).
 *
 * **Epochs.** Each grant of partition p is fenced by a new epoch of p's own counter
 * (`takePartitionEpoch`: `max(stored + 1, the slot's fencing token)`, compare-and-swap), not by
 * the slot's token: slots' tokens are unrelated counters, so after a numVVM change (p moves to
 * another slot) they would not order p's holders. The leases placement claims its lease epochs in
 * the same counter, so holders stay ordered across a switch between the two. A take that fails
 * (a storage error) leaves the partition unserved (`locate` answers `nobody`) and is tried again
 * `epochRetry` apart (100 ms doubling to 5 s) for as long as the leadership lasts and is valid by
 * its own clock; each failure is logged at error and counted in `describe()` (`epochFailures`,
 * and per partition `epochFailures`, `epochError`). A retry is safe after an unknown outcome: a
 * take serves only under the epoch its own compare-and-swap wrote over the value it read, so an
 * earlier write that may have landed only makes the retry read it and go one higher. With
 * `epochRetry.giveUpAfterMs` the service's start waits for the slot's epochs and, past that
 * bound, gives the slot up ({@link PartitionEpochUnavailableError}).
 *
 * **numVVM.** `start()` and each leadership's service start check `numVVM` against the cluster's
 * stored value (storing it when there is none) and reject with {@link NumVVMMismatchError} when
 * they differ; the holder refresh reads it too, and a placement that sees it change ends its
 * grants (logged at error) and serves nothing more. Storage errors: `start()` reads up to 5 times,
 * `holderRefreshMs` apart, within its deadline, then rejects with the error; a service start
 * after a good check goes on (logged at warn); before any good check it rejects.
 *
 * **start(signal).** `signal` is the start deadline only; `close()` ends the placement.
 *
 * @example
 * ```ts
 * const placement = createStaticPlacement({ partitions: 10, numVVM: 2, handlers, storage,
 *   leadership: () => vvm.leadership(), leaderOf: (slot) => leadershipStorage.get(slot) });
 * // provideVVM({ …, services: [placement.service] }); await placement.start(signal);
 * ```
 */
export function createStaticPlacement(options: StaticPlacementOptions): StaticPlacement {
	const { partitions, numVVM, handlers } = options;
	checkPartitions(partitions);
	checkVVMTimings({ numVVM }); // the VVM's own rule: a slot is a u32

	if (typeof handlers?.onGranted !== "function" || typeof handlers.onEnded !== "function") {
		throw new TypeError("[@vvm/appparts] handlers must have onGranted and onEnded");
	}
	const refreshMs = options.holderRefreshMs ?? 1_000;
	if (!Number.isFinite(refreshMs) || refreshMs < 1) {
		throw new RangeError(`[@vvm/appparts] holderRefreshMs must be at least 1, got ${refreshMs}`);
	}
	if (typeof options.storage?.compareAndSwap !== "function") {
		throw new TypeError("[@vvm/appparts] storage must be a TTLStorage");
	}
	const storage = options.storage;
	const retryOptions = resolveEpochRetry(options.epochRetry);
	const namespace = options.namespace ?? DEFAULT_PLACEMENT_NAMESPACE;
	if (typeof namespace !== "string" || namespace.trim() === "" || namespace.length > 200) {
		throw new TypeError(
			"[@vvm/appparts] namespace must be a non-empty string of at most 200 characters",
		);
	}
	const clock = options.clock ?? systemClock;
	const logger = options.logger ?? silentLogger;
	/** Set once the stored numVVM was seen to differ from ours: nothing is served from then on. */
	let refused: NumVVMMismatchError | undefined;
	/** Whether the stored numVVM was read equal to ours at least once. */
	let numVVMChecked = false;
	const holders = new Map<number, PartitionHolder>();
	let held: Held | undefined;
	let timer: TimerHandle | undefined;
	let running = false;
	let refreshing: Promise<void> | undefined;
	let closed = false;
	/** Failed epoch takes since the placement was created (`describe().epochFailures`). */
	let epochFailures = 0;

	const slotsWithPartitions = Math.min(numVVM, partitions);
	const refresh = (): Promise<void> => {
		refreshing ??= (async () => {
			try {
				const stored = await readStaticNumVVM(storage, namespace);
				if (stored === numVVM) numVVMChecked = true;
				if (stored !== undefined && stored !== numVVM && refused === undefined) {
					refused = new NumVVMMismatchError(numVVM, stored);
					logger.error({ event: "num-vvm-changed", numVVM, stored }, refused.message);
					end(`the cluster's numVVM is now ${stored}, not ${numVVM}`);
				}
			} catch (error) {
				logger.debug({ event: "num-vvm-read-failed", err: error }, "stored numVVM read failed");
			}
			for (let slot = 1; slot <= slotsWithPartitions; slot++) {
				try {
					const value = await options.leaderOf(slot);
					if (value === undefined) holders.delete(slot);
					else holders.set(slot, { address: parseLeaderValue(value).address });
				} catch (error) {
					// Keep the last answer: a storage hiccup should not turn 421s into 503s at once.
					logger.debug(
						{ event: "holder-read-failed", slot, err: error },
						"leader record read failed",
					);
				}
			}
		})().finally(() => {
			refreshing = undefined;
		});
		return refreshing;
	};
	const schedule = (): void => {
		if (!running) return;
		timer = clock.setTimer(refreshMs, () => {
			void refresh().finally(schedule);
		});
	};

	function end(reason: string): void {
		const h = held;
		if (h === undefined) return;
		held = undefined;
		for (const [p, grant] of h.grants) {
			grant.ctl.abort(new Error(reason));
			if (grant.handed || !grant.afterHandBack) handlers.onEnded(p, reason);
		}
		logger.info(
			{ event: "partitions-ended", slot: h.slot, partitions: [...h.grants.keys()], reason },
			`stopped serving ${h.grants.size} partition(s): ${reason}`,
		);
	}

	const service: VVMService = {
		name: "partitions",
		async start(ctx) {
			const slot = options.leadership()?.slot;
			if (slot === undefined) throw new Error("the partitions service started without a slot");
			if (closed || ctx.signal.aborted) return;
			// Never serve under another numVVM than the cluster's: a partition would have two slots.
			if (refused !== undefined) throw refused;
			try {
				await checkStaticNumVVM(storage, numVVM, namespace);
				numVVMChecked = true;
			} catch (error) {
				// A storage error after a good check (at start or a refresh) does not end a leadership:
				// the epochs below order the holders anyway, and the next refresh reads it again.
				if (error instanceof NumVVMMismatchError || !numVVMChecked) throw error;
				logger.warn(
					{ event: "num-vvm-read-failed", err: error },
					"the stored numVVM could not be read; going on with the value checked before",
				);
			}
			if (closed || ctx.signal.aborted) return;
			const h: Held = { slot, ctx, grants: new Map(), releases: new Map() };
			held = h;
			const began = clock.monotonic();
			// The slot's token only as a floor: a partition fenced by it before this version stays ordered.
			const floor = ctx.fencingToken === undefined ? 0n : BigInt(ctx.fencingToken);
			const tag = `static:${slot}:${options.leadership()?.address ?? ""}`;
			const mine = staticPartitionsOf(slot, numVVM, partitions);
			const live = (grant: Grant): boolean => !grant.ctl.signal.aborted && held === h && !closed;
			/** The deploy failed (onGranted rejected: e.g. a newer holder's fence refused it). */
			const decline = (p: number, grant: Grant, error: unknown): void =>
				handBack(p, grant, error, "deploy failed");
			/** One take of p's epoch; a storage error is counted and kept (logged by the caller). */
			const take = async (p: number, grant: Grant): Promise<boolean> => {
				try {
					grant.epoch = await takePartitionEpoch(storage, namespace, p, {
						tag,
						floor,
						signal: grant.ctl.signal,
					});
					return true;
				} catch (error) {
					if (!live(grant)) return false;
					grant.failures++;
					grant.lastError = error;
					epochFailures++;
					return false;
				}
			};
			const hand = (p: number, grant: Grant): void => {
				const { ctl, epoch } = grant;
				if (epoch === undefined) return;
				grant.handed = true;
				handlers
					.onGranted(p, {
						signal: ctl.signal,
						fencingToken: epoch,
						leaseValid: () =>
							!ctl.signal.aborted &&
							!ctx.signal.aborted &&
							refused === undefined &&
							ctx.leaseValid(),
						release: (reason) => release(p, grant, reason),
					})
					.then(
						() => {
							grant.ready = true;
						},
						(error: unknown) => decline(p, grant, error),
					);
			};
			/**
			 * Takes p's epoch again after a failed take, `epochRetry` apart (doubling), while this
			 * leadership lasts and, by its own clock, is valid; every failure is logged at error.
			 */
			const retry = async (
				p: number,
				grant: Grant,
				mayGiveUp = true,
			): Promise<"taken" | "ended" | "gave-up"> => {
				const giveUpAt =
					retryOptions.giveUpAfterMs === undefined || !mayGiveUp
						? undefined
						: began + retryOptions.giveUpAfterMs;
				let waitMs = epochRetryDelay(retryOptions, grant.failures);
				const failed = (): void => {
					logger.error(
						{
							event: "partition-epoch-failed",
							partition: p,
							failures: grant.failures,
							retryInMs: waitMs,
							err: grant.lastError,
						},
						`partition ${p}: its epoch could not be taken (failure ${grant.failures}); not served, trying again in ${waitMs} ms`,
					);
				};
				// After a hand-back whose lease was not valid at the end of the pause, no take failed.
				if (grant.failures > 0) failed();
				for (;;) {
					const now = clock.monotonic();
					if (giveUpAt !== undefined && now >= giveUpAt) return "gave-up";
					const sleepMs = giveUpAt === undefined ? waitMs : Math.min(waitMs, giveUpAt - now);
					try {
						await clock.sleep(sleepMs, grant.ctl.signal);
					} catch {
						return "ended";
					}
					if (!live(grant)) return "ended";
					// Only a leader that is valid by its own clock raises a partition's epoch.
					if (!ctx.leaseValid()) continue;
					if (await take(p, grant)) {
						if (!live(grant)) return "ended";
						logger.info(
							{ event: "partition-epoch-taken", partition: p, failures: grant.failures },
							`partition ${p}: epoch ${grant.epoch} taken after ${grant.failures} failure(s)`,
						);
						hand(p, grant);
						return "taken";
					}
					if (!live(grant)) return "ended";
					waitMs = epochRetryDelay(retryOptions, grant.failures);
					failed();
				}
			};
			/** What was deployed for p's grant closed on its own (`grant.release`). */
			const release = (p: number, grant: Grant, reason: unknown): void =>
				handBack(p, grant, reason, "released");
			/**
			 * p's grant cannot be served (its deploy failed, or what was deployed closed on its own:
			 * a newer holder's epoch fenced it out, as another placement in an overlap of a switch
			 * between static and leases). End the grant, then, after a pause that doubles with each
			 * hand-back of p in this leadership, take a new epoch (above the newer holder's) and
			 * deploy again: the slot's leader is p's rightful holder, and p must not stay dark once
			 * the other holder is gone (before, a declined grant stayed dark for the leadership).
			 */
			const handBack = (
				p: number,
				grant: Grant,
				reason: unknown,
				why: "deploy failed" | "released",
			): void => {
				if (!live(grant)) return;
				const now = clock.monotonic();
				const last = h.releases.get(p);
				const streak =
					last !== undefined && now - last.at < HAND_BACK_QUIET_MS ? last.streak + 1 : 1;
				const releases = (last?.total ?? 0) + 1;
				h.releases.set(p, { total: releases, streak, at: now });
				const next = newGrant(true);
				h.grants.set(p, next);
				grant.ctl.abort(reason);
				handlers.onEnded(p, why);
				const pauseMs = epochRetryDelay(retryOptions, streak);
				const fields = { partition: p, releases, retryInMs: pauseMs, err: reason };
				if (why === "released") {
					logger.warn(
						{ event: "partition-handed-back", ...fields },
						`partition ${p} closed on its own; taking a new epoch in ${pauseMs} ms`,
					);
				} else {
					logger.error(
						{ event: "partition-declined", ...fields },
						`partition ${p} could not be deployed; taking a new epoch in ${pauseMs} ms`,
					);
				}
				void (async () => {
					try {
						await clock.sleep(pauseMs, next.ctl.signal);
					} catch {
						return;
					}
					if (!live(next)) return;
					if (ctx.leaseValid() && (await take(p, next))) {
						if (live(next)) hand(p, next);
						return;
					}
					if (live(next)) await retry(p, next, false);
				})();
			};
			for (const p of mine) h.grants.set(p, newGrant(false));
			ctx.signal.addEventListener(
				"abort",
				() => end(String(ctx.signal.reason ?? "leadership ended")),
				{ once: true },
			);
			// Each partition's epoch first (in parallel), so every grant is handed over by the time
			// this service has started when the storage answers; a partition whose take failed is
			// not served and is taken again in the background (`retry`), until the leadership ends.
			const granted = [...h.grants];
			const first = await Promise.all(granted.map(([p, grant]) => take(p, grant)));
			const pending: [number, Grant][] = [];
			granted.forEach(([p, grant], i) => {
				if (!live(grant)) return;
				if (first[i]) hand(p, grant);
				else pending.push([p, grant]);
			});
			const retries = pending.map(([p, grant]) => retry(p, grant));
			logger.info(
				{
					event: "partitions-granted",
					slot,
					partitions: mine,
					pending: pending.map(([p]) => p),
					fencingToken: ctx.fencingToken,
				},
				`serving ${mine.length - pending.length} of the ${mine.length} partition(s) of slot ${slot}`,
			);
			if (retryOptions.giveUpAfterMs === undefined || pending.length === 0) return;
			// Giving up is configured: this start waits for the slot's epochs, and rejects when some
			// could not be taken in time (a VVM problem: the VVM releases the slot).
			const outcomes = await Promise.all(retries);
			const givenUp = pending.filter((_, i) => outcomes[i] === "gave-up");
			if (givenUp.length === 0 || held !== h) return;
			const error = new PartitionEpochUnavailableError(
				slot,
				givenUp.map(([p]) => p),
				retryOptions.giveUpAfterMs,
				givenUp[givenUp.length - 1]?.[1].lastError,
			);
			logger.error(
				{ event: "slot-given-up", slot, partitions: error.partitions, err: error },
				error.message,
			);
			end(error.message);
			throw error;
		},
		async stop() {
			end("services stopped");
		},
	};

	const placement: StaticPlacement = {
		mode: "static",
		service,
		async start(signal) {
			// `signal` bounds the start only (as in every placement): close() ends the placement.
			if (closed || running) return;
			signal.throwIfAborted();
			// A storage error is tried again a few times (holderRefreshMs apart) within the deadline.
			for (let attempt = 1; ; attempt++) {
				try {
					await abortable(checkStaticNumVVM(storage, numVVM, namespace), signal);
					numVVMChecked = true;
					break;
				} catch (error) {
					if (error instanceof NumVVMMismatchError || signal.aborted) throw error;
					if (attempt >= START_CHECK_ATTEMPTS) throw error;
					logger.warn(
						{ event: "num-vvm-read-failed", attempt, err: error },
						"the stored numVVM could not be read; trying again",
					);
					await abortable(
						new Promise<void>((resolve) => clock.setTimer(refreshMs, resolve)),
						signal,
					);
				}
			}
			if (closed || running) return;
			running = true;
			await abortable(refresh(), signal);
			if (timer === undefined) schedule();
		},
		locate(partition) {
			const h = held;
			if (
				h?.grants.get(partition)?.epoch !== undefined &&
				refused === undefined &&
				!h.ctx.signal.aborted &&
				h.ctx.leaseValid()
			) {
				return locateBy(true, undefined);
			}
			const known = holders.get(staticSlotOf(partition, numVVM));
			if (known === undefined && running) void refresh();
			return locateBy(false, known);
		},
		served() {
			const h = held;
			if (h === undefined || refused !== undefined || h.ctx.signal.aborted || !h.ctx.leaseValid()) {
				return [];
			}
			return [...h.grants]
				.filter(([, g]) => g.epoch !== undefined)
				.map(([p]) => p)
				.sort((a, b) => a - b);
		},
		describe() {
			const h = held;
			return {
				mode: "static",
				numVVM,
				partitions,
				slot: h?.slot ?? null,
				leaseValid: h?.ctx.leaseValid() ?? false,
				fencingToken: h?.ctx.fencingToken ?? null,
				refused: refused?.message ?? null,
				epochFailures,
				partitionsOfSlot:
					h === undefined
						? []
						: [...h.grants.entries()].map(([p, g]) => ({
								partition: p,
								ready: g.ready,
								epoch: g.epoch?.toString() ?? null,
								epochFailures: g.failures,
								releases: h.releases.get(p)?.total ?? 0,
								epochError:
									g.lastError === undefined
										? null
										: g.lastError instanceof Error
											? g.lastError.message
											: String(g.lastError),
							})),
				holders: Object.fromEntries([...holders].map(([slot, holder]) => [slot, holder.address])),
			};
		},
		async close() {
			closed = true;
			running = false;
			timer?.cancel();
			end("placement closed");
		},
	};
	return placement;
}
