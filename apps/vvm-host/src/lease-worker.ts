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
	const stopTicking = (): void => {
		if (timer !== undefined) clearInterval(timer);
		timer = undefined;
	};
	const worker: LeaseWorker = {
		name: "lease-worker",
		act(source) {
			const ctx = context;
			if (ctx === undefined) return { done: false, reason: "not leader" };
			if (ctx.signal.aborted) return { done: false, reason: "stopping" };
			const leaseDeadline = options.leaseDeadline();
			const at = Date.now();
			if (!ctx.leaseValid() || leaseDeadline === undefined || at >= leaseDeadline) {
				options.logger.warn(
					{ event: "refused", source, at, leaseDeadline },
					"refused to act: the local lease deadline has passed",
				);
				return { done: false, reason: "lease expired" };
			}
			count++;
			options.logger.debug({ event: "work", source, n: count, at, leaseDeadline }, "work done");
			return { done: true };
		},
		async start(ctx) {
			context = ctx;
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
