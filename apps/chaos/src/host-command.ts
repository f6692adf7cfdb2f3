// How the chaos tool starts vvm-host: the built CLI (fast start-up) when it is up to date, or the
// sources through tsx (the rule is the host's own: @vvm/vvm-host/launch).
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { HostBuild } from "@vvm/vvm-host/launch";
import { HOST_DIR, hostCliArgs } from "@vvm/vvm-host/launch";
import type { HostCommand } from "./chaos-host.ts";
import type { ChaosOptions } from "./options.ts";

/** The repository root (this file is apps/chaos/src/host-command.ts). */
export const REPO_ROOT: string = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

/** The environment of a host: this one's, without any VVM_/CASSANDRA_/DYNAMODB_ setting. */
function baseEnv(): Record<string, string> {
	const env: Record<string, string> = {};
	for (const [k, v] of Object.entries(process.env)) {
		if (v === undefined || /^(VVM_|CASSANDRA_|DYNAMODB_)/.test(k)) continue;
		env[k] = v;
	}
	return env;
}

/**
 * What the operator actions change between host starts (`src/operator.ts`): the hosts' placement
 * and `--num-vvm`, and `--num-vvm-from` for the one start that changes the stored value.
 */
export interface ClusterShape {
	readonly placement: "static" | "leases";
	readonly numVVM: number;
	readonly numVVMFrom: number | undefined;
}

/**
 * The command of host number `index` (its storage flags and environment come from the caller).
 *
 * @example
 * ```ts
 * const cmd = hostCommand(options, "dist", storage.hostArgs(0), clocks?.env("H1") ?? {});
 * ```
 */
export function hostCommand(
	options: ChaosOptions,
	build: HostBuild,
	storageArgs: readonly string[],
	extraEnv: Readonly<Record<string, string>>,
	cluster: ClusterShape = {
		placement: options.placement,
		numVVM: options.numVVM,
		numVVMFrom: undefined,
	},
): HostCommand {
	const args = [
		"--http-port",
		"0",
		"--leadership-seconds",
		String(options.leadershipSeconds),
		"--num-vvm",
		String(cluster.numVVM),
		...(cluster.numVVMFrom === undefined ? [] : ["--num-vvm-from", String(cluster.numVVMFrom)]),
		"--acquire-retry-ms",
		String(options.acquireRetryMs),
		// A follower waits as long as the run lasts (a timeout would only restart it).
		"--acquire-timeout-ms",
		String(24 * 3600 * 1000),
		"--work-interval-ms",
		String(options.workIntervalMs),
		"--log-level",
		"debug",
		...(options.maxClockSkewMs > 0 ? ["--max-clock-skew-ms", String(options.maxClockSkewMs)] : []),
		...(options.workload === "commands"
			? [
					"--placement",
					cluster.placement,
					"--partitions",
					String(options.partitions),
					"--lease-interval-ms",
					String(options.leaseIntervalMs),
					"--lease-max-clock-skew-ms",
					String(options.leaseMaxClockSkewMs),
					"--sequences-trust-level",
					String(options.trustLevel),
					...(options.pipelineDepth === undefined
						? []
						: ["--pipeline-depth", String(options.pipelineDepth)]),
				]
			: []),
		...(options.unsafeMutants.length > 0 ? ["--unsafe-allow-mutants"] : []),
		...storageArgs,
	];
	const env = {
		...baseEnv(),
		...extraEnv,
		...(options.unsafeMutants.length > 0
			? { VVM_UNSAFE_MUTANTS: options.unsafeMutants.join(",") }
			: {}),
	};
	return { command: process.execPath, args: [...hostCliArgs(build), ...args], cwd: HOST_DIR, env };
}
