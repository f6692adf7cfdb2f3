import type { AttributeValue } from "@aws-sdk/client-dynamodb";
import type { Bytes } from "@vvm/ttlstorage";
import { NO_EXPIRY } from "@vvm/ttlstorage";

/**
 * Item layout (attribute names are always passed through `ExpressionAttributeNames`, since
 * `TTL` and many other words are reserved in DynamoDB expressions):
 *
 * - `pk` (B, partition key) = `pKey`;
 * - `ck` (B, sort key) = `0x00 | cCols`: key attributes cannot be empty, and a common prefix keeps
 *   DynamoDB's unsigned byte order equal to the order of `cCols`;
 * - `v` (B) = the value (may be empty);
 * - `exp` (N) = expiry in Unix ms, 0 = none: the attribute every condition and read compares;
 * - `ttl` (N) = only when the record has a TTL: expiry in Unix seconds plus a grace period, the
 *   table's native TTL attribute, so DynamoDB eventually reaps dead items;
 * - `fe`, `fs` (N) = only on a fenced write: the writer's epoch and its write stamp (µs, growing
 *   per process), compared in (epoch, stamp) order by the next fenced write of the record.
 *
 * @internal
 */
export const ATTR = {
	pk: "pk",
	ck: "ck",
	v: "v",
	exp: "exp",
	ttl: "ttl",
	fe: "fe",
	fs: "fs",
} as const;

export type Item = Record<string, AttributeValue>;

/** `0x00 | cCols`. @internal */
export function sortKey(cCols: Bytes): Uint8Array {
	const out = new Uint8Array(cCols.length + 1);
	out.set(cCols, 1);
	return out;
}

/** The primary key of a record. @internal */
export function keyOf(pKey: Bytes, cCols: Bytes): Item {
	return { [ATTR.pk]: { B: pKey }, [ATTR.ck]: { B: sortKey(cCols) } };
}

/** The full item of a record. @internal */
export function itemOf(
	pKey: Bytes,
	cCols: Bytes,
	value: Bytes,
	expireAt: number,
	reapGraceSeconds: number,
	order?: FenceOrder,
): Item {
	const item: Item = {
		...keyOf(pKey, cCols),
		[ATTR.v]: { B: value },
		[ATTR.exp]: { N: String(expireAt) },
	};
	if (expireAt !== NO_EXPIRY) {
		item[ATTR.ttl] = { N: String(Math.ceil(expireAt / 1000) + reapGraceSeconds) };
	}
	if (order !== undefined) {
		item[ATTR.fe] = { N: order.epoch.toString() };
		item[ATTR.fs] = { N: String(order.stamp) };
	}
	return item;
}

/** The (epoch, stamp) a fenced write stores. @internal */
export interface FenceOrder {
	readonly epoch: bigint;
	readonly stamp: number;
}

let lastStamp = 0;

/**
 * The stamp of the next fenced write of this process: microseconds of wall time, but always above
 * the previous one, so of two writes under one epoch the later call has the higher stamp (F2).
 * Wall time only keeps stamps growing across restarts of a process with the same epoch.
 * @internal
 */
export function nextStamp(): number {
	lastStamp = Math.max(lastStamp + 1, Date.now() * 1000);
	return lastStamp;
}

/**
 * The condition under which a fenced write may replace the stored item: none stored, a live one
 * written under an older (epoch, stamp), or an expired one. `:fe`, `:fs`, `:zero`, `:now` bound.
 * @internal
 */
export const ORDER_CONDITION =
	"(attribute_not_exists(#fe) OR #fe < :fe OR (#fe = :fe AND #fs <= :fs) OR (#exp > :zero AND #exp <= :now))";

function bytesAttr(item: Item, name: string): Uint8Array {
	const b = item[name]?.B;
	if (!(b instanceof Uint8Array)) throw new TypeError(`item attribute ${name} is not binary`);
	// A plain copy: the SDK may hand out Buffers or views of a shared response buffer.
	return new Uint8Array(b);
}

/** Expiry of a stored item; an item without `exp` (written by someone else) never expires. @internal */
export function itemExpiry(item: Item): number {
	const n = item[ATTR.exp]?.N;
	if (n === undefined) return NO_EXPIRY;
	const expireAt = Number(n);
	if (!Number.isFinite(expireAt)) throw new TypeError(`item attribute exp is not a number: ${n}`);
	return expireAt;
}

/** Value of a stored item. @internal */
export function itemValue(item: Item): Uint8Array {
	return bytesAttr(item, ATTR.v);
}

/** `cCols` of a stored item (its sort key without the 0x00 prefix). @internal */
export function itemCCols(item: Item): Uint8Array {
	return bytesAttr(item, ATTR.ck).subarray(1);
}

/** A string identifying a record's key, for de-duplication. @internal */
export function recordId(pKey: Bytes, cCols: Bytes): string {
	const latin1 = (b: Bytes): string =>
		Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");
	return `${pKey.length}:${latin1(pKey)}${latin1(cCols)}`;
}
