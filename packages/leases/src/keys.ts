import type { Bytes } from "@vvm/ttlstorage";
import { concatBytes, u32, utf8 } from "@vvm/ttlstorage";
import { utf8Length } from "./codec/byte-writer.ts";

/**
 * Longest namespace, in UTF-8 bytes.
 *
 * @example
 * ```ts
 * if (Buffer.byteLength(ns) > MAX_NAMESPACE_BYTES) throw new Error("namespace too long");
 * ```
 */
export const MAX_NAMESPACE_BYTES = 200;
/**
 * Longest host address, in UTF-8 bytes.
 *
 * @example
 * ```ts
 * if (Buffer.byteLength(address) > MAX_ADDRESS_BYTES) throw new Error("address too long");
 * ```
 */
export const MAX_ADDRESS_BYTES = 255;

/**
 * Where the records of one lease cluster live (all under `namespace`):
 * - `<ns>/leases`: the batch: cCols `[0]` is the root (layout), `[1] u32(epoch) u32(from)` a shard;
 * - `<ns>/members`: one heartbeat per host, cCols = its address;
 * - `<ns>/leases-created`: the creation marker (cCols `[0]`), written once the batch's root exists
 *   and before the first lease is granted: a batch without root is a fault once it exists;
 * - `<ns>/placement-driver`: the elections record of the active placement driver, and
 *   `<ns>/placement-driver-fencing` its fencing-token counter (kept by `@vvm/ielections`).
 * @internal
 */
export interface LeaseKeys {
	readonly batch: Bytes;
	readonly members: Bytes;
	readonly placementDriver: Bytes;
	readonly placementDriverFencing: Bytes;
	readonly root: Bytes;
	/** pKey of the creation marker (its cCols are `root`'s). */
	readonly marker: Bytes;
	shard(epoch: number, from: number): Bytes;
	member(address: string): Bytes;
}

const ROOT = Uint8Array.of(0);
const SHARD = Uint8Array.of(1);

/** Throws a `TypeError`/`RangeError` unless `namespace` is a usable key prefix. */
function validateNamespace(namespace: unknown): asserts namespace is string {
	if (typeof namespace !== "string" || namespace.length === 0)
		throw new TypeError("[@vvm/leases] namespace must be a non-empty string");
	if (utf8Length(namespace) > MAX_NAMESPACE_BYTES)
		throw new RangeError(
			`[@vvm/leases] namespace is ${utf8Length(namespace)} bytes; the limit is ${MAX_NAMESPACE_BYTES}`,
		);
}

/** @internal */
export function leaseKeys(namespace: string): LeaseKeys {
	validateNamespace(namespace);
	return {
		batch: utf8(`${namespace}/leases`),
		members: utf8(`${namespace}/members`),
		placementDriver: utf8(`${namespace}/placement-driver`),
		placementDriverFencing: utf8(`${namespace}/placement-driver-fencing`),
		root: ROOT,
		marker: utf8(`${namespace}/leases-created`),
		shard: (epoch, from) => concatBytes(SHARD, u32(epoch), u32(from)),
		member: (address) => utf8(address),
	};
}

/** `true` for the cCols of the root record. @internal */
export function isRootKey(cCols: Bytes): boolean {
	return cCols.length === 1 && cCols[0] === 0;
}
