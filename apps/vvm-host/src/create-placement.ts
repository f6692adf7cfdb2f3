import type { PartitionPlacement, StaticPlacement, StaticPlacementOptions } from "@vvm/appparts";
import {
	changeStaticNumVVM,
	createLeasesPlacement,
	createStaticPlacement,
	NumVVMMismatchError,
	readStaticNumVVM,
} from "@vvm/appparts";
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
	/**
	 * static: `--num-vvm-from`: change the cluster's stored numVVM from this value to `numVVM`
	 * before starting (README, "Changing --num-vvm").
	 */
	readonly numVVMFrom?: number | undefined;
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
			// The lease namespace for both modes: a switch keeps one epoch counter per partition.
			const placement = createStaticPlacement({ ...deps, namespace: deps.leases.namespace });
			return { placement: checkingNumVVM(placement, deps), services: [placement.service] };
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

/** The host's words for a `--num-vvm` the cluster does not run with, and how to change it. */
function numVVMRefused(configured: number, stored: number): string {
	return (
		`--num-vvm ${configured} disagrees with the cluster's stored num-vvm ${stored}: refusing to serve under it ` +
		`(a partition would belong to two slots at once). To change it safely: stop every VVM of the cluster, ` +
		`start one with --num-vvm ${configured} --num-vvm-from ${stored}, then the others with --num-vvm ${configured} ` +
		`(README: "Changing --num-vvm"); to keep ${stored}, start this VVM with --num-vvm ${stored}`
	);
}

/**
 * The static placement whose `start` first applies `--num-vvm-from` (compare-and-swap of the
 * stored numVVM), then refuses a `--num-vvm` other than the stored one with the host's message
 * (naming the flags); the host exits 1 with it.
 */
function checkingNumVVM(placement: StaticPlacement, deps: PlacementDeps): StaticPlacement {
	const namespace = deps.leases.namespace;
	return {
		...placement,
		async start(signal) {
			const from = deps.numVVMFrom;
			if (from !== undefined && from !== deps.numVVM) {
				const changed = await changeStaticNumVVM(
					deps.storage,
					{ from, to: deps.numVVM },
					namespace,
				);
				if (!changed) {
					const stored = await readStaticNumVVM(deps.storage, namespace);
					throw new Error(
						`--num-vvm-from ${from}: the cluster's stored num-vvm is ${stored}, not ${from}; nothing changed`,
					);
				}
				deps.logger.warn(
					{ event: "num-vvm-changed", from, to: deps.numVVM },
					`the cluster's num-vvm changed from ${from} to ${deps.numVVM}`,
				);
			}
			try {
				await placement.start(signal);
			} catch (error) {
				if (error instanceof NumVVMMismatchError) {
					throw new Error(numVVMRefused(error.configured, error.stored), { cause: error });
				}
				throw error;
			}
		},
	};
}
