export { LEASES_ERROR_CODES, LeasesError, type LeasesErrorCode } from "./errors.ts";
export type { LeaseEndReason, LeaseEvent, SlowLoop, TickSummary } from "./events.ts";
export type { LeaseEnd, LeaseGrant } from "./holder.ts";
export { MAX_ADDRESS_BYTES, MAX_NAMESPACE_BYTES } from "./keys.ts";
export type { LeaseTable, LeaseView } from "./lease-table.ts";
export type { LeaseMetrics } from "./metrics.ts";
export type { Lease, LeaseHolder } from "./model.ts";
export { createLeaseNode, type LeaseNode } from "./node.ts";
export {
	checkLeaseTimings,
	LEASE_DEFAULTS,
	type LeaseNodeOptions,
	type LeaseTimings,
	MAX_GROUPS,
	type PlacementDriverOptions,
} from "./options.ts";
export { readLeaseTable } from "./read-table.ts";
export {
	type RepairLeaseRootOptions,
	type RepairLeaseRootResult,
	repairLeaseRoot,
} from "./repair.ts";
