import type { ParseArgsConfig } from "node:util";
import { parseArgs } from "node:util";
import { checkLeaseTimings, LEASE_DEFAULTS, MAX_GROUPS } from "@vvm/leases";
import { validateCassandraIdentifier } from "@vvm/ttlstorage-cas/names";
import type { UnsafeMutant } from "./unsafe-mutants.ts";
import { parseUnsafeMutants, UNSAFE_MUTANTS_ENV, UNSAFE_MUTANTS_FLAG } from "./unsafe-mutants.ts";

/** The values of `--placement`. */
const PLACEMENT_MODES: readonly ["static", "leases"] = ["static", "leases"];

/** A placement mode (`--placement`). */
export type PlacementMode = (typeof PLACEMENT_MODES)[number];

/** The flags of `@vvm/leases`' options, for its messages. */
const LEASE_FLAGS = {
	leaseIntervalMs: "--lease-interval-ms",
	maxClockSkewMs: "--lease-max-clock-skew-ms",
	namespace: "--lease-namespace",
} as const;

/** Storage kinds the host can run on. */
type StorageKind = "level" | "mem" | "cas" | "dyn";

/** The host's validated configuration. */
export interface HostConfig {
	readonly storage: StorageKind;
	readonly dataDir: string;
	readonly leadershipSeconds: number;
	readonly acquireTimeoutMs: number;
	readonly acquireRetryMs: number;
	readonly maxClockSkewMs: number;
	readonly numVVM: number;
	/**
	 * `undefined`: `<httpHost>:<bound HTTP port>`. The leader record stores
	 * `<address>#<nonce>`, a new nonce per run (see `createLeaderValue`).
	 */
	readonly address: string | undefined;
	readonly httpHost: string;
	readonly httpPort: number;
	readonly workIntervalMs: number;
	readonly logLevel: string;
	readonly casContactPoints: readonly string[];
	readonly casLocalDc: string;
	readonly casKeyspace: string;
	/**
	 * cas: where to connect for each `host:port` the cluster reports (NAT, proxies); `{}` = as
	 * reported.
	 */
	readonly casAddressMap: Readonly<Record<string, string>>;
	readonly dynEndpoint: string | undefined;
	readonly dynTable: string;
	readonly dynRegion: string;
	/** The application's partition count: `partition = wsid mod partitions`; fixed for its lifetime. */
	readonly partitions: number;
	/** SequencesTrustLevel of seed 004 (`VVMConfig.SequencesTrustLevel`): 0, 1 or 2. */
	readonly sequencesTrustLevel: 0 | 1 | 2;
	/** How long an `Idempotency-Key` is remembered (its first answer replayed), in seconds. */
	readonly idempotencyKeyTtlSeconds: number;
	/**
	 * Which partitions this host serves: `static` (partition p by the leader of slot
	 * `p mod numVVM + 1`) or `leases` (partition leases of `@vvm/leases`, any live host).
	 */
	readonly placement: PlacementMode;
	/**
	 * TEST-ONLY mutants that break safety on purpose (chaos test): `VVM_UNSAFE_MUTANTS` plus the
	 * `--unsafe-allow-mutants` flag. Empty in any normal run; never for production.
	 */
	readonly unsafeMutants: readonly UnsafeMutant[];
	/** leases: lease length granted by the placement driver. */
	readonly leaseIntervalMs: number;
	/** leases: the wall-clock skew bound between any two hosts (a holder stops that much early). */
	readonly leaseMaxClockSkewMs: number;
	/** leases: prefix of the lease records (one cluster per namespace on a storage). */
	readonly leaseNamespace: string;
}

/** A bad flag or environment variable; the CLI prints `message` and exits with code 2. */
export class ConfigError extends Error {
	override readonly name: string = "ConfigError";
	readonly code = "HOST_BAD_CONFIG" as const;
}

interface OptionSpec {
	readonly key: keyof HostConfig;
	readonly flag: string;
	readonly env: readonly string[];
	readonly def: string | undefined;
	readonly help: string;
	readonly parse: (raw: string, source: string) => unknown;
}

const int =
	(min: number, max: number) =>
	(raw: string, source: string): number => {
		const n = /^\d+$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
		if (!Number.isSafeInteger(n) || n < min || n > max) {
			throw new ConfigError(`${source} must be an integer in ${min}..${max}, got "${raw}"`);
		}
		return n;
	};
const nonEmpty = (raw: string, source: string): string => {
	if (raw.trim() === "") throw new ConfigError(`${source} must not be empty`);
	return raw.trim();
};
const oneOf =
	(values: readonly string[]) =>
	(raw: string, source: string): string => {
		if (!values.includes(raw)) {
			throw new ConfigError(`${source} must be one of ${values.join(", ")}, got "${raw}"`);
		}
		return raw;
	};
const url = (raw: string, source: string): string => {
	try {
		const u = new URL(raw);
		if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("protocol");
	} catch {
		throw new ConfigError(
			`${source} must be an http(s) URL such as http://127.0.0.1:8000, got "${raw}"`,
		);
	}
	return raw;
};
const hostPorts = (raw: string, source: string): string[] => {
	const points = raw
		.split(",")
		.map((p) => p.trim())
		.filter((p) => p !== "");
	if (points.length === 0) throw new ConfigError(`${source} must list at least one host[:port]`);
	for (const p of points) {
		if (!/^[A-Za-z0-9.\-_[\]:]+$/.test(p)) {
			throw new ConfigError(`${source} has an invalid contact point "${p}"`);
		}
	}
	return points;
};

const HOST_PORT = /^[A-Za-z0-9.\-_]+:\d{1,5}$/;
const addressMap = (raw: string, source: string): Record<string, string> => {
	const map: Record<string, string> = {};
	for (const pair of raw.split(",").map((p) => p.trim())) {
		if (pair === "") continue;
		const [from, to, extra] = pair.split("=").map((p) => p.trim());
		if (
			from === undefined ||
			to === undefined ||
			extra !== undefined ||
			!HOST_PORT.test(from) ||
			!HOST_PORT.test(to)
		) {
			throw new ConfigError(
				`${source} must list reported=connect pairs of host:port, such as 10.0.0.2:9042=127.0.0.1:19042, got "${pair}"`,
			);
		}
		map[from] = to;
	}
	return map;
};

const SPECS: readonly OptionSpec[] = [
	{
		key: "storage",
		flag: "storage",
		env: ["VVM_STORAGE"],
		def: "level",
		parse: oneOf(["level", "mem", "cas", "dyn"]),
		help: "leadership storage: level (embedded, on disk), mem (this process only), cas (Apache Cassandra), dyn (DynamoDB)",
	},
	{
		key: "dataDir",
		flag: "data-dir",
		env: ["VVM_DATA_DIR"],
		def: "./.vvm-data",
		parse: nonEmpty,
		help: "level: directory of the database (created if missing; one process at a time)",
	},
	{
		key: "leadershipSeconds",
		flag: "leadership-seconds",
		env: ["VVM_LEADERSHIP_SECONDS"],
		def: "20",
		parse: int(1, 31_536_000),
		help: "leadership duration (TTL of the leader record); renewal every 1/4, the process may act until 0.8 of it after the last renewal",
	},
	{
		key: "maxClockSkewMs",
		flag: "max-clock-skew-ms",
		env: ["VVM_MAX_CLOCK_SKEW_MS"],
		def: "0",
		parse: int(0, 2_147_483_647),
		help: "wall-clock skew between hosts you guarantee (NTP); the lease and the killer end that much before the leader record expires (at most half the leadership duration)",
	},
	{
		key: "acquireTimeoutMs",
		flag: "acquire-timeout-ms",
		env: ["VVM_ACQUIRE_TIMEOUT_MS"],
		def: "120000",
		parse: int(0, 2_147_483_647),
		help: "how long to wait for a free slot before giving up (exit 1)",
	},
	{
		key: "acquireRetryMs",
		flag: "acquire-retry-ms",
		env: ["VVM_ACQUIRE_RETRY_MS"],
		def: "1000",
		parse: int(1, 2_147_483_647),
		help: "pause between acquisition attempts",
	},
	{
		key: "numVVM",
		flag: "num-vvm",
		env: ["VVM_NUM"],
		def: "1",
		parse: int(1, 0xffff_ffff),
		help: "number of leader slots 1..N (VVMs that lead at once)",
	},
	{
		key: "address",
		flag: "address",
		env: ["VVM_ADDRESS"],
		def: undefined,
		parse: nonEmpty,
		help: "this VVM's address (default <http-host>:<bound http port>); the leader record stores <address>#<random nonce>, the nonce new on every start",
	},
	{
		key: "httpHost",
		flag: "http-host",
		env: ["VVM_HTTP_HOST"],
		def: "127.0.0.1",
		parse: nonEmpty,
		help: "HTTP listen address",
	},
	{
		key: "httpPort",
		flag: "http-port",
		env: ["VVM_HTTP_PORT"],
		def: "8080",
		parse: int(0, 65_535),
		help: 'HTTP port; 0 picks a free one (logged as "listening")',
	},
	{
		key: "workIntervalMs",
		flag: "work-interval-ms",
		env: ["VVM_WORK_INTERVAL_MS"],
		def: "1000",
		parse: int(0, 2_147_483_647),
		help: "demo lease-guarded worker tick; 0 disables it",
	},
	{
		key: "logLevel",
		flag: "log-level",
		env: ["VVM_LOG_LEVEL"],
		def: "info",
		parse: oneOf(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
		help: "pino log level",
	},
	{
		key: "casContactPoints",
		flag: "cas-contact-points",
		env: ["CASSANDRA_CONTACT_POINTS"],
		def: "127.0.0.1:9042",
		parse: hostPorts,
		help: "cas: comma-separated host[:port] list",
	},
	{
		key: "casLocalDc",
		flag: "cas-local-dc",
		env: ["CASSANDRA_LOCAL_DC"],
		def: "datacenter1",
		parse: nonEmpty,
		help: "cas: local data center",
	},
	{
		key: "casKeyspace",
		flag: "cas-keyspace",
		env: ["VVM_CAS_KEYSPACE"],
		def: "vvm",
		parse: keyspace,
		help: "cas: keyspace (created with SimpleStrategy RF 1 if missing)",
	},
	{
		key: "casAddressMap",
		flag: "cas-address-map",
		env: ["CASSANDRA_ADDRESS_MAP"],
		def: "",
		parse: addressMap,
		help: "cas: reported=connect host:port pairs, comma-separated: where to connect for a node the cluster reports (NAT, a proxy per node); default: as reported",
	},
	{
		key: "dynEndpoint",
		flag: "dyn-endpoint",
		env: ["DYNAMODB_ENDPOINT"],
		def: undefined,
		parse: url,
		help: "dyn: endpoint URL, e.g. http://127.0.0.1:8000 for DynamoDB Local (default: AWS)",
	},
	{
		key: "dynTable",
		flag: "dyn-table",
		env: ["VVM_DYN_TABLE"],
		def: "vvm_ttl",
		parse: nonEmpty,
		help: "dyn: table (created if missing)",
	},
	{
		key: "dynRegion",
		flag: "dyn-region",
		env: ["VVM_DYN_REGION", "AWS_REGION"],
		def: "us-east-1",
		parse: nonEmpty,
		help: "dyn: AWS region",
	},
	{
		key: "partitions",
		flag: "partitions",
		env: ["VVM_PARTITIONS"],
		def: "10",
		parse: int(1, 65_536),
		help: "partitions of the application: partition = wsid mod partitions (fixed for the data's lifetime)",
	},
	{
		key: "sequencesTrustLevel",
		flag: "sequences-trust-level",
		env: ["VVM_SEQUENCES_TRUST_LEVEL"],
		def: "0",
		parse: int(0, 2),
		help: "SequencesTrustLevel: 0 insert-if-not-exists for events and new records, 1 for events only, 2 puts everything",
	},
	{
		key: "idempotencyKeyTtlSeconds",
		flag: "idempotency-key-ttl-seconds",
		env: ["VVM_IDEMPOTENCY_KEY_TTL_SECONDS"],
		def: "86400",
		parse: int(1, 31_536_000),
		help: "how long a command's Idempotency-Key is remembered: a retry within it, on any host, answers the first result and writes nothing",
	},
	{
		key: "placement",
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
		parse: int(0, Number.MAX_SAFE_INTEGER), // @vvm/leases' rules apply at the end
		help: "leases: partition lease length; heartbeat, poll and placement-driver tick every tenth of it; the same on every host",
	},
	{
		key: "leaseMaxClockSkewMs",
		flag: "lease-max-clock-skew-ms",
		env: ["VVM_LEASE_MAX_CLOCK_SKEW_MS"],
		def: String(LEASE_DEFAULTS.maxClockSkewMs),
		parse: int(0, Number.MAX_SAFE_INTEGER),
		help: "leases: wall-clock skew between hosts you guarantee; a holder stops serving that much before its lease expires (below a quarter of --lease-interval-ms; the same on every host)",
	},
	{
		key: "leaseNamespace",
		flag: "lease-namespace",
		env: ["VVM_LEASE_NAMESPACE"],
		def: LEASE_DEFAULTS.namespace,
		parse: nonEmpty,
		help: "leases: prefix of the lease records on the storage (hosts of one cluster use the same)",
	},
];

/** A keyspace exactly as the Cassandra driver accepts it (its own check, shared). */
function keyspace(raw: string, source: string): string {
	try {
		validateCassandraIdentifier("keyspace", raw);
	} catch (error) {
		const rule = error instanceof Error ? error.message.replace(/^\[[^\]]*\] keyspace /, "") : "";
		throw new ConfigError(`${source} ${rule}`);
	}
	return raw;
}

/** The `--help` text. */
export function helpText(): string {
	const lines = [
		"vvm-host: runs a VVM that acquires leadership of one slot and serves HTTP while leader.",
		"",
		"Usage: vvm-host [options]      (flags win over environment variables)",
		"",
		"Options:",
	];
	for (const s of SPECS) {
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
		"            2 bad configuration.",
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

/**
 * Parses flags and environment variables (flags win) and validates every value before any I/O.
 * Throws a {@link ConfigError} naming the flag or variable on a bad value or an unknown flag.
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
	};
	for (const s of SPECS) options[s.flag] = { type: "string" };
	let values: Record<string, string | boolean | (string | boolean)[] | undefined>;
	try {
		values = parseArgs({ args: [...argv], options, strict: true, allowPositionals: false }).values;
	} catch (error) {
		const message = error instanceof Error ? error.message : String(error);
		throw new ConfigError(message.replace(/\. To specify a positional.*$/s, ""));
	}
	if (values.help === true) return { help: true, show: "help" };
	if (values.version === true) return { help: true, show: "version" };
	const config: Record<string, unknown> = {};
	for (const s of SPECS) {
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
		if (raw === undefined) {
			config[s.key] = s.def === undefined ? undefined : s.parse(s.def, `default of --${s.flag}`);
		} else {
			config[s.key] = s.parse(raw, source);
		}
	}
	try {
		config.unsafeMutants = parseUnsafeMutants(
			env[UNSAFE_MUTANTS_ENV],
			values[UNSAFE_MUTANTS_FLAG] === true,
		);
	} catch (error) {
		throw new ConfigError(error instanceof Error ? error.message : String(error));
	}
	const checked = config as unknown as HostConfig;
	if (checked.maxClockSkewMs > checked.leadershipSeconds * 500) {
		throw new ConfigError(
			`--max-clock-skew-ms ${checked.maxClockSkewMs} is more than half of --leadership-seconds ${checked.leadershipSeconds} (at most ${checked.leadershipSeconds * 500})`,
		);
	}
	if (checked.placement === "leases" && checked.partitions > MAX_GROUPS) {
		throw new ConfigError(
			`--partitions ${checked.partitions} is more than --placement leases can place (at most ${MAX_GROUPS})`,
		);
	}
	// The lease cluster's options are @vvm/leases' to judge, named by their flags.
	try {
		checkLeaseTimings(
			{
				leaseIntervalMs: checked.leaseIntervalMs,
				maxClockSkewMs: checked.leaseMaxClockSkewMs,
				namespace: checked.leaseNamespace,
			},
			(option) => LEASE_FLAGS[option],
		);
	} catch (error) {
		throw new ConfigError(
			(error instanceof Error ? error.message : String(error)).replace(/^\[@vvm\/leases\] /, ""),
		);
	}
	return { help: false, config: checked };
}
