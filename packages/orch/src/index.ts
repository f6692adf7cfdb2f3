export { VVMError, type VVMErrorCode } from "./errors.ts";
export type { VVMEvent, VVMLifecycleEvent } from "./events.ts";
export { createLeaderValue, LEADER_VALUE_SEPARATOR, parseLeaderValue } from "./leader-value.ts";
export type { VVMService, VVMServiceContext } from "./service.ts";
export {
	checkVVMTimings,
	MAX_LEADERSHIP_SECONDS,
	MAX_NUM_VVM,
	VVM_TIMING_DEFAULTS,
	type VVMTimings,
} from "./timings.ts";
export {
	DEFAULT_ACQUIRE_RETRY_MS,
	DEFAULT_ACQUISITION_DURATION_MS,
	DEFAULT_LEADERSHIP_DURATION_SECONDS,
	type ElectionsFactory,
	provideVVM,
	type VVM,
	type VVMConfig,
	type VVMLeadership,
} from "./vvm.ts";
