// --placement leases: the host runs no VVM; it joins the lease cluster and serves the partitions
// it holds until stopped (exit 0) or until another process takes its address (exit 1).

import type { PartitionPlacement } from "@vvm/appparts";
import type { LeaseEvent } from "@vvm/leases";
import type { Logger } from "pino";
import type { HttpApiState } from "./http.ts";
import { describeError } from "./logger.ts";

/** A placement the host runs, and when it stopped on its own (then the host exits 1). */
export interface HostPlacement {
	readonly placement: PartitionPlacement;
	/** Aborts when the placement can no longer serve (another process took this address). */
	readonly lost: AbortSignal;
}

/**
 * Logs one `@vvm/leases` event as `event: "leases.<type>"`: grants, lease starts and ends,
 * placement-driver changes and storage errors at info/warn, ticks at debug.
 */
export function logLeaseEvent(logger: Logger, event: LeaseEvent): void {
	const name = `leases.${event.type}`;
	switch (event.type) {
		case "tick":
			logger.debug({ ...event, event: name, type: undefined }, "placement-driver tick");
			return;
		case "granted":
		case "lease-started":
		case "lease-ended": {
			const { lease, type: _, ...rest } = event;
			logger.info(
				{
					...rest,
					event: name,
					partition: lease.group,
					holder: lease.holder.address,
					incarnation: lease.holder.incarnation,
					startTime: lease.startTime,
					expirationTime: lease.expirationTime,
					term: lease.term,
				},
				`${event.type} partition ${lease.group} (${lease.holder.address})${"reason" in event ? `: ${event.reason}` : ""}`,
			);
			return;
		}
		case "placement-driver":
			logger.info(
				{ event: name, at: event.at, active: event.active },
				event.active ? "active placement driver" : "no longer the active placement driver",
			);
			return;
		case "resharded":
			logger.info({ ...event, event: name, type: undefined }, "lease batch re-sharded");
			return;
		case "storage-error":
			logger.warn(
				{
					event: name,
					at: event.at,
					operation: event.operation,
					error: event.error instanceof Error ? event.error.message : String(event.error),
				},
				`leases: storage error during ${event.operation}`,
			);
			return;
		case "replaced":
			logger.error(
				{ event: name, at: event.at, by: event.by },
				"leases: another process took over this address",
			);
			return;
	}
}

/** What {@link servePartitions} needs of the host. */
export interface ServePartitionsContext {
	readonly state: HttpApiState;
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
