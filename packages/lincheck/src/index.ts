// The linearizability check of the TTL storage drivers (private): see the README.
export type { CheckOptions, Verdict } from "./checker.ts";
export { checkHistory } from "./checker.ts";
export type { FaultCounts, FaultLayer, FaultLayerOptions } from "./fault-layer.ts";
export { withFaultLayer } from "./fault-layer.ts";
export type { FaultProxy, FaultProxyOptions, ProxyCounts, ProxyMode } from "./fault-proxy.ts";
export { startFaultProxy } from "./fault-proxy.ts";
export type { BatchEntry, FenceRef, HistoryOp, OpInput, OpOutput } from "./history.ts";
export type { FencingMode, ModelOptions, ModelState, Step } from "./model.ts";
export { accepts, apply, expandBatches, ITEM_ID_STEP, initialState } from "./model.ts";
export { mutants } from "./mutants.ts";
export { describeWindow, summary, writeFailures } from "./report.ts";
export type { Rng } from "./rng.ts";
export { createRng } from "./rng.ts";
export type { ProxiedStorage } from "./servers.ts";
export { proxiedCassandra, proxiedDynamo, proxiedPostgres } from "./servers.ts";
export type {
	LincheckOptions,
	LincheckReport,
	StampingStorage,
	WindowResult,
} from "./workload.ts";
export { runLincheck } from "./workload.ts";
