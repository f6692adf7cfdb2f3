import type { VVMLeadership, VVMService, VVMServiceContext } from "@vvm/orch";
import { parseLeaderValue } from "@vvm/orch";
import type { Logger } from "pino";
import { systemMonotonicMs } from "./logger.ts";

/**
 * What one accepted unit of work was done under: the same fields go to the log line, so a checker
 * can prove from the logs of every host that no two incarnations acted at overlapping times.
 */
interface WorkDone {
	readonly done: true;
	/** This host's wall time, ms (it may be skewed or stepped). */
	readonly at: number;
	/** `CLOCK_MONOTONIC` in ms, the same clock for every process on one machine. */
	readonly mono: number;
	readonly slot: number;
	/** The leader record's value, `address#nonce`. */
	readonly holder: string;
	/** The nonce: unique per process incarnation. */
	readonly incarnation: string;
	readonly fencingToken: number | undefined;
	/** Lease time left when the work was accepted. */
	readonly leaseLeftMs: number;
}

/** Result of one attempt to act as leader. */
type ActResult = WorkDone | { readonly done: false; readonly reason: string };

/** A demo service that acts only while the lease is valid, and says so when it refuses. */
export interface LeaseWorker extends VVMService {
	/** Performs one unit of "work" if the lease is valid right now; logs `work` or `refused`. */
	act(source: string): ActResult;
}

/**
 * Creates the lease-guarded demo worker: every `intervalMs` (0 = only on demand) it checks
 * `leaseValid()` right before acting (the monotonic lease deadline: a wall-clock step cannot
 * extend it). After the local lease deadline it refuses (logged as `refused`), even when the
 * killer has not fired yet and the leadership signal is still live, for example while a renewal
 * hangs on a slow storage. Logs carry `at` (wall ms) and `leaseLeftMs`.
 */
export function createLeaseWorker(options: {
	readonly intervalMs: number;
	readonly logger: Logger;
	/** The VVM's leadership, `undefined` when not leader. */
	readonly leadership: () => VVMLeadership | undefined;
	/** `false` only under the test-only mutant `lease-check` (see unsafe-mutants.ts). */
	readonly checkLease?: boolean;
}): LeaseWorker {
	const checkLease = options.checkLease ?? true;
	let context: VVMServiceContext | undefined;
	let timer: NodeJS.Timeout | undefined;
	let count = 0;
	let wasLeader = false;
	const stopTicking = (): void => {
		if (timer !== undefined) clearInterval(timer);
		timer = undefined;
	};
	const worker: LeaseWorker = {
		name: "lease-worker",
		act(source) {
			const ctx = context;
			const leadership = options.leadership();
			const at = Date.now(); // for the log only
			let reason: string | undefined;
			if (ctx === undefined) reason = "not leader";
			else if (ctx.signal.aborted) reason = "stopping";
			else if ((checkLease && !ctx.leaseValid()) || leadership === undefined) {
				reason = "lease expired";
			}
			if (reason !== undefined || leadership === undefined) {
				reason ??= "not leader";
				const line = {
					event: "refused",
					source,
					reason,
					at,
					leaseLeftMs: leadership?.leaseTimeLeftMs,
				};
				if (wasLeader) options.logger.warn(line, `refused to act: ${reason}`);
				else options.logger.debug(line, `refused to act: ${reason}`);
				return { done: false, reason };
			}
			count++;
			const work: WorkDone = {
				done: true,
				at,
				mono: systemMonotonicMs(),
				slot: leadership.slot,
				holder: leadership.address,
				incarnation: parseLeaderValue(leadership.address).nonce ?? leadership.address,
				fencingToken: leadership.fencingToken,
				leaseLeftMs: Math.round(leadership.leaseTimeLeftMs),
			};
			const { done: _, ...fields } = work;
			options.logger.debug({ event: "work", source, n: count, ...fields }, "work done");
			return work;
		},
		async start(ctx) {
			context = ctx;
			wasLeader = true;
			if (options.intervalMs > 0) {
				timer = setInterval(() => worker.act("tick"), options.intervalMs);
				ctx.signal.addEventListener("abort", stopTicking, { once: true });
			}
		},
		async stop() {
			stopTicking();
			context = undefined;
		},
	};
	return worker;
}
