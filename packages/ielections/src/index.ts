export { type Campaign, type CampaignOptions, campaign } from "./campaign.ts";
export {
	createElections,
	type Elections,
	type ElectionsOptions,
	type LeadershipState,
} from "./elections.ts";
export { createElectionsStorage, type ElectionsCodec } from "./elections-storage.ts";
export { ELECTIONS_ERROR_CODES, ElectionsError, type ElectionsErrorCode } from "./errors.ts";
export type { LeadershipEvent } from "./events.ts";
export type { Killer } from "./killer.ts";
export { type ProcessKillerOptions, processKiller } from "./process-killer.ts";
export {
	LEADERSHIP_TIMINGS,
	type LeadershipTimings,
	MAX_LEADERSHIP_SECONDS,
} from "./timings.ts";
export type { FencingCounter, ITTLStorage } from "./ttl-storage.ts";
export {
	VVM_FENCING_PREFIX,
	VVM_LEADER_PREFIX,
	vvmLeadershipCodec,
	vvmLeadershipStorage,
} from "./vvm-leadership-storage.ts";
