import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { readBatch } from "./batch-store.ts";
import { leaseKeys } from "./keys.ts";
import type { LeaseTable } from "./lease-table.ts";
import { LeaseTableState } from "./lease-table.ts";
import { LEASE_DEFAULTS } from "./options.ts";

/**
 * Reads the lease table once, without joining the cluster: for tools, dashboards and routers.
 * Storage errors reject.
 *
 * @example
 * ```ts
 * const table = await readLeaseTable(storage, { namespace: "vvm" });
 * for (const l of table.leases) console.log(l.group, l.holder.address, l.live);
 * ```
 */
export async function readLeaseTable(
	storage: TTLStorage,
	options: { readonly namespace?: string; readonly clock?: Clock } = {},
): Promise<LeaseTable> {
	const keys = leaseKeys(options.namespace ?? LEASE_DEFAULTS.namespace);
	const clock = options.clock ?? systemClock;
	const state = await readBatch(storage, keys);
	const table = new LeaseTableState();
	table.applyBatch(state, clock.now());
	return table.table(clock.now());
}
