export {
	type CpPartitions,
	type CpPartitionsOptions,
	deployCpPartitions,
} from "./cp-partitions.ts";
export {
	createLeasesPlacement,
	isLeasesPlacement,
	type LeasesDescription,
	type LeasesPlacement,
	type LeasesPlacementOptions,
	type ServingLease,
} from "./leases-placement.ts";
export {
	EPOCH_RETRY_DEFAULTS,
	type EpochRetryOptions,
	type ResolvedEpochRetry,
	resolveEpochRetry,
} from "./options.ts";
export {
	changeStaticNumVVM,
	checkStaticNumVVM,
	claimPartitionEpoch,
	DEFAULT_PLACEMENT_NAMESPACE,
	NumVVMMismatchError,
	type PartitionEpoch,
	partitionEpochsKey,
	readPartitionEpoch,
	readStaticNumVVM,
	staticPlacementKey,
	takePartitionEpoch,
} from "./partition-epochs.ts";
export {
	abortable,
	locateBy,
	type PartitionGrant,
	type PartitionHolder,
	type PartitionLocation,
	type PartitionPlacement,
	type PlacementHandlers,
} from "./placement.ts";
export {
	createStaticPlacement,
	PartitionEpochUnavailableError,
	type StaticPlacement,
	type StaticPlacementOptions,
	staticPartitionsOf,
	staticSlotOf,
} from "./static-placement.ts";
