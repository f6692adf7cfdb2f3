export { type BenchOptions, type BenchResult, benchTTLStorage, formatBenchTable } from "./bench.ts";
export {
	type FaultAction,
	type FaultCall,
	type FaultRule,
	type FaultyTTLStorage,
	faults,
	type StorageOperation,
	type WithFaultsOptions,
	withFaults,
} from "./faults.ts";
export {
	type StorageContext,
	type SuiteCase,
	type TTLStorageSuiteOptions,
	ttlStorageCases,
	ttlStorageTestSuite,
} from "./suite.ts";
