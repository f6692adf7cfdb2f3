export type { AddHostOptions, LeaseClusterOptions, TestHost } from "./cluster.ts";
export { LeaseCluster } from "./cluster.ts";
export { checkGrants } from "./grant-checker.ts";
export { type TrackedTTLStorage, trackInflight } from "./inflight.ts";
export { type Overlap, type ServingInterval, ServingLog } from "./serving-log.ts";
export { SkewedClock } from "./skewed-clock.ts";
export {
	LEASES_CASES,
	type LeasesSuiteOptions,
	leasesCases,
	leasesTestSuite,
	type SuiteCase,
} from "./suite.ts";
export { wrapStorage } from "./wrap-storage.ts";
