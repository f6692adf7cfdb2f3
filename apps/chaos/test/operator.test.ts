// The operator actions' options and the partition-epoch check (the actions themselves run against
// real hosts: `pnpm chaos --workload commands --operator all`, README "Operator actions").
import { describe, expect, it } from "vitest";
import { hostCommand } from "../src/host-command.ts";
import { ChaosUsageError, parseChaosOptions } from "../src/options.ts";
import { checkDeployments } from "../src/partition-epochs.ts";

const parse = (argv: string[]) => {
	const o = parseChaosOptions(argv);
	if (o === undefined) throw new Error("help");
	return o;
};

describe("--operator", () => {
	it("parses the actions; num-vvm starts the hosts in static placement", () => {
		expect(parse(["--workload", "commands"])).toMatchObject({
			operator: [],
			placement: "leases",
			operatorIntervalMs: 10_000,
		});
		expect(parse(["--workload", "commands", "--operator", "root-loss,num-vvm"])).toMatchObject({
			operator: ["num-vvm", "root-loss"],
			placement: "static",
		});
		expect(parse(["--workload", "commands", "--operator", "all"]).operator).toEqual([
			"num-vvm",
			"placement-switch",
			"root-loss",
		]);
		expect(
			parse(["--workload", "commands", "--operator", "num-vvm", "--placement", "leases"]).placement,
		).toBe("leases");
	});

	it("refuses an unknown action, and operator flags without --workload commands", () => {
		expect(() => parse(["--workload", "commands", "--operator", "reboot"])).toThrow(
			/--operator names an unknown action "reboot"/,
		);
		expect(() => parse(["--operator", "num-vvm"])).toThrow(ChaosUsageError);
		expect(() =>
			parse(["--workload", "commands", "--operator", "num-vvm", "--hosts", "1", "--num-vvm", "1"]),
		).toThrow(/needs --hosts 2 or more/);
		expect(() => parse(["--placement", "static"])).toThrow(/option of --workload commands/);
	});

	it("the host command follows the cluster's shape (placement, --num-vvm, --num-vvm-from)", () => {
		const o = parse(["--workload", "commands", "--operator", "num-vvm"]);
		const args = hostCommand(o, "source", [], {}).args;
		expect(args.join(" ")).toContain("--num-vvm 2 ");
		expect(args.join(" ")).toContain("--placement static");
		expect(args).not.toContain("--num-vvm-from");
		const changed = hostCommand(
			o,
			"source",
			[],
			{},
			{
				placement: "static",
				numVVM: 3,
				numVVMFrom: 2,
			},
		).args.join(" ");
		expect(changed).toContain("--num-vvm 3 --num-vvm-from 2");
		const leases = hostCommand(
			o,
			"source",
			[],
			{},
			{
				placement: "leases",
				numVVM: 3,
				numVVMFrom: undefined,
			},
		).args.join(" ");
		expect(leases).toContain("--placement leases");
	});
});

describe("checkDeployments", () => {
	const d = (partition: number, fencingToken: string, pid: number, mono: number) => ({
		event: "partition-deployed",
		partition,
		fencingToken,
		pid,
		mono,
	});

	it("passes growing epochs, one incarnation per epoch (a redeploy by the same one is fine)", () => {
		const r = checkDeployments([
			["H1", [d(0, "5", 1, 10), d(0, "5", 1, 11), d(1, "1700000000000", 1, 12)]],
			["H2", [d(0, "6", 2, 20), d(1, "1700000000100", 2, 30)]],
		]);
		expect(r).toMatchObject({ ok: true, deployments: 5, epochs: 4, outOfOrder: 0, anomalies: [] });
	});

	it("finds a partition deployed under one epoch by two incarnations (review5 F2a)", () => {
		const r = checkDeployments([
			["H1", [d(2, "7", 1, 10)]],
			["H2", [d(2, "7", 2, 11), d(3, "4", 2, 12)]],
			["H3", [d(3, "3", 3, 13)]],
		]);
		expect(r.ok).toBe(false);
		expect(r.anomalies).toEqual([
			"partition 2 deployed under epoch 7 by 2 incarnations: H1/pid 1, H2/pid 2",
		]);
		expect(r.outOfOrder).toBe(2); // 7 then 7 on partition 2, 4 then 3 on partition 3
	});
});
