export {
	ConfigError,
	type HostConfig,
	helpText,
	type ParsedArgs,
	parseHostConfig,
	type StorageKind,
} from "./config.ts";
export { EXIT, type HostHandle, type RunHostOptions, runHost, startHost } from "./host.ts";
export {
	type HttpApi,
	type HttpApiState,
	type SlotView,
	type StatusSection,
	startHttpApi,
} from "./http.ts";
export { createLeaderValue, LEADER_VALUE_SEPARATOR, parseLeaderValue } from "./leader-value.ts";
export { type ActResult, createLeaseWorker, type LeaseWorker } from "./lease-worker.ts";
export { createHostLogger, logVVMEvent } from "./logger.ts";
export { createHostMetrics, type HostMetrics } from "./metrics.ts";
export {
	createPartitionRoutes,
	type ExtraRoutes,
	type JsonReply,
	type PartitionRoutesOptions,
} from "./partition-routes.ts";
export { createHostPlacement, type HostPlacement } from "./partitions.ts";
export {
	createLeasesPlacement,
	isLeasesPlacement,
	type LeasesDescription,
	type LeasesPlacement,
	type LeasesPlacementOptions,
	type ServingLease,
} from "./placement-leases.ts";
export { type OpenedStorage, openStorage, StorageOpenError } from "./storage.ts";
