// Before the commands checker reads the storage, every partition is deployed once more, as its
// next holder would: it raises the fence above every host's epoch and actualizes the PLog tail.
// Why: a deposed holder's PLog write that a fault held back (proxy-hold-writes, a write the
// coordinator finished after its timeout) can land after the last holder's actualization. It is
// the event of a command answered "unknown", and it is not an anomaly: the next holder applies it
// (levels 0/1 find it with their insert; at level 2 a new holder's next write at that offset
// replaces it). Read as stored, such a tail looks like a half-applied command; read as served, it
// is either applied or never was. The checker judges what clients will read next, and the report
// says how many events this recovery applied, so nothing is hidden.
import type { SequencesTrustLevel } from "@vvm/cp";
import { createCommandProcessor } from "@vvm/cp";
import { checkCpStorage } from "@vvm/cp/testing";
import type { TTLStorage } from "@vvm/ttlstorage";

/** What the final recovery did. */
export interface FinalRecovery {
	readonly partitions: number;
	/** PLog events the recovery's actualization read (the tails beyond each stored offset). */
	readonly actualizedEvents: number;
	/** Of those, events whose records and WLog entry it wrote again (idempotent for applied ones). */
	readonly reappliedEvents: number;
	/** PLog offsets holding a value the processor did not write, consumed as corrupted. */
	readonly corruptedOffsets: number;
	/** What the storage check found before the recovery (a tail no holder applied shows here). */
	readonly before: readonly string[];
}

/**
 * Deploys every partition of the application on `storage` under a fresh epoch, waits until each
 * has actualized, and closes them. Rejects with the partition's error if one cannot recover.
 *
 * @example
 * ```ts
 * const r = await recoverAllPartitions(storage, { appId: 1, partitions: 8, trustLevel: 2 });
 * ```
 */
export async function recoverAllPartitions(
	storage: TTLStorage,
	options: {
		readonly appId: number;
		readonly partitions: number;
		readonly trustLevel: SequencesTrustLevel;
	},
): Promise<FinalRecovery> {
	const before = (await checkCpStorage({ storage, ...options, allowCorruptedOffsets: true }))
		.problems;
	const cp = createCommandProcessor({ storage, ...options });
	let actualizedEvents = 0;
	let reappliedEvents = 0;
	let corruptedOffsets = 0;
	try {
		// All at once: on Cassandra a raise waits out the previous epoch's stamp reservation.
		const partitions = Array.from({ length: options.partitions }, (_, p) => cp.deploy(p));
		await Promise.all(partitions.map((p) => p.ready()));
		for (const partition of partitions) {
			const s = partition.stats();
			actualizedEvents += s.actualizedEvents;
			reappliedEvents += s.reappliedEvents;
			corruptedOffsets += s.corruptedOffsets;
		}
	} finally {
		await cp.close();
	}
	return {
		partitions: options.partitions,
		actualizedEvents,
		reappliedEvents,
		corruptedOffsets,
		before,
	};
}
