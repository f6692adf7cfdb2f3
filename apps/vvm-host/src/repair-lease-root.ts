// `vvm-host repair-lease-root [options]`: the operator's command for a lease batch whose root record
// is missing or unreadable (`leases.batch-fault` log lines, `vvm_leases_batch_fault` 1). It opens
// the configured storage, runs `repairLeaseRoot` of @vvm/leases with `--lease-namespace` and
// `--partitions`, prints what it found and did, and touches nothing else (no HTTP, no leadership,
// no lease node). The running hosts pick the new root up at their next poll.
import type { RepairLeaseRootResult } from "@vvm/leases";
import { repairLeaseRoot } from "@vvm/leases";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { HostConfig } from "./config.ts";
import { describeError } from "./logger.ts";
import { openStorage } from "./storage/index.ts";

/** The subcommand's name: `vvm-host repair-lease-root --storage … --lease-namespace … --partitions …`. */
export const REPAIR_LEASE_ROOT_COMMAND = "repair-lease-root";

/** What each result means for the cluster, in the words the command prints. */
const MEANING: Readonly<Record<RepairLeaseRootResult["result"], string>> = {
	intact: "the root is there and readable; nothing was written",
	"not-created":
		"no root, no lease and no creation marker: the lease cluster was never created (the placement driver creates it); nothing was written",
	rebuilt:
		"the shard records tiled every group: the new root names them and every lease goes on as stored; the hosts read it at their next poll and grant again",
	unknown:
		"the shard records did not tile the groups: they were deleted and the new root names none; every partition counts as leased to nobody known and is granted again a lease interval plus the clock-skew bound after the placement driver's next tick (partitions are dark until then)",
};

/** Options of {@link runRepairLeaseRoot}, for tests and embedders. */
export interface RepairLeaseRootCommandOptions {
	/** A storage the caller opened and keeps (instead of `--storage`); not closed here. */
	readonly storage?: TTLStorage;
	/** Where the report line goes; default stdout. */
	readonly out?: (line: string) => void;
	/** Where a failure message goes; default stderr. */
	readonly err?: (line: string) => void;
}

/**
 * The line {@link runRepairLeaseRoot} prints for `r`: `lease root of namespace "vvm" (10
 * partitions): rebuilt (epoch 3, 1 shard record(s), 10 groups): <what it means>`.
 *
 * @example
 * ```ts
 * repairReport("vvm", 10, { result: "intact", epoch: 1, shards: 1, groups: 10 });
 * ```
 */
export function repairReport(
	namespace: string,
	partitions: number,
	r: RepairLeaseRootResult,
): string {
	return `lease root of namespace "${namespace}" (${partitions} partitions): ${r.result} (epoch ${r.epoch}, ${r.shards} shard record(s), ${r.groups} groups): ${MEANING[r.result]}`;
}

/**
 * Runs the repair once and resolves to the exit code: 0 when it completed (whatever the result:
 * `intact`, `not-created`, `rebuilt` or `unknown`, printed with its meaning), 1 when the storage
 * could not be opened or the repair failed (a storage error, or `LEASES_CORRUPT_RECORD` for an
 * undecodable shard record: the message says so; nothing more than the repair's own writes may
 * have happened), 2 for a `--partitions` the leases placement cannot have.
 *
 * @example
 * ```ts
 * const code = await runRepairLeaseRoot(config); // config of `--storage dyn --partitions 64`
 * ```
 */
export async function runRepairLeaseRoot(
	config: HostConfig,
	options: RepairLeaseRootCommandOptions = {},
): Promise<number> {
	const out = options.out ?? ((line: string) => process.stdout.write(`${line}\n`));
	const err = options.err ?? ((line: string) => process.stderr.write(`${line}\n`));
	const namespace = config.placement.lease.namespace;
	const partitions = config.cp.partitions;
	let opened: { driver: TTLStorage; close(): Promise<void> };
	try {
		opened =
			options.storage === undefined
				? await openStorage(config.storage)
				: { driver: options.storage, close: async () => {} };
	} catch (error) {
		err(`vvm-host ${REPAIR_LEASE_ROOT_COMMAND}: cannot open the storage: ${describeError(error)}`);
		return 1;
	}
	try {
		const r = await repairLeaseRoot(opened.driver, { namespace, groups: partitions });
		out(repairReport(namespace, partitions, r));
		return 0;
	} catch (error) {
		if (error instanceof RangeError) {
			err(
				`vvm-host ${REPAIR_LEASE_ROOT_COMMAND}: bad configuration: --partitions: ${error.message}`,
			);
			return 2;
		}
		err(
			`vvm-host ${REPAIR_LEASE_ROOT_COMMAND}: the repair failed (the root may or may not have been written; running it again is safe): ${describeError(error)}`,
		);
		return 1;
	} finally {
		await opened.close().catch(() => {});
	}
}
