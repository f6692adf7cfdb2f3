// The host's configuration, in sections: storage, http, leadership, cp, placement. Each flag's
// text is read here (options.ts); each section's rules are its package's: the driver's names
// (storage/), @vvm/orch's timings, @vvm/cp's settings, @vvm/leases' lease timings.
import type { ParseArgsConfig } from "node:util";
import { parseArgs } from "node:util";
import type { CpAdmission, CpSettings } from "@vvm/cp";
import { checkCpAdmission, checkCpSettings } from "@vvm/cp";
import type { LeaseTimings } from "@vvm/leases";
import { checkLeaseTimings, LEASE_DEFAULTS, MAX_GROUPS } from "@vvm/leases";
import type { VVMTimings } from "@vvm/orch";
import { checkVVMTimings, VVM_TIMING_DEFAULTS } from "@vvm/orch";
import type { AuthSettings } from "./http/auth.ts";
import { JWT_CLAIMS } from "./http/auth.ts";
import type { AllowedHosts } from "./http/host-names.ts";
import { parseAllowedHosts, parseHostPort, parseListenHost } from "./http/host-names.ts";
import { defaultMaxRequestsInFlight } from "./http/overload.ts";
import type { OptionSpec } from "./options.ts";
import { ConfigError, integer, intIn, nonEmpty, offOrIntIn, oneOf, ownedBy } from "./options.ts";
import type { StorageEntry } from "./storage/entry.ts";
import type { StorageConfig } from "./storage/index.ts";
import { STORAGES } from "./storage/index.ts";
import type { UnsafeMutant } from "./unsafe-mutants.ts";
import { parseUnsafeMutants, UNSAFE_MUTANTS_ENV, UNSAFE_MUTANTS_FLAG } from "./unsafe-mutants.ts";

export { ConfigError } from "./options.ts";

/**
 * `--max-event-loop-delay-ms`'s default: well above the loop's delay while the host keeps up
 * (a few ms; a garbage collection or a large WLog page tens), well below the seconds an
 * overloaded loop falls behind (README, "Overload").
 */
const DEFAULT_MAX_EVENT_LOOP_DELAY_MS = 100;

/**
 * `--max-event-loop-utilization`'s default, percent: a loop busier than this has too little idle
 * time left to take in what arrives without a queue in its sockets (README, "Overload").
 */
const DEFAULT_MAX_EVENT_LOOP_UTILIZATION = 85;

/** `--max-requests-in-flight`'s largest value (a bound far above any connection limit). */
const MAX_REQUESTS_IN_FLIGHT = 1_000_000;

/** The flag that lets the host listen beyond loopback although it authenticates nobody. */
const INSECURE_NO_AUTH_FLAG = "insecure-no-auth";

/**
 * Whether a listen address reaches this machine only: `localhost`, 127.0.0.0/8, `::1` (`0.0.0.0`
 * and `::` listen on every interface, so they are not).
 */
export function isLoopback(host: string): boolean {
	const h = host
		.trim()
		.toLowerCase()
		.replace(/^\[(.*)\]$/, "$1");
	return (
		h === "localhost" ||
		h === "::1" ||
		/^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) ||
		/^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h)
	);
}

/** The values of `--placement`. */
const PLACEMENT_MODES: readonly ["static", "leases"] = ["static", "leases"];

/** A placement mode (`--placement`). */
export type PlacementMode = (typeof PLACEMENT_MODES)[number];

/** The HTTP section: where the host listens and what it calls itself. */
interface HttpConfig {
	readonly host: string;
	readonly port: number;
	/**
	 * `undefined`: `<host>:<bound port>`. The leader record stores `<address>#<nonce>`, a new
	 * nonce per run (see `createLeaderValue` of `@vvm/orch`).
	 */
	readonly address: string | undefined;
	/** The demo lease-guarded worker's tick; 0 disables it. */
	readonly workIntervalMs: number;
	/** HTTPS: a PEM certificate (chain) file and its private key file; both or neither. */
	readonly tlsCert?: string;
	readonly tlsKey?: string;
	/**
	 * Overload: API v2 requests are shed (503) while the event loop's delay exceeds this, ms;
	 * 0: never (`--max-event-loop-delay-ms`).
	 */
	readonly maxEventLoopDelayMs: number;
	/**
	 * Overload: API v2 requests in flight at once; past it one is shed (503) on arrival, before
	 * its body is read; 0: no bound (`--max-requests-in-flight`, default from `--partitions`).
	 */
	readonly maxRequestsInFlight: number;
	/**
	 * Overload: while the event loop is busier than this, percent, and the in-flight bound
	 * refuses requests, that bound is lowered (down to 2), then raised back once the loop has
	 * idle time; 0: never (`--max-event-loop-utilization`).
	 */
	readonly maxEventLoopUtilization: number;
	/**
	 * The `Host` names served besides IP addresses, `localhost` and `*.localhost` (DNS rebinding);
	 * `"*"`: any. Unset: none without authentication, any with it (`--allowed-hosts`).
	 */
	readonly allowedHosts: AllowedHosts;
}

/** The placement section: who serves which partition, and the lease cluster's timings. */
interface PlacementConfig {
	/**
	 * `static` (partition p by the leader of slot `p mod numVVM + 1`) or `leases` (partition
	 * leases of `@vvm/leases`, any live host).
	 */
	readonly mode: PlacementMode;
	/** leases: lease length, skew bound and record prefix (`--lease-*`, `@vvm/leases`' rules). */
	readonly lease: LeaseTimings;
	/**
	 * static: `--num-vvm-from`, the cluster's stored numVVM this host changes to `--num-vvm` at
	 * start (once, with every VVM stopped: the host README, "Changing --num-vvm").
	 */
	readonly numVVMFrom?: number;
}

/** The host's validated configuration, one section per owner. */
export interface HostConfig {
	readonly storage: StorageConfig;
	readonly http: HttpConfig;
	/** The VVM's slots and timings (`@vvm/orch`'s rules); `leadershipSeconds` is the lease. */
	readonly leadership: VVMTimings;
	/**
	 * The command processor's settings and its admission bounds (`@vvm/cp`'s rules:
	 * `checkCpSettings`, `checkCpAdmission`).
	 */
	readonly cp: CpSettings & CpAdmission;
	readonly placement: PlacementConfig;
	/** Who may call the host (`--auth-*`); nothing configured: no authentication (loopback only). */
	readonly auth: AuthSettings;
	readonly logLevel: string;
	/**
	 * TEST-ONLY mutants that break safety on purpose (chaos test): `VVM_UNSAFE_MUTANTS` plus the
	 * `--unsafe-allow-mutants` flag. Empty in any normal run; never for production.
	 */
	readonly unsafeMutants: readonly UnsafeMutant[];
}

/** The sections read from flags (the storage's own settings are its entry's). */
type Section = "host" | "http" | "auth" | "leadership" | "cp" | "placement";

interface SectionSpec extends OptionSpec {
	readonly section: Section;
}

const spec = (section: Section, specs: readonly OptionSpec[]): SectionSpec[] =>
	specs.map((s) => ({ ...s, section }));

const SPECS: readonly SectionSpec[] = [
	...spec("host", [
		{
			key: "storage",
			flag: "storage",
			env: ["VVM_STORAGE"],
			def: STORAGES[0]?.kind,
			parse: oneOf(STORAGES.map((s) => s.kind)),
			help: `storage: ${STORAGES.map((s) => `${s.kind} (${s.summary})`).join(", ")}`,
		},
	]),
	...spec("leadership", [
		{
			key: "leadershipSeconds",
			flag: "leadership-seconds",
			env: ["VVM_LEADERSHIP_SECONDS"],
			def: String(VVM_TIMING_DEFAULTS.leadershipSeconds),
			parse: integer,
			help: "leadership duration (TTL of the leader record); renewal every 1/4, the process may act until 0.8 of it after the last renewal",
		},
		{
			key: "maxClockSkewMs",
			flag: "max-clock-skew-ms",
			env: ["VVM_MAX_CLOCK_SKEW_MS"],
			def: String(VVM_TIMING_DEFAULTS.maxClockSkewMs),
			parse: integer,
			help: "wall-clock skew between hosts you guarantee (NTP); the lease and the killer end that much before the leader record expires (at most half the leadership duration)",
		},
		{
			key: "acquisitionDurationMs",
			flag: "acquire-timeout-ms",
			env: ["VVM_ACQUIRE_TIMEOUT_MS"],
			def: String(VVM_TIMING_DEFAULTS.acquisitionDurationMs),
			parse: integer,
			help: "how long to wait for a free slot before giving up (exit 1)",
		},
		{
			key: "acquireRetryMs",
			flag: "acquire-retry-ms",
			env: ["VVM_ACQUIRE_RETRY_MS"],
			def: String(VVM_TIMING_DEFAULTS.acquireRetryMs),
			parse: integer,
			help: "pause between acquisition attempts",
		},
		{
			key: "numVVM",
			flag: "num-vvm",
			env: ["VVM_NUM"],
			def: String(VVM_TIMING_DEFAULTS.numVVM),
			parse: integer,
			help: "number of leader slots 1..N (VVMs that lead at once)",
		},
	]),
	...spec("http", [
		{
			key: "address",
			flag: "address",
			env: ["VVM_ADDRESS"],
			def: undefined,
			parse: parseHostPort,
			help: "this VVM's address, host:port ([IPv6]:port), as other hosts reach it (a 421's Location); default <http-host>:<bound http port>; the leader record stores <address>#<random nonce>, the nonce new on every start",
		},
		{
			key: "host",
			flag: "http-host",
			env: ["VVM_HTTP_HOST"],
			def: "127.0.0.1",
			parse: parseListenHost,
			help: "HTTP listen address (an IPv6 address bare or in brackets: ::1 or [::1])",
		},
		{
			key: "port",
			flag: "http-port",
			env: ["VVM_HTTP_PORT"],
			def: "8080",
			parse: intIn(0, 65_535),
			help: 'HTTP port; 0 picks a free one (logged as "listening")',
		},
		{
			key: "tlsCert",
			flag: "tls-cert",
			env: ["VVM_TLS_CERT"],
			def: undefined,
			parse: nonEmpty,
			help: "HTTPS: a PEM certificate (chain) file; with --tls-key the host speaks only HTTPS",
		},
		{
			key: "tlsKey",
			flag: "tls-key",
			env: ["VVM_TLS_KEY"],
			def: undefined,
			parse: nonEmpty,
			help: "HTTPS: the PEM private key file of --tls-cert",
		},
		{
			key: "allowedHosts",
			flag: "allowed-hosts",
			env: ["VVM_ALLOWED_HOSTS"],
			def: undefined,
			parse: parseAllowedHosts,
			help: 'the names a request\'s Host may give besides IP addresses, localhost and *.localhost, comma-separated (".example.com": every name under it), or "*": any; others are refused 403 (a page that rebinds its own name to this host, DNS rebinding); unset: none without authentication, any with it',
		},
		{
			key: "workIntervalMs",
			flag: "work-interval-ms",
			env: ["VVM_WORK_INTERVAL_MS"],
			def: "1000",
			parse: intIn(0, 2_147_483_647),
			help: "demo lease-guarded worker tick; 0 disables it",
		},
		{
			key: "maxEventLoopDelayMs",
			flag: "max-event-loop-delay-ms",
			env: ["VVM_MAX_EVENT_LOOP_DELAY_MS"],
			def: String(DEFAULT_MAX_EVENT_LOOP_DELAY_MS),
			parse: offOrIntIn(60_000),
			help: 'overload: while the event loop runs later than this, API v2 requests are answered 503 + Retry-After at once, before their body is read (CP_BUSY, committed no); probes, /metrics and operator routes are always served; 0..60000, 0 or "off": never',
		},
		{
			key: "maxRequestsInFlight",
			flag: "max-requests-in-flight",
			env: ["VVM_MAX_REQUESTS_IN_FLIGHT"],
			def: undefined,
			parse: offOrIntIn(MAX_REQUESTS_IN_FLIGHT),
			help: `overload: API v2 requests served at once; one more is answered 503 + Retry-After on arrival, before its body is read (CP_BUSY, committed no); probes, /metrics and operator routes are never counted or shed; 0..${MAX_REQUESTS_IN_FLIGHT}, 0 or "off": no bound; unset: 8 per partition (--partitions), at least 64, at most 4096`,
		},
		{
			key: "maxEventLoopUtilization",
			flag: "max-event-loop-utilization",
			env: ["VVM_MAX_EVENT_LOOP_UTILIZATION"],
			def: String(DEFAULT_MAX_EVENT_LOOP_UTILIZATION),
			parse: offOrIntIn(99),
			help: 'overload: percent; while the event loop is busier than this and --max-requests-in-flight refuses requests, that bound is halved every 25 ms (down to 2), and raised by an eighth at most every 100 ms while the loop is 10 points under, so what is accepted is not delayed behind a saturated loop; 0..99, 0 or "off": never (a fixed bound)',
		},
	]),
	...spec("auth", [
		{
			key: "tokensFile",
			flag: "auth-tokens-file",
			env: ["VVM_AUTH_TOKENS_FILE"],
			def: undefined,
			parse: nonEmpty,
			help: 'static bearer tokens: a JSON file { "tokens": [{ "name", "token", "workspaces": [1001] or "*", "operator": true|false }] }',
		},
		{
			key: "jwksFile",
			flag: "auth-jwks-file",
			env: ["VVM_AUTH_JWKS_FILE"],
			def: undefined,
			parse: nonEmpty,
			help: `JWT bearer tokens verified by the keys of this JWKS file; claims ${JWT_CLAIMS.workspaces} (array of wsids or "*") and ${JWT_CLAIMS.operator} (true), exp required`,
		},
		{
			key: "jwtPublicKeyFile",
			flag: "auth-jwt-public-key",
			env: ["VVM_AUTH_JWT_PUBLIC_KEY"],
			def: undefined,
			parse: nonEmpty,
			help: "JWT bearer tokens verified by this PEM public key (SPKI), instead of a JWKS file",
		},
		{
			key: "jwtAlgorithm",
			flag: "auth-jwt-algorithm",
			env: ["VVM_AUTH_JWT_ALGORITHM"],
			def: "ES256",
			parse: oneOf(["ES256", "ES384", "ES512", "RS256", "RS384", "RS512", "PS256", "EdDSA"]),
			help: "the algorithm of --auth-jwt-public-key",
		},
		{
			key: "jwtIssuer",
			flag: "auth-jwt-issuer",
			env: ["VVM_AUTH_JWT_ISSUER"],
			def: undefined,
			parse: nonEmpty,
			help: "the iss a JWT must carry (unset: any)",
		},
		{
			key: "jwtAudience",
			flag: "auth-jwt-audience",
			env: ["VVM_AUTH_JWT_AUDIENCE"],
			def: undefined,
			parse: nonEmpty,
			help: "the aud a JWT must carry (unset: any)",
		},
	]),
	...spec("host", [
		{
			key: "logLevel",
			flag: "log-level",
			env: ["VVM_LOG_LEVEL"],
			def: "info",
			parse: oneOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
			help: "pino log level",
		},
	]),
	...spec("cp", [
		{
			key: "partitions",
			flag: "partitions",
			env: ["VVM_PARTITIONS"],
			def: "10",
			parse: integer,
			help: "partitions of the application: partition = wsid mod partitions (fixed for the data's lifetime)",
		},
		{
			key: "trustLevel",
			flag: "sequences-trust-level",
			env: ["VVM_SEQUENCES_TRUST_LEVEL"],
			def: "0",
			parse: integer,
			help: "SequencesTrustLevel: 0 insert-if-not-exists for events and new records, 1 for events only, 2 puts everything",
		},
		{
			key: "idempotencyTtlSeconds",
			flag: "idempotency-key-ttl-seconds",
			env: ["VVM_IDEMPOTENCY_KEY_TTL_SECONDS"],
			def: "86400",
			parse: integer,
			help: "how long a command's Idempotency-Key is remembered: a retry within it, on any host, answers the first result and writes nothing",
		},
		{
			key: "pipelineDepth",
			flag: "pipeline-depth",
			env: ["VVM_PIPELINE_DEPTH"],
			def: undefined,
			parse: integer,
			help: "creates of one partition in flight at once, 1..32: above 1 a create takes its numbers while the previous one's writes are in flight, answered in PLog order (levels 0 and 1 on a storage with putBatchIf; @vvm/cp README, Pipelined numbering); 1: one command at a time; unset: 8 on level, pg and redis (one fsync, group statement or round trip covers more creates), 1 on the others",
		},
		{
			key: "maxQueueWaitMs",
			flag: "max-queue-wait-ms",
			env: ["VVM_MAX_QUEUE_WAIT_MS"],
			def: "5000",
			parse: integer,
			help: "admission: a command whose estimated wait in its partition's queue exceeds this is answered 503 + Retry-After at once (CP_BUSY, committed no) instead of queueing; bursts are absorbed up to it",
		},
		{
			key: "queueWaitTargetMs",
			flag: "queue-wait-target-ms",
			env: ["VVM_QUEUE_WAIT_TARGET_MS"],
			def: undefined,
			parse: integer,
			help: "admission: the bound of a standing queue (one whose estimated wait stayed above it for 100 ms): under sustained overload accepted commands wait about this long and the excess is shed; at most --max-queue-wait-ms (equal to it: off); unset: 500, or --max-queue-wait-ms if lower",
		},
		{
			key: "readWaitMs",
			flag: "read-wait-ms",
			env: ["VVM_READ_WAIT_MS"],
			def: "1000",
			parse: integer,
			help: "how long a record or WLog read waits for a partition still applying its PLog tail before 503 CP_BUSY; 0: at once",
		},
	]),
	...spec("placement", [
		{
			key: "mode",
			flag: "placement",
			env: ["VVM_PLACEMENT"],
			def: "static",
			parse: oneOf(PLACEMENT_MODES),
			help: "who serves which partition: static (partition p by the leader of slot p mod num-vvm + 1, while its lease is valid) or leases (any live host, by partition lease; no slot leadership needed)",
		},
		{
			key: "leaseIntervalMs",
			flag: "lease-interval-ms",
			env: ["VVM_LEASE_INTERVAL_MS"],
			def: String(LEASE_DEFAULTS.leaseIntervalMs),
			parse: integer,
			help: "leases: partition lease length; heartbeat, poll and placement-driver tick every tenth of it; the same on every host",
		},
		{
			key: "maxClockSkewMs",
			flag: "lease-max-clock-skew-ms",
			env: ["VVM_LEASE_MAX_CLOCK_SKEW_MS"],
			def: String(LEASE_DEFAULTS.maxClockSkewMs),
			parse: integer,
			help: "leases: wall-clock skew between hosts you guarantee; a holder stops serving that much before its lease expires (below a quarter of --lease-interval-ms; the same on every host)",
		},
		{
			key: "namespace",
			flag: "lease-namespace",
			env: ["VVM_LEASE_NAMESPACE"],
			def: LEASE_DEFAULTS.namespace,
			parse: nonEmpty,
			help: "prefix of the lease records and of both placements' partition-epoch and numVVM records on the storage (hosts of one cluster use the same, in either --placement)",
		},
		{
			key: "numVVMFrom",
			flag: "num-vvm-from",
			env: ["VVM_NUM_FROM"],
			def: undefined,
			parse: intIn(1, 0xffff_ffff),
			help: "static: change the cluster's stored num-vvm from this value to --num-vvm at start; once, with every VVM stopped (README: Changing --num-vvm)",
		},
	]),
];

/** Every flag with its section: the host's, then each storage's (`storage.<kind>`). */
const ALL_SPECS: ReadonlyArray<OptionSpec & { readonly section: string }> = [
	...SPECS,
	...STORAGES.flatMap((s) => s.options.map((o) => ({ ...o, section: `storage.${s.kind}` }))),
];

/** The `--help` text. */
export function helpText(): string {
	const lines = [
		"vvm-host: runs a VVM that acquires leadership of one slot and serves HTTP while leader.",
		"",
		"Usage: vvm-host [options]      (flags win over environment variables)",
		"       vvm-host repair-lease-root [options]",
		"           the operator's repair of a lost or unreadable lease batch root (leases.batch-fault,",
		"           vvm_leases_batch_fault 1): opens --storage, runs repairLeaseRoot of @vvm/leases with",
		"           --lease-namespace and --partitions, prints rebuilt/unknown/intact/not-created and",
		"           what it means, exits 0 (1 storage error, 2 bad configuration); safe while hosts run",
		"",
		"Options:",
	];
	for (const s of ALL_SPECS) {
		lines.push(`  --${s.flag} <value>`);
		lines.push(`      ${s.help}`);
		lines.push(
			`      env ${s.env.join(" | ")}; default ${s.def === "" ? "(none)" : (s.def ?? "(see above)")}`,
		);
	}
	lines.push(
		"  -h, --help",
		"      show this help",
		"  -V, --version",
		"      show the version",
		`  --${INSECURE_NO_AUTH_FLAG}`,
		"      listen on a non-loopback --http-host although the host authenticates nobody (without",
		"      it such a host refuses to start, exit 2); put an authenticating proxy in front",
		`  --${UNSAFE_MUTANTS_FLAG}`,
		`      TEST ONLY (pnpm chaos --mutants): lets ${UNSAFE_MUTANTS_ENV}=killer,lease-check,lease-timer`,
		"      break leadership safety on purpose; never in production",
		"",
	);
	lines.push(
		"HTTP: GET /healthz, GET /readyz (200 only while leader), GET /leadership, GET /metrics,",
		"      POST /work (acts only while the lease is valid), GET / (status page),",
		"      /api/v2/apps/vvm/demo/workspaces/{wsid}/docs|commands|wlog (the command processor),",
		"      GET /leases and POST /work?partition=<p> (--placement leases: 200 while this host holds",
		"      the partition's lease, 421 naming the holder, 503 while nobody is known).",
		"Exit codes: 0 graceful shutdown (SIGINT/SIGTERM), 1 launch failure or leadership lost,",
		"            2 bad configuration, 3 forced: a second SIGINT/SIGTERM (1 s or more after",
		"            the first) while stopping; the host exits at once, logging what was unfinished.",
	);
	return lines.join("\n");
}

/**
 * Result of {@link parseHostConfig}: `help: true` means "print `show` (`--help` or `--version`)
 * and exit 0".
 */
export type ParsedArgs =
	| { readonly help: true; readonly show: "help" | "version" }
	| { readonly help: false; readonly config: HostConfig };

/** Values and where each came from, by section and key. */
type Read = Map<string, Map<string, { readonly value: unknown; readonly source: string }>>;

/** Reads every flag's text (flag, then its variables, then its default) into its section. */
function readFlags(
	values: Record<string, string | boolean | (string | boolean)[] | undefined>,
	env: Readonly<Record<string, string | undefined>>,
): Read {
	const read: Read = new Map();
	for (const s of ALL_SPECS) {
		const flagValue = values[s.flag];
		let raw: string | undefined;
		let source = `--${s.flag}`;
		if (typeof flagValue === "string") raw = flagValue;
		else {
			for (const name of s.env) {
				const v = env[name];
				if (v !== undefined && v !== "") {
					raw = v;
					source = name;
					break;
				}
			}
		}
		if (raw === undefined) raw = s.def; // named by its flag in messages
		const section = read.get(s.section) ?? new Map();
		read.set(s.section, section);
		section.set(s.key, { value: raw === undefined ? undefined : s.parse(raw, source), source });
	}
	return read;
}

/** One section's values, and how to name each in a message (the flag or variable used). */
function sectionOf(read: Read, section: string) {
	const fields = read.get(section) ?? new Map();
	const values: Record<string, unknown> = {};
	for (const [key, { value }] of fields) if (value !== undefined) values[key] = value;
	const name = (key: string): string => fields.get(key)?.source ?? key;
	return { values, name };
}

/**
 * Parses flags and environment variables (flags win) and validates every value before any I/O,
 * each section by the package that owns its rules. Throws a {@link ConfigError} naming the flag
 * or variable on a bad value or an unknown flag.
 *
 * @example
 * ```ts
 * const parsed = parseHostConfig(["--storage", "mem", "--http-port", "0"], {});
 * ```
 */
export function parseHostConfig(
	argv: readonly string[],
	env: Readonly<Record<string, string | undefined>>,
): ParsedArgs {
	const options: NonNullable<ParseArgsConfig["options"]> = {
		help: { type: "boolean", short: "h" },
		version: { type: "boolean", short: "V" },
		[UNSAFE_MUTANTS_FLAG]: { type: "boolean" },
		[INSECURE_NO_AUTH_FLAG]: { type: "boolean" },
	};
	for (const s of ALL_SPECS) options[s.flag] = { type: "string" };
	let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
	let given: readonly string[];
	try {
		const parsed = parseArgs({
			args: [...argv],
			options,
			strict: true,
			allowPositionals: false,
			tokens: true,
		});
		values = parsed.values;
		given = parsed.tokens.flatMap((t) => (t.kind === "option" ? [t.name] : []));
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error);
		throw new ConfigError(message.replace(/\. To specify a positional.*$/s, ""));
	}
	if (values.help === true) return { help: true, show: "help" };
	if (values.version === true) return { help: true, show: "version" };
	// A repeated flag is refused, not last-one-wins: `--storage mem … --storage level` ran level.
	// (Its values are not shown: one may hold a password.)
	for (const flag of new Set(given)) {
		const times = given.filter((g) => g === flag).length;
		if (times > 1) throw new ConfigError(`--${flag} is given ${times} times: give it once`);
	}
	const read = readFlags(values, env);

	const host = sectionOf(read, "host").values as { storage: string; logLevel: string };
	// Every storage's settings are checked (a bad flag is an error whichever storage runs).
	let storage: StorageConfig | undefined;
	let storageEntry: StorageEntry | undefined;
	for (const entry of STORAGES) {
		const { values: settings, name } = sectionOf(read, `storage.${entry.kind}`);
		ownedBy(() => entry.check?.(settings, name));
		if (entry.kind === host.storage) {
			storage = { kind: entry.kind, settings };
			storageEntry = entry;
		}
	}
	if (storage === undefined) throw new ConfigError(`--storage ${host.storage} is unknown`);
	// A flag of another storage than the one that runs is refused: a forgotten `--storage pg` ran
	// on the local level storage with `--pg-url` ignored. (Variables stay lenient: an environment
	// may hold every storage's settings and pick one with VVM_STORAGE.)
	const storageName = sectionOf(read, "host").name("storage");
	for (const entry of STORAGES) {
		if (entry.kind === host.storage) continue;
		const stray = entry.options.find((o) => given.includes(o.flag));
		if (stray !== undefined)
			throw new ConfigError(
				`--${stray.flag} is a flag of --storage ${entry.kind}, but ${storageName} is ${host.storage}${values.storage === undefined && storageName === "--storage" ? " (the default)" : ""}: give --storage ${entry.kind}, or drop --${stray.flag}`,
			);
	}
	const storageDepth = storageEntry?.defaultPipelineDepth;
	const http = sectionOf(read, "http").values as unknown as HttpConfig;
	if ((http.tlsCert === undefined) !== (http.tlsKey === undefined)) {
		const name = sectionOf(read, "http").name;
		throw new ConfigError(
			http.tlsCert === undefined
				? `${name("tlsKey")} needs --tls-cert (the certificate of that key)`
				: `${name("tlsCert")} needs --tls-key (the certificate's private key)`,
		);
	}
	const auth = sectionOf(read, "auth");
	const authSettings = auth.values as AuthSettings;
	if (authSettings.jwksFile !== undefined && authSettings.jwtPublicKeyFile !== undefined)
		throw new ConfigError(
			`${auth.name("jwksFile")} and ${auth.name("jwtPublicKeyFile")} exclude each other: give one`,
		);
	const authenticates =
		authSettings.tokensFile !== undefined ||
		authSettings.jwksFile !== undefined ||
		authSettings.jwtPublicKeyFile !== undefined;
	if (!isLoopback(http.host) && !authenticates && values[INSECURE_NO_AUTH_FLAG] !== true)
		throw new ConfigError(
			`${sectionOf(read, "http").name("host")} ${http.host} is not a loopback address, and no authentication is configured: anyone who reaches the port could write and read every workspace. Configure --auth-tokens-file, --auth-jwks-file or --auth-jwt-public-key, or listen on 127.0.0.1 behind an authenticating reverse proxy, or pass --${INSECURE_NO_AUTH_FLAG} to listen there anyway`,
		);
	const leadership = sectionOf(read, "leadership");
	const cp = sectionOf(read, "cp");
	const placement = sectionOf(read, "placement");
	// The depth the storage was measured fastest at, unless given; else cp's own default (cp
	// validates whichever it is).
	const cpValues = { ...cp.values, pipelineDepth: cp.values.pipelineDepth ?? storageDepth };
	const cpConfig = {
		...ownedBy(() => checkCpSettings(cpValues as unknown as CpSettings, cp.name)),
		...ownedBy(() => checkCpAdmission(cp.values as Partial<CpAdmission>, cp.name)),
	};
	const tuned = storageEntry?.tune?.(storage.settings, cpConfig);
	const config: HostConfig = {
		storage: tuned === undefined ? storage : { kind: storage.kind, settings: tuned },
		http: {
			...http,
			address: http.address,
			allowedHosts: http.allowedHosts ?? (authenticates ? "*" : []),
			maxRequestsInFlight:
				http.maxRequestsInFlight ?? defaultMaxRequestsInFlight(cpConfig.partitions),
		},
		leadership: ownedBy(() => checkVVMTimings(leadership.values, leadership.name)),
		cp: cpConfig,
		placement: {
			mode: placement.values.mode as PlacementMode,
			lease: ownedBy(() => checkLeaseTimings(placement.values, placement.name)),
			...(placement.values.numVVMFrom === undefined
				? {}
				: { numVVMFrom: placement.values.numVVMFrom as number }),
		},
		auth: authSettings,
		logLevel: host.logLevel,
		unsafeMutants: ownedBy(() =>
			parseUnsafeMutants(env[UNSAFE_MUTANTS_ENV], values[UNSAFE_MUTANTS_FLAG] === true),
		),
	};
	if (config.placement.mode === "leases" && config.placement.numVVMFrom !== undefined) {
		throw new ConfigError(
			`${placement.name("numVVMFrom")} changes the numVVM of --placement static; --placement leases has no slots`,
		);
	}
	if (config.placement.mode === "leases" && config.cp.partitions > MAX_GROUPS) {
		throw new ConfigError(
			`${cp.name("partitions")} ${config.cp.partitions} is more than --placement leases can place (at most ${MAX_GROUPS})`,
		);
	}
	return { help: false, config };
}
