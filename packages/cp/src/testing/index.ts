export type { CpSuiteCase } from "./case.ts";
export {
	type AcknowledgedCommand,
	type CheckOptions,
	type CheckReport,
	checkCpStorage,
	readCpRecord,
	type ScannedEvent,
	scanCpEvents,
} from "./checker.ts";
export {
	type CrashableStorage,
	type CrashCall,
	createCrashableStorage,
} from "./crashable-storage.ts";
export { type DeposedSuiteOptions, deposedLeaderSuite } from "./deposed-leader.ts";
export { type CpSuiteOptions, cpTestCases, cpTestSuite } from "./suite.ts";
