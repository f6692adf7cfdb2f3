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
 * `leaseValid()` right before acting. After the local lease deadline it refuses (logged as
 * `refused`), even when the killer has not fired yet and the leadership signal is still live,
 * for example while a renewal hangs on a slow storage.
 */
export function createLeaseWorker(options: {
	readonly intervalMs: number;
	readonly logger: Logger;
	readonly leaseDeadline: () => number | undefined;
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
			const leaseDeadline = options.leaseDeadline();
			const at = Date.now();
			let reason: string | undefined;
			if (ctx === undefined) reason = "not leader";
			else if (ctx.signal.aborted) reason = "stopping";
			else if (!ctx.leaseValid() || leaseDeadline === undefined || at >= leaseDeadline) {
				reason = "lease expired";
			}
			if (reason !== undefined) {
				const line = { event: "refused", source, reason, at, leaseDeadline };
				if (wasLeader) options.logger.warn(line, `refused to act: ${reason}`);
				else options.logger.debug(line, `refused to act: ${reason}`);
				return { done: false, reason };
			}
			count++;
			options.logger.debug({ event: "work", source, n: count, at, leaseDeadline }, "work done");
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
