import { parseArgs } from "node:util";
import type { FaultKind } from "./faults-catalog.ts";
import { DEFAULT_FAULT_WEIGHTS, FAULT_HELP, FAULT_KINDS } from "./faults-catalog.ts";

/** The mechanisms vvm-host's test-only mutants remove (its `VVM_UNSAFE_MUTANTS`). */
const MUTANT_NAMES: readonly ["killer", "lease-check", "lease-timer", "unfenced"] = [
	"killer",
	"lease-check",
	"lease-timer",
	"unfenced",
];

/** The leadership mutants (the `leadership` workload's matrix). */
export const LEADERSHIP_MUTANTS: readonly MutantName[] = ["killer", "lease-check", "lease-timer"];
export type MutantName = (typeof MUTANT_NAMES)[number];

/** Every combination of one or more mutants, singles first: what `--mutants` runs by default. */
export const ALL_MUTANT_COMBOS: readonly (readonly MutantName[])[] = [
	["killer"],
	["lease-check"],
	["lease-timer"],
	["killer", "lease-check"],
	["killer", "lease-timer"],
	["lease-check", "lease-timer"],
	["killer", "lease-check", "lease-timer"],
];

/** The operator actions of the commands workload (`--operator`, `src/operator.ts`). */
const OPERATOR_ACTIONS: readonly ["num-vvm", "placement-switch", "root-loss"] = [
	"num-vvm",
	"placement-switch",
	"root-loss",
];
export type OperatorAction = (typeof OPERATOR_ACTIONS)[number];

/** A chaos run's configuration, validated. */
export interface ChaosOptions {
	/**
	 * `leadership`: slot leaders and POST /work, checked from the hosts' logs. `commands`: hosts in
	 * `--placement leases` serving the command processor, clients creating and updating records
	 * with idempotency keys, checked from their history against the storage.
	 */
	readonly workload: "leadership" | "commands";
	/** commands: the hosts' --sequences-trust-level. */
	readonly trustLevel: 0 | 1 | 2;
	/** commands: the hosts' --pipeline-depth; undefined: the host's default. */
	readonly pipelineDepth: number | undefined;
	/** commands: the application's partitions. */
	readonly partitions: number;
	/** commands: the hosts' --lease-interval-ms and --lease-max-clock-skew-ms. */
	readonly leaseIntervalMs: number;
	readonly leaseMaxClockSkewMs: number;
	/**
	 * commands: the hosts' `--placement` at start (default `static` when `operator` has `num-vvm`,
	 * else `leases`); the `placement-switch` action changes it.
	 */
	readonly placement: "static" | "leases";
	/** commands: operator actions taken in turn, in a seeded order (empty: none). */
	readonly operator: readonly OperatorAction[];
	/** commands: the pause before each operator action (after the previous one ended). */
	readonly operatorIntervalMs: number;
	/** commands: concurrent clients and the workspaces they write. */
	readonly clients: number;
	readonly workspaces: number;
	readonly seed: string;
	/** Stop after this many seconds (with `changes`: fail if the target was not reached by then). */
	readonly durationS: number | undefined;
	/** Stop once this many leadership changes happened. */
	readonly changes: number | undefined;
	readonly hosts: number;
	readonly numVVM: number;
	readonly storage: "dyn" | "cas" | "pg" | "redis";
	/** pg: the server (the run makes a schema of its own there, dropped at the end). */
	readonly pgUrl: string;
	/** redis: the server (the run's keys under a prefix of its own, deleted at the end). */
	readonly redisUrl: string;
	readonly casContactPoints: readonly string[];
	readonly casLocalDc: string;
	readonly casReplicationFactor: number;
	readonly casKeyspace: string | undefined;
	readonly keepKeyspace: boolean;
	readonly faults: Readonly<Record<FaultKind, number>>;
	readonly leadershipSeconds: number;
	/** Passed to every host as --max-clock-skew-ms (dyn: the skew the clock faults stay within). */
	readonly maxClockSkewMs: number;
	/** Clock faults draw each host's wall-clock offset from [-range, +range]. */
	readonly clockRangeMs: number;
	readonly faultIntervalMs: number;
	readonly maxConcurrentFaults: number;
	readonly loadIntervalMs: number;
	readonly workIntervalMs: number;
	readonly acquireRetryMs: number;
	readonly outDir: string | undefined;
	readonly hostFrom: "auto" | "dist" | "source";
	readonly progressSeconds: number;
	/** Hosts run with these test-only mutants (one mutant run). */
	readonly unsafeMutants: readonly MutantName[];
	/** `--mutants`: the combinations to run, each a chaos run of its own. */
	readonly mutantCombos: readonly (readonly MutantName[])[] | undefined;
	/** `--check <dir>`: check the logs of a finished run instead of running. */
	readonly check: string | undefined;
}

/** The repository's PostgreSQL (tooling/servers/postgres). */
const DEFAULT_PG_URL = `postgres://vvm@127.0.0.1:${process.env.PG_PORT ?? "54329"}/vvm`;
const DEFAULT_REDIS_URL = `redis://127.0.0.1:${process.env.REDIS_PORT ?? "6390"}/0`;

/** A bad argument: the CLI prints the message and exits with code 2. */
export class ChaosUsageError extends Error {
	override readonly name: string = "ChaosUsageError";
}

const FLAGS = {
	workload: { type: "string" },
	"trust-level": { type: "string" },
	"pipeline-depth": { type: "string" },
	partitions: { type: "string" },
	"lease-interval-ms": { type: "string" },
	"lease-max-clock-skew-ms": { type: "string" },
	clients: { type: "string" },
	workspaces: { type: "string" },
	placement: { type: "string" },
	operator: { type: "string" },
	"operator-interval-ms": { type: "string" },
	seed: { type: "string" },
	duration: { type: "string" },
	changes: { type: "string" },
	hosts: { type: "string" },
	"num-vvm": { type: "string" },
	storage: { type: "string" },
	"cas-contact-points": { type: "string" },
	"cas-local-dc": { type: "string" },
	"cas-replication-factor": { type: "string" },
	"cas-keyspace": { type: "string" },
	"pg-url": { type: "string" },
	"redis-url": { type: "string" },
	"keep-keyspace": { type: "boolean" },
	faults: { type: "string" },
	"leadership-seconds": { type: "string" },
	"max-clock-skew-ms": { type: "string" },
	"clock-range-ms": { type: "string" },
	"fault-interval-ms": { type: "string" },
	"max-concurrent-faults": { type: "string" },
	"load-interval-ms": { type: "string" },
	"work-interval-ms": { type: "string" },
	"acquire-retry-ms": { type: "string" },
	"out-dir": { type: "string" },
	"host-from": { type: "string" },
	"progress-seconds": { type: "string" },
	"unsafe-mutants": { type: "string" },
	mutants: { type: "string" },
	check: { type: "string" },
	help: { type: "boolean", short: "h" },
} as const;

function int(flag: string, raw: string | undefined, min: number, max: number): number | undefined {
	if (raw === undefined) return undefined;
	const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
	if (!Number.isSafeInteger(n) || n < min || n > max) {
		throw new ChaosUsageError(`--${flag} must be an integer in ${min}..${max}, got "${raw}"`);
	}
	return n;
}

function oneOf<T extends string>(flag: string, raw: string, values: readonly T[]): T {
	if (!(values as readonly string[]).includes(raw)) {
		throw new ChaosUsageError(`--${flag} must be one of ${values.join(", ")}, got "${raw}"`);
	}
	return raw as T;
}

/**
 * `all`, `none`, or `kind[=weight],…` (a kind without a weight has its default weight).
 *
 * @example
 * ```ts
 * parseFaultMix("kill=3,stop-long"); // { kill: 3, "stop-long": 2, everything else: 0 }
 * ```
 */
export function parseFaultMix(raw: string): Record<FaultKind, number> {
	const mix = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
	const text = raw.trim();
	if (text === "all") return { ...DEFAULT_FAULT_WEIGHTS };
	if (text === "none") return mix;
	for (const part of text.split(",").map((p) => p.trim())) {
		if (part === "") continue;
		const [name = "", weight] = part.split("=");
		if (!(FAULT_KINDS as readonly string[]).includes(name)) {
			throw new ChaosUsageError(
				`--faults names an unknown fault "${name}" (known: ${FAULT_KINDS.join(", ")}, or all, none)`,
			);
		}
		const kind = name as FaultKind;
		mix[kind] =
			weight === undefined
				? DEFAULT_FAULT_WEIGHTS[kind]
				: (int(`faults ${kind}`, weight, 0, 1000) as number);
	}
	return mix;
}

/** `killer,lease-check` → the names, checked. */
function parseMutantList(flag: string, raw: string, separator: string): MutantName[] {
	const names = raw
		.split(separator)
		.map((n) => n.trim())
		.filter((n) => n !== "");
	if (names.length === 0) throw new ChaosUsageError(`--${flag} names no mutant`);
	for (const n of names) {
		if (!(MUTANT_NAMES as readonly string[]).includes(n)) {
			throw new ChaosUsageError(
				`--${flag} names an unknown mutant "${n}" (known: ${MUTANT_NAMES.join(", ")})`,
			);
		}
	}
	return MUTANT_NAMES.filter((m) => names.includes(m));
}

/** `num-vvm,root-loss` → the actions, checked; `all` is every one. */
function parseOperatorList(raw: string | undefined): OperatorAction[] {
	if (raw === undefined) return [];
	if (raw.trim() === "all") return [...OPERATOR_ACTIONS];
	const names = raw
		.split(",")
		.map((n) => n.trim())
		.filter((n) => n !== "");
	if (names.length === 0) throw new ChaosUsageError("--operator names no action");
	for (const n of names)
		if (!(OPERATOR_ACTIONS as readonly string[]).includes(n))
			throw new ChaosUsageError(
				`--operator names an unknown action "${n}" (known: ${OPERATOR_ACTIONS.join(", ")}, or all)`,
			);
	return OPERATOR_ACTIONS.filter((a) => names.includes(a));
}

function contactPoints(raw: string): string[] {
	const points = raw
		.split(",")
		.map((p) => p.trim())
		.filter((p) => p !== "");
	if (points.length === 0) throw new ChaosUsageError("--cas-contact-points lists no host[:port]");
	return points.map((p) => {
		if (!/^[A-Za-z0-9.\-_]+(:\d{1,5})?$/.test(p)) {
			throw new ChaosUsageError(`--cas-contact-points has an invalid host[:port] "${p}"`);
		}
		return p.includes(":") ? p : `${p}:9042`;
	});
}

/**
 * Parses and validates the command line; every mistake is a {@link ChaosUsageError} naming the
 * flag, before anything starts. Returns `undefined` for `--help`.
 *
 * @example
 * ```ts
 * const options = parseChaosOptions(["--changes", "100", "--seed", "7"]);
 * ```
 */
export function parseChaosOptions(argv: readonly string[]): ChaosOptions | undefined {
	let values: Record<string, string | boolean | undefined>;
	try {
		values = parseArgs({ args: [...argv], options: FLAGS, strict: true, allowPositionals: false })
			.values as Record<string, string | boolean | undefined>;
	} catch (error) {
		throw new ChaosUsageError(
			(error instanceof Error ? error.message : String(error)).replace(
				/\. To specify a positional.*$/s,
				"",
			),
		);
	}
	if (values.help === true) return undefined;
	const s = (flag: keyof typeof FLAGS): string | undefined =>
		typeof values[flag] === "string" ? (values[flag] as string) : undefined;

	const workload = oneOf("workload", s("workload") ?? "leadership", [
		"leadership",
		"commands",
	] as const);
	const commands = workload === "commands";
	const storage = oneOf("storage", s("storage") ?? "dyn", ["dyn", "cas", "pg", "redis"] as const);
	const leadershipSeconds = int("leadership-seconds", s("leadership-seconds"), 1, 60) ?? 2;
	const leaseIntervalMs = int("lease-interval-ms", s("lease-interval-ms"), 500, 600_000) ?? 2_000;
	// Lease holders stop that much before the expiry they read: the wall-clock skew allowed.
	const leaseMaxClockSkewMs =
		int("lease-max-clock-skew-ms", s("lease-max-clock-skew-ms"), 0, leaseIntervalMs / 4 - 1) ??
		Math.floor(leaseIntervalMs / 5);
	if (!commands)
		for (const flag of [
			"trust-level",
			"pipeline-depth",
			"partitions",
			"lease-interval-ms",
			"lease-max-clock-skew-ms",
			"clients",
			"workspaces",
			"placement",
			"operator",
			"operator-interval-ms",
		] as const)
			if (s(flag) !== undefined)
				throw new ChaosUsageError(`--${flag} is an option of --workload commands`);
	const d = leadershipSeconds * 1000;
	const hosts = int("hosts", s("hosts"), 1, 32) ?? 4;
	const numVVM = int("num-vvm", s("num-vvm"), 1, 32) ?? 2;
	if (numVVM > hosts) {
		throw new ChaosUsageError(
			`--num-vvm ${numVVM} is more than --hosts ${hosts}: some slots would never have a leader`,
		);
	}
	const durationS = int("duration", s("duration"), 1, 7 * 24 * 3600);
	const changes = int("changes", s("changes"), 1, 10_000_000);
	if (commands && changes !== undefined)
		throw new ChaosUsageError(
			"--changes counts slot leadership changes: use --duration with --workload commands",
		);
	// A d/5 skew (400 ms at d = 2 s) on DynamoDB, where expiry is compared on each host's clock;
	// Cassandra expires records on the server, so its hosts' wall clocks play no part.
	const maxClockSkewMs =
		int("max-clock-skew-ms", s("max-clock-skew-ms"), 0, d / 2) ??
		(storage === "dyn" ? Math.floor(d / 5) : 0);
	// Leases compare every host's wall clock with the placement driver's: within half the skew
	// allowed, whatever the storage.
	const clockRangeMs =
		int("clock-range-ms", s("clock-range-ms"), 0, 24 * 3600 * 1000) ??
		(commands
			? Math.floor(leaseMaxClockSkewMs / 2)
			: storage === "dyn"
				? Math.floor(maxClockSkewMs / 2)
				: 30_000);
	const pgUrl = s("pg-url") ?? DEFAULT_PG_URL;
	if (!/^postgres(ql)?:\/\/[^/]+\/\w+$/.test(pgUrl))
		throw new ChaosUsageError(
			`--pg-url must be postgres://user@host:port/database, got "${pgUrl}"`,
		);
	const redisUrl = s("redis-url") ?? DEFAULT_REDIS_URL;
	if (!/^redis:\/\/[^/@]+(\/\d{1,5})?$/.test(redisUrl))
		throw new ChaosUsageError(
			`--redis-url must be redis://host:port[/db] (no password: the run's proxies see it), got "${redisUrl}"`,
		);
	const casContactPoints = contactPoints(s("cas-contact-points") ?? "127.0.0.1:9042");
	const casReplicationFactor =
		int("cas-replication-factor", s("cas-replication-factor"), 1, 9) ?? 1;
	const casKeyspace = s("cas-keyspace");
	if (casKeyspace !== undefined && !/^[a-z][a-z0-9_]{0,47}$/.test(casKeyspace)) {
		throw new ChaosUsageError(
			`--cas-keyspace must match ^[a-z][a-z0-9_]{0,47}$, got "${casKeyspace}"`,
		);
	}
	const operator = parseOperatorList(s("operator"));
	const placement = oneOf(
		"placement",
		s("placement") ?? (operator.includes("num-vvm") ? "static" : "leases"),
		["static", "leases"] as const,
	);
	if (operator.includes("num-vvm") && hosts < 2)
		throw new ChaosUsageError("--operator num-vvm changes --num-vvm: it needs --hosts 2 or more");
	const mutantsRaw = s("mutants");
	const unsafeRaw = s("unsafe-mutants");
	if (mutantsRaw !== undefined && unsafeRaw !== undefined) {
		throw new ChaosUsageError("--mutants and --unsafe-mutants exclude each other");
	}
	const mutantCombos =
		mutantsRaw === undefined
			? undefined
			: mutantsRaw.trim() === "all"
				? commands
					? [["unfenced"] as const]
					: ALL_MUTANT_COMBOS
				: mutantsRaw.split(",").map((combo) => parseMutantList("mutants", combo, "+"));
	return {
		workload,
		trustLevel: (int("trust-level", s("trust-level"), 0, 2) ?? 0) as 0 | 1 | 2,
		pipelineDepth: int("pipeline-depth", s("pipeline-depth"), 1, 32),
		partitions: int("partitions", s("partitions"), 1, 1024) ?? 8,
		leaseIntervalMs,
		leaseMaxClockSkewMs,
		placement,
		operator,
		operatorIntervalMs:
			int("operator-interval-ms", s("operator-interval-ms"), 0, 3_600_000) ?? 10_000,
		clients: int("clients", s("clients"), 1, 256) ?? 8,
		workspaces: int("workspaces", s("workspaces"), 1, 100_000) ?? 24,
		seed: s("seed") ?? String(Date.now() % 1_000_000),
		durationS: durationS ?? (changes === undefined ? 60 : undefined),
		changes,
		hosts,
		numVVM,
		storage,
		pgUrl,
		redisUrl,
		casContactPoints,
		casLocalDc: s("cas-local-dc") ?? "datacenter1",
		casReplicationFactor,
		casKeyspace,
		keepKeyspace: values["keep-keyspace"] === true,
		faults: parseFaultMix(s("faults") ?? "all"),
		leadershipSeconds,
		maxClockSkewMs,
		clockRangeMs,
		faultIntervalMs: int("fault-interval-ms", s("fault-interval-ms"), 1, 3_600_000) ?? d / 2,
		maxConcurrentFaults: int("max-concurrent-faults", s("max-concurrent-faults"), 1, 100) ?? 3,
		loadIntervalMs: int("load-interval-ms", s("load-interval-ms"), 0, 60_000) ?? 20,
		workIntervalMs: int("work-interval-ms", s("work-interval-ms"), 0, 60_000) ?? 50,
		acquireRetryMs: int("acquire-retry-ms", s("acquire-retry-ms"), 1, 60_000) ?? 100,
		outDir: s("out-dir"),
		hostFrom: oneOf("host-from", s("host-from") ?? "auto", ["auto", "dist", "source"] as const),
		progressSeconds: int("progress-seconds", s("progress-seconds"), 1, 3600) ?? 5,
		unsafeMutants: unsafeRaw === undefined ? [] : parseMutantList("unsafe-mutants", unsafeRaw, ","),
		mutantCombos,
		check: s("check"),
	};
}

/** The `--help` text. */
export function chaosHelp(): string {
	const faults = Object.entries(FAULT_HELP).map(
		([k, v]) => `    ${k.padEnd(17)} ${v} (weight ${DEFAULT_FAULT_WEIGHTS[k as FaultKind]})`,
	);
	return [
		"pnpm chaos [options]: real vvm-host processes under seeded faults, one of two workloads, and its",
		"checker. Exit 0 only when the checker passes.",
		"",
		"Workload (default leadership):",
		"  --workload leadership      slot leaders and POST /work; the hosts' logs prove that no two",
		"                             incarnations of a slot acted at overlapping times, tokens only grow",
		"  --workload commands        hosts in --placement leases serving the command processor; clients",
		"                             create records and update their own (registers) with idempotency",
		"                             keys; their history against the storage proves no acknowledged",
		"                             command lost, reverted or applied twice",
		"  --trust-level 0|1|2        commands: --sequences-trust-level of the hosts (default 0)",
		"  --pipeline-depth <n>       commands: --pipeline-depth of the hosts, 1..32 (default: the host's)",
		"  --partitions <n>           commands: partitions (default 8)",
		"  --lease-interval-ms <ms>   commands: partition lease length (default 2000)",
		"  --lease-max-clock-skew-ms <ms>  commands: (default interval/5)",
		"  --clients <n>              commands: concurrent clients (default 8)",
		"  --workspaces <n>           commands: workspaces they write (default 24)",
		"  --placement static|leases  commands: the hosts' placement at start (default static with",
		"                             --operator num-vvm, else leases)",
		"  --operator <list>          commands: operator actions, in turn (seeded), each after",
		"                             --operator-interval-ms: num-vvm (stop every host, start one with",
		"                             --num-vvm M --num-vvm-from N, then the rest), placement-switch",
		"                             (stop all, start all in the other --placement, same namespace),",
		"                             root-loss (delete the lease batch root, see every host stop",
		"                             granting and report it, run vvm-host repair-lease-root, see every",
		"                             partition served again); all = the three. An action that needs",
		"                             the other placement is preceded by a switch",
		"  --operator-interval-ms <ms>  commands: pause before each operator action (default 10000)",
		"",
		"Run length (default --duration 60):",
		"  --duration <s>             stop after s seconds",
		"  --changes <n>              stop after n leadership changes (fails if --duration ends first;",
		"                             alone, it may take as long as it needs)",
		"  --seed <text>              seed of every random decision (default: printed at start)",
		"Cluster:",
		"  --hosts <n>                host processes (default 4)",
		"  --num-vvm <n>              leader slots (default 2)",
		"  --leadership-seconds <d>   leadership duration d (default 2)",
		"  --storage dyn|cas|pg|redis dyn: a DynamoDB Local of this run's own on a free port (default);",
		"                             cas: Cassandra at --cas-contact-points; pg: PostgreSQL at --pg-url;",
		"                             redis: Redis at --redis-url",
		`  --pg-url <url>             (default ${DEFAULT_PG_URL}: tooling/servers/postgres); a schema of`,
		"                             the run's own, dropped at the end",
		`  --redis-url <url>          (default ${DEFAULT_REDIS_URL}: tooling/servers/redis); keys under`,
		"                             a prefix of the run's own, deleted at the end",
		"  --cas-contact-points <l>   host[:port],... (default 127.0.0.1:9042); list every node of a",
		"                             cluster: each gets a proxy per host and --cas-address-map",
		"  --cas-replication-factor <n>  SimpleStrategy RF of the run's keyspace (default 1; 3 on the cluster)",
		"  --cas-local-dc <dc>        (default datacenter1)",
		"  --cas-keyspace <name>      (default vvm_chaos_<pid>_<time>, dropped at the end)",
		"  --keep-keyspace            do not drop it (nor the pg schema, nor the redis keys)",
		"Faults:",
		"  --faults <mix>             all (default), none, or kind[=weight],...:",
		...faults,
		"  --fault-interval-ms <ms>   mean pause between fault starts (default d/2)",
		"  --max-concurrent-faults <n>  (default 3)",
		"  --max-clock-skew-ms <ms>   passed to every host (default dyn d/5, cas 0)",
		"  --clock-range-ms <ms>      clock offsets within +-range (default dyn: skew/2, cas: 30000)",
		"Load and hosts:",
		"  --load-interval-ms <ms>    pause between POST /work per host (default 20)",
		"  --work-interval-ms <ms>    the hosts' own worker tick (default 50)",
		"  --acquire-retry-ms <ms>    (default 100)",
		"  --host-from auto|dist|source  built apps/vvm-host/dist (auto: if newer than the sources) or tsx",
		"Output:",
		"  --out-dir <dir>            logs of the run (default .chaos/<time>-seed<seed>)",
		"  --progress-seconds <s>     progress line interval (default 5)",
		"  --check <dir>              only check the logs of a finished run",
		"Mutants (test-only broken hosts; never in production):",
		"  --unsafe-mutants <list>    one run with hosts under VVM_UNSAFE_MUTANTS=<list>",
		"  --mutants all|<a+b>,...    one run per combination (all: the 7 of killer, lease-check,",
		"                             lease-timer); exit 0 iff each combination with all three",
		"                             mechanisms removed was caught by the checker",
	].join("\n");
}
