export { RecordingKiller, type ScheduledKill } from "./recording-killer.ts";
export {
	type ElectionsSuiteOptions,
	electionsCases,
	electionsTestSuite,
	type SuiteCase,
} from "./suite.ts";
