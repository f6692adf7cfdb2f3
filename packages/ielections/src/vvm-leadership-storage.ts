import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, u32, utf8 } from "@vvm/ttlstorage";
import type { ElectionsCodec } from "./elections-storage.ts";
import { createElectionsStorage } from "./elections-storage.ts";
import type { ITTLStorage } from "./ttl-storage.ts";

/** `pKey` prefix of VVM leadership records in the sysvvm keyspace (voedger `pKeyPrefix_VVMLeader`). */
export const VVM_LEADER_PREFIX = 1;

/**
 * `pKey` prefix of the fencing-token counters of VVM slots (ours; voedger has none): `u32(256)`,
 * `cCols` = `u32(slot)`, value u64 big-endian, no TTL. Go VVMs ignore it.
 */
export const VVM_FENCING_PREFIX = 256;

const LEADER_PKEY = u32(VVM_LEADER_PREFIX);
const FENCING_PKEY = u32(VVM_FENCING_PREFIX);

/**
 * The VVM leadership layout of voedger (reference §4.2): `pKey` = `u32(1)`, `cCols` = `u32(slot)`
 * (4-byte big-endian), value = the VVM address as UTF-8.
 *
 * @example
 * ```ts
 * const codec = vvmLeadershipCodec;
 * codec.cCols(3); // Uint8Array [0, 0, 0, 3]
 * ```
 */
export const vvmLeadershipCodec: ElectionsCodec<number, string> = Object.freeze({
	pKey: () => LEADER_PKEY,
	cCols: (slot: number) => u32(slot),
	encodeValue: (address: string) => utf8(address),
	decodeValue: (bytes: Uint8Array) => fromUtf8(bytes),
	fencingPKey: () => FENCING_PKEY,
});

/**
 * Elections storage for VVM slots over a driver opened on the sysvvm keyspace, with the original
 * key layout, so TypeScript and Go VVMs can share one cluster's leadership records.
 *
 * @see voedger pkg/vvm/storage NewElectionsTTLStorage
 * @example
 * ```ts
 * const elections = createElections(vvmLeadershipStorage(driver));
 * const signal = await elections.acquireLeadership(1, "10.0.0.1:8822", 20);
 * ```
 */
export function vvmLeadershipStorage(driver: TTLStorage): ITTLStorage<number, string> {
	return createElectionsStorage(driver, vvmLeadershipCodec);
}
