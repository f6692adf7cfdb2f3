import { ByteReader } from "./codec/byte-reader.ts";
import { ByteWriter } from "./codec/byte-writer.ts";
import { corrupt } from "./errors.ts";
import type { Lease, LeaseHolder } from "./model.ts";
import { holderKey } from "./model.ts";

/** Format byte that starts every record of this package. @internal */
export const FORMAT = 1;
/** @internal */
const KIND_ROOT = 1;
/** @internal */
export const KIND_SHARD = 2;

/** Flags of an entry's tag byte. @internal */
const TAG_PRESENT = 1;
const TAG_ACCEPTED = 2;
const TAG_PROLONGABLE = 4;
/** Holder indexes below this fit in the tag byte; larger ones follow it as a varint. @internal */
const INLINE_HOLDERS = 31;

/**
 * The layout of the batch: which shards exist (by first group) in the current epoch.
 * @internal
 */
export interface RootRecord {
	readonly epoch: number;
	readonly version: number;
	/** Groups covered: shard `i` covers `[starts[i], starts[i + 1] ?? groups)`. */
	readonly groups: number;
	readonly starts: readonly number[];
	readonly writer: string;
	readonly writtenAt: number;
}

/** What a shard says about itself, without its leases. @internal */
export interface ShardHeader {
	readonly epoch: number;
	/** Grows by one with every write of this shard: the compare-and-swap is on it (with the bytes). */
	readonly version: number;
	/** Frozen by a re-sharding: never written again; its content stays valid until it is deleted. */
	readonly sealed: boolean;
	readonly from: number;
	readonly count: number;
	/** The placement driver instance that wrote it (`address/incarnation`). */
	readonly writer: string;
	/** The writer's wall time when it wrote it; the base of the encoded times. */
	readonly writtenAt: number;
}

/** A decoded shard: `leases[i]` is the lease of group `from + i`. @internal */
export interface ShardRecord extends ShardHeader {
	readonly leases: ReadonlyArray<Lease | undefined>;
}

/** ZigZag of a safe integer, as a non-negative safe integer. @internal */
export function zigzag(n: number): number {
	return n >= 0 ? n * 2 : -n * 2 - 1;
}

function unzigzag(n: number): number {
	return n % 2 === 0 ? n / 2 : -(n + 1) / 2;
}

function checkTime(t: number, what: string): void {
	if (!Number.isSafeInteger(t) || t < 0)
		throw new RangeError(`[@vvm/leases] ${what} must be a safe integer >= 0, got ${t}`);
}

/** @internal */
export function encodeRoot(root: RootRecord): Uint8Array {
	const w = new ByteWriter(64 + root.starts.length * 3);
	w.byte(FORMAT);
	w.byte(KIND_ROOT);
	w.varint(root.epoch);
	w.varint(root.version);
	w.varint(root.groups);
	w.varint(root.starts.length);
	let prev = 0;
	for (const s of root.starts) {
		w.varint(s - prev);
		prev = s;
	}
	w.string(root.writer);
	w.varint(root.writtenAt);
	return w.finish();
}

/** @internal */
export function decodeRoot(bytes: Uint8Array): RootRecord {
	const r = new ByteReader(bytes, "lease batch root");
	if (r.byte() !== FORMAT || r.byte() !== KIND_ROOT) throw corrupt("lease batch root: not a root");
	const epoch = r.varint();
	const version = r.varint();
	const groups = r.varint();
	const n = r.varint();
	if (n > groups + 1) throw corrupt("lease batch root: too many shards");
	const starts: number[] = [];
	let prev = 0;
	for (let i = 0; i < n; i++) {
		prev += r.varint();
		starts.push(prev);
	}
	const writer = r.string();
	const writtenAt = r.varint();
	r.end();
	if (starts[0] !== 0 && groups > 0) throw corrupt("lease batch root: first shard must start at 0");
	for (let i = 1; i < starts.length; i++)
		if ((starts[i] as number) <= (starts[i - 1] as number) || (starts[i] as number) >= groups)
			throw corrupt("lease batch root: shard starts out of order");
	return { epoch, version, groups, starts, writer, writtenAt };
}

/**
 * Encodes groups `[header.from, header.from + header.count)`; the lease of group `g` is
 * `leases[g - base]`.
 *
 * Layout: format, kind, epoch, version, flags, from, count, writer, writtenAt; a holder table
 * (address, incarnation) and a time table (ZigZag of `time - writtenAt`), both in first-use order;
 * then one entry per group: a tag byte (present, accepted, prolongable, holder index if < 31),
 * the holder index beyond 31, the term byte, the start and expiration time indexes. An absent
 * lease is the single byte 0. Typically 4 bytes per lease.
 * @internal
 */
export function encodeShard(
	header: ShardHeader,
	leases: ArrayLike<Lease | undefined>,
	base = 0,
): Uint8Array {
	checkTime(header.writtenAt, "writtenAt");
	const holders = new Map<string, number>();
	const holderList: LeaseHolder[] = [];
	const times = new Map<number, number>();
	const timeList: number[] = [];
	const end = header.from + header.count;
	const timeIndex = (t: number): number => {
		let i = times.get(t);
		if (i === undefined) {
			checkTime(t, "a lease time");
			i = timeList.length;
			times.set(t, i);
			timeList.push(t);
		}
		return i;
	};
	const entries = new ByteWriter(header.count * 5 + 16);
	for (let g = header.from; g < end; g++) {
		const lease = leases[g - base];
		if (lease === undefined) {
			entries.byte(0);
			continue;
		}
		const key = holderKey(lease.holder);
		let h = holders.get(key);
		if (h === undefined) {
			h = holderList.length;
			holders.set(key, h);
			holderList.push(lease.holder);
		}
		const flags =
			TAG_PRESENT | (lease.accepted ? TAG_ACCEPTED : 0) | (lease.prolongable ? TAG_PROLONGABLE : 0);
		entries.byte(flags | (Math.min(h, INLINE_HOLDERS) << 3));
		if (h >= INLINE_HOLDERS) entries.varint(h - INLINE_HOLDERS);
		entries.byte(lease.term);
		entries.varint(timeIndex(lease.startTime));
		entries.varint(timeIndex(lease.expirationTime));
	}
	const w = new ByteWriter(entries.length + 64 + holderList.length * 40 + timeList.length * 6);
	w.byte(FORMAT);
	w.byte(KIND_SHARD);
	w.varint(header.epoch);
	w.varint(header.version);
	w.byte(header.sealed ? 1 : 0);
	w.varint(header.from);
	w.varint(header.count);
	w.string(header.writer);
	w.varint(header.writtenAt);
	w.varint(holderList.length);
	for (const h of holderList) {
		w.string(h.address);
		w.string(h.incarnation);
	}
	w.varint(timeList.length);
	for (const t of timeList) w.varint(zigzag(t - header.writtenAt));
	const head = w.finish();
	const body = entries.finish();
	const out = new Uint8Array(head.length + body.length);
	out.set(head);
	out.set(body, head.length);
	return out;
}

function readHeader(r: ByteReader): ShardHeader {
	if (r.byte() !== FORMAT || r.byte() !== KIND_SHARD) throw corrupt("lease shard: not a shard");
	const epoch = r.varint();
	const version = r.varint();
	const flags = r.byte();
	const from = r.varint();
	const count = r.varint();
	const writer = r.string();
	const writtenAt = r.varint();
	return { epoch, version, sealed: (flags & 1) === 1, from, count, writer, writtenAt };
}

/** The header alone, to skip decoding a shard whose version is already known. @internal */
export function decodeShardHeader(bytes: Uint8Array): ShardHeader {
	return readHeader(new ByteReader(bytes, "lease shard"));
}

/** @internal */
export function decodeShard(bytes: Uint8Array): ShardRecord {
	const r = new ByteReader(bytes, "lease shard");
	const header = readHeader(r);
	const holderCount = r.varint();
	if (holderCount > header.count) throw corrupt("lease shard: more holders than groups");
	const holders: LeaseHolder[] = [];
	for (let i = 0; i < holderCount; i++)
		holders.push({ address: r.string(), incarnation: r.string() });
	const timeCount = r.varint();
	if (timeCount > header.count * 2) throw corrupt("lease shard: more times than leases");
	const times: number[] = [];
	for (let i = 0; i < timeCount; i++) times.push(header.writtenAt + unzigzag(r.varint()));
	const leases: Array<Lease | undefined> = new Array(header.count);
	for (let i = 0; i < header.count; i++) {
		const tag = r.byte();
		if ((tag & TAG_PRESENT) === 0) {
			if (tag !== 0) throw corrupt("lease shard: bad tag");
			leases[i] = undefined;
			continue;
		}
		let h = tag >> 3;
		if (h === INLINE_HOLDERS) h += r.varint();
		const holder = holders[h];
		const term = r.byte();
		const startTime = times[r.varint()];
		const expirationTime = times[r.varint()];
		if (holder === undefined || startTime === undefined || expirationTime === undefined)
			throw corrupt("lease shard: index out of range");
		leases[i] = {
			group: header.from + i,
			holder,
			startTime,
			expirationTime,
			accepted: (tag & TAG_ACCEPTED) !== 0,
			prolongable: (tag & TAG_PROLONGABLE) !== 0,
			term,
		};
	}
	r.end();
	return { ...header, leases };
}
