import type { Bytes, TTLStorage } from "@vvm/ttlstorage";
import { bytesEqual } from "@vvm/ttlstorage";
import { decodeShard, KIND_SHARD } from "../batch-codec.ts";
import type { Lease } from "../model.ts";
import { sameGrant } from "../model.ts";
import { wrapStorage } from "./wrap-storage.ts";

/**
 * Wraps the storage every host shares and checks every lease batch write that succeeds: a group
 * changes hands only with a start time at or after the old lease's expiration (the writer's clock
 * had passed it), and a grant's expiration never moves back. `violations` lists what broke.
 *
 * @example
 * ```ts
 * const checked = checkGrants(storage, utf8("ns/leases"));
 * // ... run hosts over `checked` ...
 * expect(checked.violations).toEqual([]);
 * ```
 */
export function checkGrants(
	storage: TTLStorage,
	batchPKey: Bytes,
): TTLStorage & { readonly violations: string[]; readonly writes: number } {
	const last = new Map<number, Lease>();
	const violations: string[] = [];
	let writes = 0;
	const inspect = (pKey: Bytes, value: Bytes): void => {
		if (!bytesEqual(pKey, batchPKey) || value[1] !== KIND_SHARD) return;
		writes++;
		const shard = decodeShard(value);
		shard.leases.forEach((lease, i) => {
			const g = shard.from + i;
			const prev = last.get(g);
			if (lease === undefined) return;
			if (prev !== undefined) {
				if (
					!sameGrant(prev, lease) &&
					lease.startTime < prev.expirationTime &&
					lease.holder.address !== ""
				)
					violations.push(
						`group ${g}: granted to ${lease.holder.address} at ${lease.startTime}, before the lease of ${prev.holder.address} expired at ${prev.expirationTime}`,
					);
				if (sameGrant(prev, lease) && lease.expirationTime < prev.expirationTime)
					violations.push(
						`group ${g}: expiration moved back from ${prev.expirationTime} to ${lease.expirationTime}`,
					);
			}
			last.set(g, lease);
		});
	};
	const wrapped = wrapStorage(storage, {
		insertIfNotExists: async (p, c, v, t) => {
			const ok = await storage.insertIfNotExists(p, c, v, t);
			if (ok) inspect(p, v);
			return ok;
		},
		compareAndSwap: async (p, c, o, n, t) => {
			const ok = await storage.compareAndSwap(p, c, o, n, t);
			if (ok) inspect(p, n);
			return ok;
		},
	});
	return Object.assign(wrapped, {
		violations,
		get writes() {
			return writes;
		},
	});
}
