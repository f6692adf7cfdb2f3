/** Every fault the chaos tool injects; the report counts each kind. */
export const FAULT_KINDS = [
	"kill",
	"restart",
	"stop-short",
	"stop-long",
	"cpu-starve",
	"storage-pause",
	"proxy-delay",
	"proxy-hold",
	"proxy-hold-writes",
	"proxy-drop",
	"proxy-drop-reply",
	"clock",
] as const;

/** One of {@link FAULT_KINDS}. */
export type FaultKind = (typeof FAULT_KINDS)[number];

/** What each fault does, for `--help` and the README. */
export const FAULT_HELP: Readonly<Record<FaultKind, string>> = {
	kill: "SIGKILL a host (a leader with probability 0.7); it restarts after 0.1-1 s",
	restart: "SIGTERM a host (graceful: it releases its slot); it restarts",
	"stop-short": "SIGSTOP a host for 0.05-0.5 d (shorter than its 0.8 d lease), then SIGCONT",
	"stop-long":
		"SIGSTOP a host for 0.8-2 d (longer than its lease), then SIGCONT: its killer must end it",
	"cpu-starve":
		"starve a host for 1-3 d: SIGSTOP/SIGCONT in 20-200 ms cycles, stopped 30-90% of each",
	"storage-pause":
		"pause the storage for 0.3-1.5 d: SIGSTOP of the run's own DynamoDB Local, or every host's Cassandra path held by its proxy",
	"proxy-delay": "one host's storage path delays every chunk by 0.05-0.5 d, for 1-3 d",
	"proxy-hold":
		"one host's storage path holds every byte for 0.3-1.5 d, then delivers it all: requests land late, past the lease",
	"proxy-hold-writes":
		"one host's storage path holds its write requests for 0.5-2 d while reads pass (DynamoDB, by X-Amz-Target; Cassandra: everything), then delivers them: writes land after the lease, the process kept reading and acting",
	"proxy-drop":
		"one host's storage path drops everything for 0.3-1.5 d, then resets its connections",
	"proxy-drop-reply":
		"one host's storage path forwards requests but drops the replies for 0.3-1.5 d (ambiguous writes), then resets its connections",
	clock:
		"step one host's wall clock (libfaketime) to a new offset within --clock-range-ms; it keeps it across restarts",
};

/** Default weights of `--faults all`. */
export const DEFAULT_FAULT_WEIGHTS: Readonly<Record<FaultKind, number>> = {
	kill: 3,
	restart: 1,
	"stop-short": 2,
	"stop-long": 2,
	"cpu-starve": 1,
	"storage-pause": 1,
	"proxy-delay": 1,
	"proxy-hold": 1,
	"proxy-hold-writes": 1,
	"proxy-drop": 1,
	"proxy-drop-reply": 1,
	clock: 2,
};
