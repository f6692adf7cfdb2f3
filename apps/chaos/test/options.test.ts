import { describe, expect, it } from "vitest";
import { DEFAULT_FAULT_WEIGHTS } from "../src/faults-catalog.ts";
import { faketimeOffset } from "../src/host-clocks.ts";
import {
	ALL_MUTANT_COMBOS,
	ChaosUsageError,
	chaosHelp,
	parseChaosOptions,
	parseFaultMix,
} from "../src/options.ts";
import { createRng } from "../src/rng.ts";

const parse = (argv: string[]) => {
	const o = parseChaosOptions(argv);
	if (o === undefined) throw new Error("help");
	return o;
};

describe("parseChaosOptions", () => {
	it("has the documented defaults", () => {
		expect(parse([])).toMatchObject({
			durationS: 60,
			changes: undefined,
			hosts: 4,
			numVVM: 2,
			storage: "dyn",
			leadershipSeconds: 2,
			maxClockSkewMs: 400, // d/5 on DynamoDB
			clockRangeMs: 200, // half the skew each way: any two hosts stay within it
			faultIntervalMs: 1000,
			faults: DEFAULT_FAULT_WEIGHTS,
			casReplicationFactor: 1,
			unsafeMutants: [],
			mutantCombos: undefined,
		});
		expect(parse(["--storage", "cas"])).toMatchObject({ maxClockSkewMs: 0, clockRangeMs: 30_000 });
		// Redis expires records by the server's clock, as Cassandra: wall-clock offsets play no part.
		expect(parse(["--storage", "redis"])).toMatchObject({
			storage: "redis",
			redisUrl: `redis://127.0.0.1:${process.env.REDIS_PORT ?? "6390"}/0`,
			maxClockSkewMs: 0,
			clockRangeMs: 30_000,
		});
		expect(parse(["--storage", "redis", "--redis-url", "redis://10.0.0.5:7000"]).redisUrl).toBe(
			"redis://10.0.0.5:7000",
		);
		expect(chaosHelp()).toContain("--redis-url");
		expect(parse(["--changes", "100"]).durationS).toBeUndefined();
		expect(parseChaosOptions(["--help"])).toBeUndefined();
		expect(chaosHelp()).toContain("--mutants");
	});

	it("parses contact points, mutants and combinations", () => {
		const o = parse([
			"--storage",
			"cas",
			"--cas-contact-points",
			"127.0.0.2,127.0.0.3:9043",
			"--cas-replication-factor",
			"3",
			"--unsafe-mutants",
			"lease-timer,killer",
		]);
		expect(o.casContactPoints).toEqual(["127.0.0.2:9042", "127.0.0.3:9043"]);
		expect(o.casReplicationFactor).toBe(3);
		expect(o.unsafeMutants).toEqual(["killer", "lease-timer"]);
		expect(parse(["--mutants", "killer+lease-check+lease-timer,killer"]).mutantCombos).toEqual([
			["killer", "lease-check", "lease-timer"],
			["killer"],
		]);
		expect(parse(["--mutants", "all"]).mutantCombos).toBe(ALL_MUTANT_COMBOS);
	});

	it("passes --pipeline-depth to the hosts only when given", () => {
		expect(parse(["--workload", "commands"]).pipelineDepth).toBeUndefined();
		expect(parse(["--workload", "commands", "--pipeline-depth", "1"]).pipelineDepth).toBe(1);
	});

	it.each([
		[["--hosts", "0"], "--hosts must be an integer in 1..32"],
		[["--hosts", "2", "--num-vvm", "3"], "--num-vvm 3 is more than --hosts 2"],
		[["--storage", "etcd"], "--storage must be one of dyn, cas, pg, redis"],
		[["--redis-url", "redis://:pw@127.0.0.1:6390"], "--redis-url must be redis://host:port[/db]"],
		[["--redis-url", "rediss://127.0.0.1:6390"], "--redis-url must be redis://host:port[/db]"],
		[["--redis-url", "redis://127.0.0.1:6390/x"], "--redis-url must be redis://host:port[/db]"],
		[
			["--leadership-seconds", "2", "--max-clock-skew-ms", "1500"],
			"--max-clock-skew-ms must be an integer in 0..1000",
		],
		[["--faults", "kill,meteor"], 'unknown fault "meteor"'],
		[["--faults", "kill=x"], "--faults kill must be an integer"],
		[["--unsafe-mutants", "killer,clock"], 'unknown mutant "clock"'],
		[["--mutants", "all", "--unsafe-mutants", "killer"], "exclude each other"],
		[["--cas-contact-points", "a b"], "invalid host[:port]"],
		[["--cas-keyspace", "Bad"], "--cas-keyspace must match"],
		[["--nope"], "Unknown option '--nope'"],
		[
			["--workload", "commands", "--pipeline-depth", "33"],
			"--pipeline-depth must be an integer in 1..32",
		],
		[["--pipeline-depth", "8"], "--pipeline-depth is an option of --workload commands"],
	])("rejects %j naming the problem", (argv, message) => {
		expect(() => parseChaosOptions(argv)).toThrow(ChaosUsageError);
		expect(() => parseChaosOptions(argv)).toThrow(message);
	});

	it("fault mixes: all, none, weights, default weights", () => {
		expect(parseFaultMix("none").kill).toBe(0);
		const mix = parseFaultMix("kill=5, stop-long");
		expect(mix.kill).toBe(5);
		expect(mix["stop-long"]).toBe(DEFAULT_FAULT_WEIGHTS["stop-long"]);
		expect(mix.clock).toBe(0);
	});
});

describe("seeded random", () => {
	it("repeats for a seed, differs across seeds and forks", () => {
		const a = createRng("7");
		const b = createRng("7");
		const seqA = Array.from({ length: 5 }, () => a.next());
		expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
		expect(createRng("8").next()).not.toBe(seqA[0]);
		expect(createRng("7").fork("faults").next()).not.toBe(seqA[0]);
	});

	it("never draws a zero weight", () => {
		const rng = createRng("w");
		for (let i = 0; i < 200; i++) expect(rng.weighted({ a: 0, b: 1, c: 0 })).toBe("b");
		expect(rng.weighted({ a: 0 })).toBeUndefined();
	});
});

describe("faketime offsets", () => {
	it("are written with a dot and a sign", () => {
		expect(faketimeOffset(350)).toBe("+0.350s");
		expect(faketimeOffset(-1250)).toBe("-1.250s");
		expect(faketimeOffset(0)).toBe("+0.000s");
	});
});
