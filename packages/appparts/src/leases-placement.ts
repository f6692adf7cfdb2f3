// The leases placement: any live process serves a partition while it holds the partition's lease
// (@vvm/leases, seed 002). Every process heartbeats, runs a placement-driver candidate for all
// partitions, and deploys a partition when its lease is granted here.
import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import { checkPartitions } from "@vvm/cp";
import type { LeaseEvent, LeaseMetrics, LeaseNode, LeaseTable } from "@vvm/leases";
import { createLeaseNode } from "@vvm/leases";
import type { TTLStorage } from "@vvm/ttlstorage";
import { claimPartitionEpoch } from "./partition-epochs.ts";
import type { PartitionPlacement, PlacementHandlers } from "./placement.ts";
import { locateBy } from "./placement.ts";

/** Options of {@link createLeasesPlacement}. */
export interface LeasesPlacementOptions {
	readonly storage: TTLStorage;
	/** This process's advertised address: what the others put in a 421 reply. */
	readonly address: string;
	/** Partitions `0 .. partitions - 1`; the same on every process. */
	readonly partitions: number;
	/** `@vvm/leases` `leaseIntervalMs`, `maxClockSkewMs` and `namespace` (validated there). */
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	readonly namespace: string;
	/** Deploy and undeploy partitions here (`deployCpPartitions(cp).handlers`). */
	readonly handlers: PlacementHandlers;
	/** Every lease event: grants, lease starts and ends, placement-driver changes, errors. */
	readonly onEvent?: (event: LeaseEvent) => void;
	/** Default `systemClock`. */
	readonly clock?: Clock;
}

/** What `describe()` shows in leases mode (the host's `GET /leases`). */
export interface LeasesDescription {
	readonly mode: "leases";
	readonly address: string;
	readonly incarnation: string;
	readonly partitions: number;
	readonly leaseIntervalMs: number;
	readonly maxClockSkewMs: number;
	/** Partitions this process serves now (lease valid here and the partition deployed). */
	readonly served: readonly number[];
	readonly metrics: ReturnType<LeaseNode["metrics"]>;
	readonly table: LeaseTable;
}

/** The leases placement, plus what an operator view and metrics need beyond the contract. */
export interface LeasesPlacement extends PartitionPlacement {
	readonly mode: "leases";
	/** Aborts when the node stopped on its own (`LEASES_REPLACED`: the process should exit) or closed. */
	readonly signal: AbortSignal;
	describe(): LeasesDescription;
	/** The lease node's counters and gauges (for `/metrics`). */
	leaseMetrics(): LeaseMetrics;
	/**
	 * What a command served now on `partition` runs under: this process's incarnation, the lease's
	 * `startTime` (its fencing token), `expirationTime` and the time left by the local deadline.
	 */
	servingInfo(partition: number): ServingLease | undefined;
}

/** See {@link LeasesPlacement.servingInfo}. */
export interface ServingLease {
	readonly address: string;
	readonly incarnation: string;
	readonly fencingToken: number;
	readonly expirationTime: number;
	readonly leftMs: number;
}

/**
 * A {@link PartitionPlacement} over `@vvm/leases`. A partition counts as served only from the
 * moment `handlers.onGranted` resolved (deployed) until its lease's local deadline
 * (`expirationTime - maxClockSkewMs` on this process's monotonic clock); in between, `locate`
 * answers `nobody` (its own lease is no holder to redirect to). Options are checked by
 * `createLeaseNode` before any I/O.
 *
 * Before deploying a grant, the lease's `startTime` (its epoch) is claimed in the partition's
 * epoch counter (`<namespace>/partition-epochs`, shared with the static placement): a grant whose
 * epoch another holder already took, or passed, is declined (`onGranted` rejects), so a switch
 * between static and leases placement never gives two holders one epoch, and static epochs taken
 * after a lease are above it. `start(signal)`: `signal` is the start deadline only.
 *
 * @example
 * ```ts
 * const placement = createLeasesPlacement({ storage, address: "10.0.0.1:8080", partitions: 12,
 *   leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "vvm", handlers });
 * await placement.start(signal);
 * const where = placement.locate(7); // served | held (421 to where.holder.address) | nobody (503)
 * ```
 */
export function createLeasesPlacement(options: LeasesPlacementOptions): LeasesPlacement {
	const { handlers, partitions } = options;
	checkPartitions(partitions);
	if (typeof handlers?.onGranted !== "function" || typeof handlers.onEnded !== "function") {
		throw new TypeError("[@vvm/appparts] handlers must have onGranted and onEnded");
	}
	const clock = options.clock ?? systemClock;
	// The grant each deployed partition was deployed for: a later grant replaces it.
	const deployed = new Map<number, AbortSignal>();
	const node = createLeaseNode({
		storage: options.storage,
		address: options.address,
		namespace: options.namespace,
		leaseIntervalMs: options.leaseIntervalMs,
		maxClockSkewMs: options.maxClockSkewMs,
		placementDriver: { groups: partitions },
		clock,
		...(options.onEvent === undefined ? {} : { onEvent: options.onEvent }),
		onGranted: async (grant) => {
			// startTime grows with every grant of a partition: its fencing token, once claimed in
			// the partition's epoch counter, which the static placement takes its epochs from too.
			const epoch = BigInt(grant.lease.startTime);
			const claimed = await claimPartitionEpoch(
				options.storage,
				options.namespace,
				grant.group,
				epoch,
				`leases:${node.incarnation}`,
				grant.signal,
			);
			if (!claimed) {
				throw new Error(
					`[@vvm/appparts] partition ${grant.group}: epoch ${epoch} of this lease was already taken by another holder (a static placement?); not serving under it`,
				);
			}
			await handlers.onGranted(grant.group, {
				signal: grant.signal,
				fencingToken: epoch,
				// This grant's own deadline: a later grant of the group is another deployment.
				leaseValid: () => !grant.signal.aborted && node.serving(grant.group),
				// Ends the lease here; it expires and is granted again under a new startTime.
				release: (reason) => grant.release(reason),
			});
			if (!grant.signal.aborted) deployed.set(grant.group, grant.signal);
		},
		onEnded: (end) => {
			deployed.delete(end.group);
			handlers.onEnded(end.group, end.reason);
		},
	});
	const serving = (partition: number): boolean =>
		deployed.get(partition)?.aborted === false && node.serving(partition);
	return {
		mode: "leases",
		get signal() {
			return node.signal;
		},
		start: (signal) => node.start({ signal }),
		locate(partition) {
			if (serving(partition)) return locateBy(true, undefined);
			const view = node.holderOf(partition);
			// This process's own lease while it is not serving (deploying, or past its deadline):
			// nobody to redirect to.
			if (view === undefined || view.holder.incarnation === node.incarnation) {
				return locateBy(false, undefined);
			}
			return locateBy(false, { address: view.holder.address, until: view.expirationTime });
		},
		served: () => node.servedGroups().filter(serving),
		describe: () => ({
			mode: "leases",
			address: node.address,
			incarnation: node.incarnation,
			partitions,
			leaseIntervalMs: options.leaseIntervalMs,
			maxClockSkewMs: options.maxClockSkewMs,
			served: node.servedGroups().filter(serving),
			metrics: node.metrics(),
			table: node.table(),
		}),
		leaseMetrics: () => node.metrics(),
		servingInfo(partition) {
			const view = node.holderOf(partition);
			const deadline = node.deadline(partition);
			if (!serving(partition) || view === undefined || deadline === undefined) return undefined;
			return {
				address: node.address,
				incarnation: node.incarnation,
				fencingToken: view.startTime,
				expirationTime: view.expirationTime,
				leftMs: Math.round(deadline - clock.monotonic()),
			};
		},
		close: () => node.close(),
	};
}

/**
 * Whether `placement` is a {@link LeasesPlacement} (it can say what a command runs under).
 *
 * @example
 * ```ts
 * if (isLeasesPlacement(placement)) log(placement.servingInfo(7));
 * ```
 */
export function isLeasesPlacement(placement: PartitionPlacement): placement is LeasesPlacement {
	return (
		placement.mode === "leases" &&
		typeof (placement as Partial<LeasesPlacement>).servingInfo === "function"
	);
}
