// The static placement: partition p belongs to the VVM slot (p mod numVVM) + 1 and is served by
// that slot's leader (@vvm/orch), only while its lease is valid.
import type { Clock, TimerHandle } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import { checkPartitions } from "@vvm/cp";
import type { Logger } from "@vvm/log";
import { silentLogger } from "@vvm/log";
import type { VVMLeadership, VVMService, VVMServiceContext } from "@vvm/orch";
import { checkVVMTimings, parseLeaderValue } from "@vvm/orch";
import type { PartitionHolder, PartitionPlacement, PlacementHandlers } from "./placement.ts";
import { locateBy } from "./placement.ts";

/** Options of {@link createStaticPlacement}. */
export interface StaticPlacementOptions {
	/** Partitions `0 .. partitions - 1`; the same on every VVM. */
	readonly partitions: number;
	/** The VVM slots (`VVMConfig.numVVM`); slot s serves the partitions p with p mod numVVM = s - 1. */
	readonly numVVM: number;
	/** Deploy and undeploy partitions here (`deployCpPartitions(cp).handlers`). */
	readonly handlers: PlacementHandlers;
	/** This VVM's leadership (`vvm.leadership()`), `undefined` while it holds none. */
	readonly leadership: () => VVMLeadership | undefined;
	/** The value of a slot's leader record (`address#nonce`), `undefined` when free. */
	readonly leaderOf: (slot: number) => Promise<string | undefined>;
	/** How often the other slots' leader records are read for 421 answers; default 1000 ms. */
	readonly holderRefreshMs?: number;
	/** Default `systemClock`. */
	readonly clock?: Clock;
	/** Grants, ends and declined deploys; default silent. */
	readonly logger?: Logger;
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

interface Grant {
	readonly ctl: AbortController;
	ready: boolean;
}

interface Held {
	readonly slot: number;
	readonly ctx: VVMServiceContext;
	readonly grants: Map<number, Grant>;
}

/**
 * Creates the static placement. Nothing is deployed until the VVM leads (its `service` starts);
 * `locate(p)` is `served` only for this slot's partitions, only while `leaseValid()`, from the
 * grant on (a partition still actualizing answers "busy" itself). Otherwise it is `held` by the
 * address in the leader record of p's slot, read every `holderRefreshMs` (and at once after a
 * miss), so a 421 may name a holder up to that old: the named host then answers 421 or 503 itself.
 * Options are checked before anything runs (`RangeError`/`TypeError`).
 *
 * @example
 * ```ts
 * const placement = createStaticPlacement({ partitions: 10, numVVM: 2, handlers,
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
	const clock = options.clock ?? systemClock;
	const logger = options.logger ?? silentLogger;
	const holders = new Map<number, PartitionHolder>();
	let held: Held | undefined;
	let timer: TimerHandle | undefined;
	let running = false;
	let refreshing: Promise<void> | undefined;
	let closed = false;

	const slotsWithPartitions = Math.min(numVVM, partitions);
	const refresh = (): Promise<void> => {
		refreshing ??= (async () => {
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

	const end = (reason: string): void => {
		const h = held;
		if (h === undefined) return;
		held = undefined;
		for (const [p, grant] of h.grants) {
			grant.ctl.abort(new Error(reason));
			handlers.onEnded(p, reason);
		}
		logger.info(
			{ event: "partitions-ended", slot: h.slot, partitions: [...h.grants.keys()], reason },
			`stopped serving ${h.grants.size} partition(s): ${reason}`,
		);
	};

	const service: VVMService = {
		name: "partitions",
		async start(ctx) {
			const slot = options.leadership()?.slot;
			if (slot === undefined) throw new Error("the partitions service started without a slot");
			if (closed || ctx.signal.aborted) return;
			const h: Held = { slot, ctx, grants: new Map() };
			held = h;
			const fencingToken =
				ctx.fencingToken === undefined ? {} : { fencingToken: BigInt(ctx.fencingToken) };
			const mine = staticPartitionsOf(slot, numVVM, partitions);
			for (const p of mine) {
				const ctl = new AbortController();
				const grant: Grant = { ctl, ready: false };
				h.grants.set(p, grant);
				handlers
					.onGranted(p, {
						signal: ctl.signal,
						...fencingToken,
						leaseValid: () => !ctl.signal.aborted && !ctx.signal.aborted && ctx.leaseValid(),
					})
					.then(
						() => {
							grant.ready = true;
						},
						(error: unknown) => {
							if (ctl.signal.aborted || held !== h) return;
							// A declined grant: not served here; requests for it answer 503 until a new leadership.
							h.grants.delete(p);
							ctl.abort(error);
							handlers.onEnded(p, "deploy failed");
							logger.error(
								{ event: "partition-declined", partition: p, err: error },
								`partition ${p} could not be deployed`,
							);
						},
					);
			}
			ctx.signal.addEventListener(
				"abort",
				() => end(String(ctx.signal.reason ?? "leadership ended")),
				{
					once: true,
				},
			);
			logger.info(
				{ event: "partitions-granted", slot, partitions: mine, fencingToken: ctx.fencingToken },
				`serving ${mine.length} partition(s) of slot ${slot}`,
			);
		},
		async stop() {
			end("services stopped");
		},
	};

	const placement: StaticPlacement = {
		mode: "static",
		service,
		async start(signal) {
			if (closed || running) return;
			running = true;
			signal.addEventListener("abort", () => void placement.close(), { once: true });
			await refresh();
			schedule();
		},
		locate(partition) {
			const h = held;
			if (h?.grants.has(partition) && !h.ctx.signal.aborted && h.ctx.leaseValid()) {
				return locateBy(true, undefined);
			}
			const known = holders.get(staticSlotOf(partition, numVVM));
			if (known === undefined && running) void refresh();
			return locateBy(false, known);
		},
		served() {
			const h = held;
			if (h === undefined || h.ctx.signal.aborted || !h.ctx.leaseValid()) return [];
			return [...h.grants.keys()].sort((a, b) => a - b);
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
				partitionsOfSlot:
					h === undefined
						? []
						: [...h.grants.entries()].map(([p, g]) => ({ partition: p, ready: g.ready })),
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
