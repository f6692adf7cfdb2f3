import type { VVMService, VVMServiceContext } from "@vvm/orch";
import type { Logger } from "pino";

/** Result of one attempt to act as leader. */
export type ActResult = { readonly done: true } | { readonly done: false; readonly reason: string };

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
	/** Lease time left in ms (negative once passed), `undefined` when not leader. */
	readonly leaseTimeLeftMs: () => number | undefined;
}): LeaseWorker {
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
			const leaseLeftMs = options.leaseTimeLeftMs();
			const at = Date.now(); // for the log only
			let reason: string | undefined;
			if (ctx === undefined) reason = "not leader";
			else if (ctx.signal.aborted) reason = "stopping";
			else if (!ctx.leaseValid()) reason = "lease expired";
			if (reason !== undefined) {
				const line = { event: "refused", source, reason, at, leaseLeftMs };
				if (wasLeader) options.logger.warn(line, `refused to act: ${reason}`);
				else options.logger.debug(line, `refused to act: ${reason}`);
				return { done: false, reason };
			}
			count++;
			options.logger.debug({ event: "work", source, n: count, at, leaseLeftMs }, "work done");
			return { done: true };
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
