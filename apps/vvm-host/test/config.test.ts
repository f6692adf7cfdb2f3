import { checkCpSettings } from "@vvm/cp";
import { describe, expect, it } from "vitest";
import { ConfigError, helpText, isLoopback, parseHostConfig } from "../src/config.ts";
import { hostConfig as config } from "./support/config.ts";

describe("parseHostConfig", () => {
	it("has the documented defaults", () => {
		expect(config([])).toEqual({
			storage: {
				kind: "level",
				settings: { dataDir: "./.vvm-data", durability: "sync", writeBufferMib: 64 },
			},
			http: {
				host: "127.0.0.1",
				port: 8080,
				address: undefined,
				allowedHosts: [],
				workIntervalMs: 1_000,
				maxEventLoopDelayMs: 100,
				// 8 per partition (10), at least 64
				maxRequestsInFlight: 80,
				maxEventLoopUtilization: 85,
			},
			leadership: {
				leadershipSeconds: 20,
				acquisitionDurationMs: 120_000,
				acquireRetryMs: 1_000,
				maxClockSkewMs: 0,
				numVVM: 1,
			},
			cp: {
				// cp's own settings take cp's defaults (checkCpSettings); the host's are pinned here.
				...checkCpSettings({ partitions: 10 }),
				partitions: 10,
				trustLevel: 0,
				idempotencyTtlSeconds: 86_400,
				maxQueueWaitMs: 5_000,
				queueWaitTargetMs: 500,
				readWaitMs: 1_000,
				pipelineDepth: 8, // the level storage's default
			},
			placement: {
				mode: "static",
				lease: { leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "vvm" },
			},
			auth: { jwtAlgorithm: "ES256" },
			logLevel: "info",
			unsafeMutants: [],
		});
		expect(config(["--storage", "cas"]).storage).toEqual({
			kind: "cas",
			settings: {
				contactPoints: ["127.0.0.1:9042"],
				localDc: "datacenter1",
				keyspace: "vvm",
				addressMap: {},
				durability: "sync",
			},
		});
		expect(
			config(["--storage", "cas", "--cas-durability", "unsafe-periodic"]).storage.settings,
		).toMatchObject({ durability: "unsafe-periodic" });
		expect(() => config(["--storage", "cas", "--cas-durability", "fast"])).toThrow(
			'--cas-durability must be one of sync, unsafe-periodic, got "fast"',
		);
		expect(config(["--storage", "dyn"]).storage).toEqual({
			kind: "dyn",
			settings: { table: "vvm_ttl", region: "us-east-1" },
		});
	});

	it("reads the command processor's flags and their variables", () => {
		expect(config(["--partitions", "64", "--sequences-trust-level", "2"]).cp).toMatchObject({
			partitions: 64,
			trustLevel: 2,
		});
		const env = { VVM_PARTITIONS: "3", VVM_SEQUENCES_TRUST_LEVEL: "1", VVM_PLACEMENT: "static" };
		expect(config([], env)).toMatchObject({
			cp: { partitions: 3, trustLevel: 1 },
			placement: { mode: "static" },
		});
		expect(config(["--sequences-trust-level=0"], env).cp.trustLevel).toBe(0);
		// Unset: the storage's own default (8 where one fsync or round trip covers more creates).
		expect(config([]).cp.pipelineDepth).toBe(8);
		for (const storage of ["redis", "pg"])
			expect(config(["--storage", storage]).cp.pipelineDepth, storage).toBe(8);
		for (const storage of ["mem", "cas", "dyn"])
			expect(config(["--storage", storage]).cp.pipelineDepth, storage).toBe(1);
		expect(config(["--pipeline-depth", "1"]).cp.pipelineDepth).toBe(1);
		expect(config([], { VVM_LEVEL_WRITE_BUFFER_MIB: "16" }).storage.settings.writeBufferMib).toBe(
			16,
		);
		expect(config(["--storage", "pg", "--pipeline-depth", "4"]).cp.pipelineDepth).toBe(4);
		expect(config(["--pipeline-depth", "8"]).cp.pipelineDepth).toBe(8);
		expect(config([], { VVM_PIPELINE_DEPTH: "16" }).cp.pipelineDepth).toBe(16);
		// The pg driver's group statements at once: 1 where creates ride as links (pipelined), else
		// the driver's own default; a given value wins; the driver's rule enforced.
		const inFlight = (argv: string[], env = {}) =>
			config(["--storage", "pg", ...argv], env).storage.settings.writesInFlight;
		expect(inFlight([])).toBe(1);
		expect(inFlight(["--sequences-trust-level", "1"])).toBe(1);
		expect(inFlight(["--sequences-trust-level", "2"])).toBe(1);
		expect(inFlight(["--pipeline-depth", "1"])).toBeUndefined();
		expect(inFlight([], { VVM_PG_WRITES_IN_FLIGHT: "3" })).toBe(3);
		expect(inFlight(["--sequences-trust-level", "2", "--pg-writes-in-flight", "4"])).toBe(4);
		expect(() => config(["--storage", "pg", "--pg-writes-in-flight", "0"])).toThrow(
			/--pg-writes-in-flight: writesInFlight must be an integer >= 1, got 0/,
		);
		expect(() => config(["--storage", "pg", "--pg-writes-in-flight", "two"])).toThrow(
			/--pg-writes-in-flight must be an integer, got "two"/,
		);
		// Read statements at once: the driver's own unless given.
		const reads = (argv: string[], env = {}) =>
			config(["--storage", "pg", ...argv], env).storage.settings.readsInFlight;
		expect(reads([])).toBeUndefined();
		expect(reads(["--pg-reads-in-flight", "1"])).toBe(1);
		expect(reads([], { VVM_PG_READS_IN_FLIGHT: "3" })).toBe(3);
		expect(() => config(["--storage", "pg", "--pg-reads-in-flight", "0"])).toThrow(
			/--pg-reads-in-flight: readsInFlight must be an integer >= 1, got 0/,
		);
	});

	it("reads environment variables and lets flags win", () => {
		const env = {
			VVM_STORAGE: "mem",
			VVM_HTTP_PORT: "9000",
			VVM_NUM: "3",
			DYNAMODB_ENDPOINT: "http://127.0.0.1:8000",
		};
		expect(config([], env)).toMatchObject({
			storage: { kind: "mem" },
			http: { port: 9000 },
			leadership: { numVVM: 3 },
		});
		expect(config(["--http-port", "0", "--storage=dyn"], env)).toMatchObject({
			storage: { kind: "dyn", settings: { endpoint: "http://127.0.0.1:8000" } },
			http: { port: 0 },
		});
		expect(
			config(["--storage", "cas", "--cas-contact-points", "a:1, b:2"]).storage.settings
				.contactPoints,
		).toEqual(["a:1", "b:2"]);
	});

	it.each([
		[["--storage", "etcd"], "--storage must be one of level, mem, cas, dyn, pg, redis"],
		[["--http-port", "70000"], "--http-port must be an integer in 0..65535"],
		[["--leadership-seconds", "0"], "--leadership-seconds must be an integer in 1..31536000"],
		[["--leadership-seconds", "2.5"], "--leadership-seconds must be an integer"],
		[["--num-vvm=-1"], "--num-vvm must be an integer"],
		[["--acquire-retry-ms", "0"], "--acquire-retry-ms must be an integer in 1.."],
		[["--dyn-endpoint", "localhost:8000"], "--dyn-endpoint must be an http(s) URL"],
		[["--cas-keyspace", "bad-name"], "--cas-keyspace must match ^[a-z][a-z0-9_]{0,47}$"],
		[["--cas-keyspace", "Vvm"], "--cas-keyspace must match ^[a-z][a-z0-9_]{0,47}$"],
		[["--address", " "], "--address must be host:port"],
		[["--partitions", "0"], "--partitions must be an integer in 1..65536"],
		[["--partitions", "65537"], "--partitions must be an integer in 1..65536"],
		[["--sequences-trust-level", "3"], "--sequences-trust-level must be an integer in 0..2"],
		[["--pipeline-depth", "0"], "--pipeline-depth must be an integer in 1..32"],
		[["--pipeline-depth", "33"], "--pipeline-depth must be an integer in 1..32"],
		[["--level-write-buffer-mib", "0"], "--level-write-buffer-mib must be an integer in 1..1024"],
		[
			["--level-write-buffer-mib", "2048"],
			"--level-write-buffer-mib must be an integer in 1..1024",
		],
		[["--sequences-trust-level", "high"], '--sequences-trust-level must be an integer, got "high"'],
		[["--dyn-table", "a b"], "--dyn-table must match ^[A-Za-z0-9_.-]{3,255}$"],
		[
			["--allowed-hosts", "vvm.example.org:8080"],
			'--allowed-hosts must be "*" or a comma-separated',
		],
		[["--allowed-hosts", "a.example,,b.example"], "--allowed-hosts must be"],
		[["--allowed-hosts", "*,vvm.example.org"], '--allowed-hosts: "*" (any name) stands alone'],
		[["--allowed-hosts", "https://vvm.example.org"], "--allowed-hosts must be"],
		[
			["--max-clock-skew-ms", "10001"],
			"--max-clock-skew-ms 10001 is more than half of --leadership-seconds 20",
		],
		[
			["--idempotency-key-ttl-seconds", "0"],
			"--idempotency-key-ttl-seconds must be an integer in 1..31536000",
		],
		[["--placement", "random"], "--placement must be one of static"],
		[["--max-queue-wait-ms", "0"], "--max-queue-wait-ms must be an integer in 1..2147483647"],
		[["--read-wait-ms=-5"], '--read-wait-ms must be an integer, got "-5"'],
		[
			["--read-wait-ms", "2147483648"],
			"--read-wait-ms must be an integer in 0..2147483647, got 2147483648",
		],
		[["--queue-wait-target-ms", "soon"], '--queue-wait-target-ms must be an integer, got "soon"'],
		[
			["--max-requests-in-flight", "1000001"],
			'--max-requests-in-flight must be an integer in 0..1000000 (0 or "off" turns it off), got "1000001"',
		],
		[["--max-requests-in-flight=-1"], "--max-requests-in-flight must be an integer in 0..1000000"],
		[["--max-requests-in-flight", "many"], "--max-requests-in-flight must be an integer"],
		[
			["--max-event-loop-utilization", "100"],
			'--max-event-loop-utilization must be an integer in 0..99 (0 or "off" turns it off), got "100"',
		],
		[["--max-event-loop-utilization", "0.9"], "--max-event-loop-utilization must be an integer"],
		[
			["--queue-wait-target-ms", "6000"],
			"--queue-wait-target-ms 6000 must be at most --max-queue-wait-ms (5000)",
		],
		[
			["--max-queue-wait-ms", "40", "--queue-wait-target-ms", "50"],
			"--queue-wait-target-ms 50 must be at most --max-queue-wait-ms (40)",
		],
		[
			["--max-event-loop-delay-ms", "60001"],
			'--max-event-loop-delay-ms must be an integer in 0..60000 (0 or "off" turns it off), got "60001"',
		],
		[["--max-event-loop-delay-ms", "soon"], "--max-event-loop-delay-ms must be an integer"],
		[["--nope"], "Unknown option '--nope'"],
		[["extra"], "Unexpected argument 'extra'"],
	])("rejects %j naming the flag", (argv, message) => {
		expect(() => parseHostConfig(argv, {})).toThrow(ConfigError);
		expect(() => parseHostConfig(argv, {})).toThrow(message);
	});

	it("reads the overload bounds (cp's queue bounds, the event-loop bound) and their variables", () => {
		const given = config([
			"--max-queue-wait-ms",
			"2000",
			"--queue-wait-target-ms",
			"50",
			"--read-wait-ms",
			"0",
			"--max-event-loop-delay-ms",
			"250",
		]);
		expect(given.cp).toMatchObject({ maxQueueWaitMs: 2_000, queueWaitTargetMs: 50, readWaitMs: 0 });
		expect(given.http.maxEventLoopDelayMs).toBe(250);
		expect(config(["--max-event-loop-delay-ms", "off"]).http.maxEventLoopDelayMs).toBe(0);
		expect(config(["--max-event-loop-delay-ms", "0"]).http.maxEventLoopDelayMs).toBe(0);
		const env = {
			VVM_MAX_QUEUE_WAIT_MS: "300",
			VVM_QUEUE_WAIT_TARGET_MS: "300",
			VVM_READ_WAIT_MS: "10",
			VVM_MAX_EVENT_LOOP_DELAY_MS: "OFF",
		};
		expect(config([], env).cp).toMatchObject({
			maxQueueWaitMs: 300,
			queueWaitTargetMs: 300,
			readWaitMs: 10,
		});
		expect(config([], env).http.maxEventLoopDelayMs).toBe(0);
		expect(() => parseHostConfig([], { VVM_QUEUE_WAIT_TARGET_MS: "9000" })).toThrow(
			"VVM_QUEUE_WAIT_TARGET_MS 9000 must be at most --max-queue-wait-ms (5000)",
		);
	});

	it("reads --max-event-loop-utilization: a percent, off, or 85", () => {
		expect(config([]).http.maxEventLoopUtilization).toBe(85);
		expect(config(["--max-event-loop-utilization", "70"]).http.maxEventLoopUtilization).toBe(70);
		expect(config(["--max-event-loop-utilization", "off"]).http.maxEventLoopUtilization).toBe(0);
		expect(config([], { VVM_MAX_EVENT_LOOP_UTILIZATION: "95" }).http.maxEventLoopUtilization).toBe(
			95,
		);
		expect(helpText()).toContain("--max-event-loop-utilization");
	});

	it("reads --max-requests-in-flight: given, off, or 8 per partition within 64..4096", () => {
		expect(config(["--max-requests-in-flight", "7"]).http.maxRequestsInFlight).toBe(7);
		expect(config(["--max-requests-in-flight", "off"]).http.maxRequestsInFlight).toBe(0);
		expect(config(["--max-requests-in-flight", "0"]).http.maxRequestsInFlight).toBe(0);
		expect(config([], { VVM_MAX_REQUESTS_IN_FLIGHT: "300" }).http.maxRequestsInFlight).toBe(300);
		expect(config(["--partitions", "1"]).http.maxRequestsInFlight).toBe(64);
		expect(config(["--partitions", "100"]).http.maxRequestsInFlight).toBe(800);
		expect(config(["--partitions", "65536"]).http.maxRequestsInFlight).toBe(4096);
		expect(() => parseHostConfig([], { VVM_MAX_REQUESTS_IN_FLIGHT: "x" })).toThrow(
			'VVM_MAX_REQUESTS_IN_FLIGHT must be an integer in 0..1000000 (0 or "off" turns it off), got "x"',
		);
		expect(helpText()).toContain("--max-requests-in-flight");
	});

	it("takes cp's default standing-queue target, lowered to a lower --max-queue-wait-ms", () => {
		expect(config([]).cp.queueWaitTargetMs).toBe(500);
		expect(config(["--max-queue-wait-ms", "200"]).cp).toMatchObject({
			maxQueueWaitMs: 200,
			queueWaitTargetMs: 200,
		});
		// Equal to the hard bound: the standing-queue bound is off.
		expect(config(["--queue-wait-target-ms", "5000"]).cp.queueWaitTargetMs).toBe(5000);
	});

	it("names the environment variable when the bad value came from it", () => {
		expect(() => parseHostConfig([], { VVM_LEADERSHIP_SECONDS: "ten" })).toThrow(
			'VVM_LEADERSHIP_SECONDS must be an integer, got "ten"',
		);
		expect(() => parseHostConfig([], { VVM_SEQUENCES_TRUST_LEVEL: "5" })).toThrow(
			"VVM_SEQUENCES_TRUST_LEVEL must be an integer in 0..2, got 5",
		);
	});

	it("--help lists every flag with its variable and default", () => {
		expect(parseHostConfig(["--help"], {})).toEqual({ help: true, show: "help" });
		expect(parseHostConfig(["-h"], {})).toEqual({ help: true, show: "help" });
		expect(parseHostConfig(["--version"], {})).toEqual({ help: true, show: "version" });
		expect(parseHostConfig(["-V"], {})).toEqual({ help: true, show: "version" });
		const text = helpText();
		for (const flag of [
			"--storage",
			"--data-dir",
			"--leadership-seconds",
			"--acquire-timeout-ms",
			"--num-vvm",
			"--address",
			"--http-port",
			"--dyn-endpoint",
			"--cas-contact-points",
			"--partitions",
			"--sequences-trust-level",
			"--placement",
			"--max-queue-wait-ms",
			"--queue-wait-target-ms",
			"--read-wait-ms",
			"--max-event-loop-delay-ms",
		]) {
			expect(text).toContain(flag);
		}
		expect(text).toContain("VVM_LEADERSHIP_SECONDS");
		expect(text).toContain("Exit codes");
	});

	it("refuses a non-loopback --http-host without --insecure-no-auth, naming both", () => {
		for (const host of ["0.0.0.0", "::", "192.0.2.1", "example.org"]) {
			expect(() => parseHostConfig(["--http-host", host], {})).toThrow(ConfigError);
			expect(() => parseHostConfig(["--http-host", host], {})).toThrow(
				`--http-host ${host} is not a loopback address`,
			);
			expect(() => parseHostConfig(["--http-host", host], {})).toThrow("--insecure-no-auth");
		}
		expect(() => parseHostConfig([], { VVM_HTTP_HOST: "0.0.0.0" })).toThrow(
			"VVM_HTTP_HOST 0.0.0.0 is not a loopback address",
		);
		const open = parseHostConfig(["--http-host", "0.0.0.0", "--insecure-no-auth"], {});
		expect(open.help === false && open.config.http.host).toBe("0.0.0.0");
		// With authentication configured, any address.
		const authed = parseHostConfig(["--http-host", "::", "--auth-tokens-file", "/t.json"], {});
		expect(authed.help === false && authed.config.auth.tokensFile).toBe("/t.json");
		expect(() =>
			parseHostConfig(["--auth-jwks-file", "/a", "--auth-jwt-public-key", "/b"], {}),
		).toThrow("--auth-jwks-file and --auth-jwt-public-key exclude each other");
	});

	it.each([
		["127.0.0.1", true],
		["127.1.2.3", true],
		["localhost", true],
		["::1", true],
		["[::1]", true],
		["0.0.0.0", false],
		["::", false],
		["10.0.0.1", false],
		["128.0.0.1", false],
	])("isLoopback(%s) is %s", (host, loopback) => {
		expect(isLoopback(host)).toBe(loopback);
	});
});

describe("--allowed-hosts (DNS rebinding)", () => {
	it("is none without authentication and any with it, unless given", () => {
		expect(config([]).http.allowedHosts).toEqual([]);
		expect(config(["--allowed-hosts", "VVM.example.org, .internal"]).http.allowedHosts).toEqual([
			"vvm.example.org",
			".internal",
		]);
		expect(config(["--allowed-hosts", "*"]).http.allowedHosts).toBe("*");
		const authed = (argv: string[]) => {
			const parsed = parseHostConfig(["--auth-tokens-file", "/t.json", ...argv], {});
			if (parsed.help) throw new Error("help");
			return parsed.config.http.allowedHosts;
		};
		expect(authed([])).toBe("*");
		expect(authed(["--allowed-hosts", "vvm.example.org"])).toEqual(["vvm.example.org"]);
	});
});
