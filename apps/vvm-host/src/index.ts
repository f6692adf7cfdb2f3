export {
	type ApiRoute,
	type ApiRouteError,
	HOST_APP,
	isApiPath,
	parseApiRoute,
} from "./api-routes.ts";
export { type ApiV2Deps, createApiV2Handler } from "./api-v2.ts";
export {
	ConfigError,
	type HostConfig,
	helpText,
	type ParsedArgs,
	parseHostConfig,
	type StorageKind,
} from "./config.ts";
export {
	type CreatedPlacement,
	createPlacement,
	PLACEMENT_MODES,
	type PlacementDeps,
	type PlacementMode,
} from "./create-placement.ts";
export {
	EXIT,
	HOST_APP_ID,
	type HostHandle,
	type RunHostOptions,
	runHost,
	startHost,
} from "./host.ts";
export {
	type HttpApi,
	type HttpApiState,
	type SlotView,
	type StatusSection,
	startHttpApi,
} from "./http.ts";
export { type ActResult, createLeaseWorker, type LeaseWorker } from "./lease-worker.ts";
export { servePartitions } from "./leases-mode.ts";
export { createHostLogger, logVVMEvent } from "./logger.ts";
export { createHostMetrics, type HostMetrics } from "./metrics.ts";
export {
	createPartitionRoutes,
	type ExtraRoutes,
	type JsonReply,
	type PartitionRoutesOptions,
} from "./partition-routes.ts";
export { type OpenedStorage, openStorage, StorageOpenError } from "./storage.ts";
