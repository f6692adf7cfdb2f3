import type { PartitionPlacement, StaticPlacementOptions } from "@vvm/appparts";
import { createLeasesPlacement, createStaticPlacement } from "@vvm/appparts";
import type { Clock } from "@vvm/clock";
import type { LeaseEvent, LeaseTimings } from "@vvm/leases";
import type { VVMService } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { Logger } from "pino";
import type { PlacementMode } from "./config.ts";
import { logLeaseEvent } from "./logger.ts";

/**
 * What any placement may use. A mode takes what it needs; the host passes all of it.
 *
 * @example
 * ```ts
 * const deps: PlacementDeps = { partitions: 10, numVVM: 1, handlers, leadership: () => vvm.leadership(),
 *   leaderOf: (slot) => leadershipStorage.get(slot), storage: driver, address: () => "127.0.0.1:8080",
 *   clock: systemClock, logger };
 * ```
 */
export interface PlacementDeps
	extends Pick<
		StaticPlacementOptions,
		"partitions" | "numVVM" | "handlers" | "leadership" | "leaderOf"
	> {
	/** The host's TTL storage driver. */
	readonly storage: TTLStorage;
	/** This host's advertised address (`host:port`). */
	readonly address: () => string;
	readonly clock: Clock;
	readonly logger: Logger;
	/** leases: lease length, skew bound and record prefix (`--lease-*`). */
	readonly leases: LeaseTimings & {
		/** Every lease event, after it is logged (the host's lease metrics). */
		readonly onEvent?: (event: LeaseEvent) => void;
	};
}

/** A placement and the VVM services it needs run while this VVM leads its slot. */
export interface CreatedPlacement {
	readonly placement: PartitionPlacement;
	readonly services: readonly VVMService[];
	/** leases: aborts when another process took this host's address (the host then exits 1). */
	readonly lost?: AbortSignal;
}

/**
 * Builds the placement of `--placement`. The host's routes use only the
 * {@link PartitionPlacement} contract, so a mode is one `case` here.
 *
 * @example
 * ```ts
 * const { placement, services } = createPlacement("static", deps);
 * ```
 */
export function createPlacement(mode: PlacementMode, deps: PlacementDeps): CreatedPlacement {
	switch (mode) {
		case "static": {
			const placement = createStaticPlacement(deps);
			return { placement, services: [placement.service] };
		}
		case "leases": {
			// No VVM slot is needed: any live host serves the partitions whose lease it holds.
			const placement = createLeasesPlacement({
				storage: deps.storage,
				address: deps.address(),
				partitions: deps.partitions,
				leaseIntervalMs: deps.leases.leaseIntervalMs,
				maxClockSkewMs: deps.leases.maxClockSkewMs,
				namespace: deps.leases.namespace,
				handlers: deps.handlers,
				clock: deps.clock,
				onEvent: (event) => {
					logLeaseEvent(deps.logger, event);
					deps.leases.onEvent?.(event);
				},
			});
			return { placement, services: [], lost: placement.signal };
		}
	}
}
