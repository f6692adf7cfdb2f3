// --placement leases: the host runs no VVM; it joins the lease cluster and serves the partitions
// it holds until stopped (exit 0) or until another process takes its address (exit 1).

import type { PartitionPlacement } from "@vvm/appparts";
import type { Logger } from "pino";
import type { OperatorState } from "./http/operator-routes.ts";
import { describeError } from "./logger.ts";

/** A placement the host runs, and when it stopped on its own (then the host exits 1). */
export interface HostPlacement {
	readonly placement: PartitionPlacement;
	/** Aborts when the placement can no longer serve (another process took this address). */
	readonly lost: AbortSignal;
}

/** What {@link servePartitions} needs of the host. */
export interface ServePartitionsContext {
	readonly state: OperatorState;
	readonly logger: Logger;
	/** SIGINT/SIGTERM (or `stop()` of an embedded host). */
	readonly stop: AbortSignal;
	/** Logs and prints a failure; returns exit code 1. */
	readonly fail: (message: string) => number;
}

/**
 * Runs a host whose partitions are placed by `run` (leases mode): joins, serves until a stop
 * request (exit 0 after `close()` ended every lease and deleted the heartbeat) or until the
 * placement is lost (exit 1).
 *
 * @example
 * ```ts
 * return await servePartitions({ placement, lost: placement.signal }, { state, logger, stop, fail });
 * ```
 */
export async function servePartitions(
	run: HostPlacement,
	context: ServePartitionsContext,
): Promise<number> {
	const { state, logger, stop, fail } = context;
	const { placement } = run;
	try {
		await placement.start(stop);
	} catch (error) {
		await placement.close();
		if (stop.aborted) {
			logger.info({ event: "exit", code: 0 }, "stopped during start-up");
			return 0;
		}
		return fail(`cannot join the ${placement.mode} placement: ${describeError(error)}`);
	}
	state.phase = "serving";
	logger.info(
		{ event: "placement-started", mode: placement.mode },
		`serving partitions by ${placement.mode}`,
	);
	await new Promise<void>((resolve) => {
		for (const signal of [stop, run.lost]) {
			if (signal.aborted) resolve();
			else signal.addEventListener("abort", () => resolve(), { once: true });
		}
	});
	const lost = !stop.aborted;
	state.phase = lost ? "failed" : "stopping";
	await placement.close();
	if (lost) return fail(`partition placement lost: ${describeError(run.lost.reason)}`);
	logger.info({ event: "exit", code: 0 }, "graceful shutdown complete");
	return 0;
}
