// --placement and the lease flags: defaults, environment, and every rejection (exit 2 naming the
// flag, before any I/O).
import { describe, expect, it } from "vitest";
import { ConfigError, helpText, parseHostConfig } from "../src/config.ts";
import { hostConfig as config } from "./support/config.ts";
import { runCli } from "./support/host-process.ts";

describe("placement flags", () => {
	it("default to static placement and the @vvm/leases defaults", () => {
		expect(config([])).toMatchObject({
			placement: {
				mode: "static",
				lease: { leaseIntervalMs: 10_000, maxClockSkewMs: 500, namespace: "vvm" },
			},
			cp: { partitions: 10 },
		});
	});

	it("--num-vvm-from (VVM_NUM_FROM): the stored num-vvm to change from, with --placement static", () => {
		expect(config([]).placement.numVVMFrom).toBeUndefined();
		expect(config(["--num-vvm", "3", "--num-vvm-from", "2"])).toMatchObject({
			leadership: { numVVM: 3 },
			placement: { mode: "static", numVVMFrom: 2 },
		});
		expect(config([], { VVM_NUM_FROM: "4" }).placement.numVVMFrom).toBe(4);
	});

	it("read VVM_PLACEMENT and friends; flags win", () => {
		const env = {
			VVM_PLACEMENT: "leases",
			VVM_PARTITIONS: "12",
			VVM_LEASE_INTERVAL_MS: "2000",
			VVM_LEASE_MAX_CLOCK_SKEW_MS: "100",
			VVM_LEASE_NAMESPACE: "c1",
		};
		expect(config([], env)).toMatchObject({
			placement: {
				mode: "leases",
				lease: { leaseIntervalMs: 2000, maxClockSkewMs: 100, namespace: "c1" },
			},
			cp: { partitions: 12 },
		});
		expect(config(["--placement", "static", "--partitions", "3"], env)).toMatchObject({
			placement: { mode: "static" },
			cp: { partitions: 3 },
		});
	});

	it.each([
		[["--placement", "ignite"], "--placement must be one of static, leases"],
		[["--partitions", "0"], "--partitions must be an integer in 1..65536"],
		[["--partitions", "65537"], "--partitions must be an integer in 1..65536"],
		[
			["--placement", "leases", "--partitions", "25001"],
			"--partitions 25001 is more than --placement leases can place (at most 25000)",
		],
		[["--lease-interval-ms", "99"], "--lease-interval-ms must be an integer in 100..86400000"],
		[["--lease-max-clock-skew-ms=-1"], "--lease-max-clock-skew-ms must be an integer"],
		[
			["--lease-interval-ms", "2000", "--lease-max-clock-skew-ms", "500"],
			"--lease-max-clock-skew-ms 500 must be below a quarter of --lease-interval-ms 2000",
		],
		[["--lease-namespace", " "], "--lease-namespace must not be empty"],
		[["--num-vvm-from", "0"], "--num-vvm-from must be an integer in 1..4294967295"],
		[
			["--placement", "leases", "--num-vvm-from", "2"],
			"--num-vvm-from changes the numVVM of --placement static; --placement leases has no slots",
		],
		[["--lease-namespace", "x".repeat(201)], "--lease-namespace must be at most 200 bytes"],
	])("rejects %j naming the flag", (argv, message) => {
		expect(() => parseHostConfig(argv, {})).toThrow(ConfigError);
		expect(() => parseHostConfig(argv, {})).toThrow(message);
	});

	it("--help lists them", () => {
		const text = helpText();
		for (const s of ["--placement", "VVM_PLACEMENT", "--partitions", "--lease-interval-ms"]) {
			expect(text).toContain(s);
		}
		expect(text).toContain("--lease-max-clock-skew-ms");
		expect(text).toContain("GET /leases");
	});

	it("the CLI exits 2 before any I/O (an endpoint nobody listens on is never contacted)", async () => {
		const { code, stderr, stdout } = await runCli([
			...["--storage", "dyn", "--dyn-endpoint", "http://127.0.0.1:9"],
			...[
				"--placement",
				"leases",
				"--lease-interval-ms",
				"1000",
				"--lease-max-clock-skew-ms",
				"250",
			],
		]);
		expect(code).toBe(2);
		expect(stderr).toContain("--lease-max-clock-skew-ms 250 must be below a quarter");
		expect(stdout).toBe("");
	});
});
