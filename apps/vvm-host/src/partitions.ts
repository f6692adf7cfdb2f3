// The host's placement wiring: which PartitionPlacement runs for --placement, and the log lines
// of its events. The command processor's deploy/undeploy come in as PlacementHandlers.
import type { LeaseEvent } from "@vvm/leases";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { Logger } from "pino";
import type { HostConfig } from "./config.ts";
import type { HttpApiState } from "./http.ts";
import { describeError } from "./logger.ts";
import type { PartitionPlacement, PlacementHandlers } from "./placement.ts";
import { createLeasesPlacement } from "./placement-leases.ts";

/** A placement the host runs, and when it stopped on its own (then the host exits 1). */
export interface HostPlacement {
	readonly placement: PartitionPlacement;
	/** Aborts when the placement can no longer serve (another process took this address). */
	readonly lost: AbortSignal;
}

/**
 * Creates the placement `config.placement` asks for, without I/O (`placement.start()` joins).
 * `static` has none here: partitions follow the VVM slot (the command processor's static
 * placement plugs in at this `switch`).
 *
 * @example
 * ```ts
 * const run = createHostPlacement(config, storage.driver, handlers, { address, logger });
 * await run?.placement.start(signal);
 * ```
 */
export function createHostPlacement(
	config: HostConfig,
	storage: TTLStorage,
	handlers: PlacementHandlers,
	options: { readonly address: string; readonly logger: Logger },
): HostPlacement | undefined {
	switch (config.placement) {
		case "static":
			return undefined;
		case "leases": {
			const placement = createLeasesPlacement({
				storage,
				address: options.address,
				partitions: config.partitions,
				leaseIntervalMs: config.leaseIntervalMs,
				maxClockSkewMs: config.leaseMaxClockSkewMs,
				namespace: config.leaseNamespace,
				handlers,
				onEvent: (event) => logLeaseEvent(options.logger, event),
			});
			return { placement, lost: placement.signal };
		}
	}
}

/**
 * Logs one `@vvm/leases` event as `event: "leases.<type>"`: grants, lease starts and ends,
 * placement-driver changes and storage errors at info/warn, ticks at debug.
 */
function logLeaseEvent(logger: Logger, event: LeaseEvent): void {
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

/**
 * Handlers that only log, until the command processor's deploy/undeploy are wired: a granted
 * partition is "deployed" at once (`partition-deployed`), an ended one logged (`partition-undeployed`).
 *
 * @example
 * ```ts
 * createHostPlacement(config, storage, loggingHandlers(logger), { address, logger });
 * ```
 */
export function loggingHandlers(logger: Logger): PlacementHandlers {
	return {
		async onGranted(partition, grant) {
			logger.info(
				{ event: "partition-deployed", partition, fencingToken: grant.fencingToken?.toString() },
				`partition ${partition} deployed`,
			);
		},
		onEnded(partition, reason) {
			logger.info(
				{ event: "partition-undeployed", partition, reason },
				`partition ${partition} undeployed: ${reason}`,
			);
		},
	};
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
 * return await servePartitions(run, { state, logger, stop: stopCtl.signal, fail });
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
