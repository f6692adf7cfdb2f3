import type { Bytes } from "@vvm/ttlstorage";

/**
 * On-disk layout of the level driver (all big-endian, so byte order = numeric order):
 *
 * - data key:   `u16(len(pKey)) | pKey | cCols`. All records of one `pKey` form one contiguous key
 *   range, ordered by the bytes of `cCols`; the length prefix keeps `pKey = "a"` apart from
 *   `pKey = "ab"`.
 * - data value: `u64(expireAt ms, 0 = none) | value`.
 * - index key:  `u64(expireAt ms) | data key`, value empty: the index sorts by expiry.
 *
 * @internal
 */
const EXPIRY_BYTES = 8;

function writeU64(out: Uint8Array, offset: number, n: number): void {
	const view = new DataView(out.buffer, out.byteOffset, out.byteLength);
	view.setUint32(offset, Math.floor(n / 0x1_0000_0000));
	view.setUint32(offset + 4, n >>> 0);
}

function readU64(bytes: Bytes, offset: number): number {
	const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
	return view.getUint32(offset) * 0x1_0000_0000 + view.getUint32(offset + 4);
}

/** The data key of a record. @internal */
export function dataKey(pKey: Bytes, cCols: Bytes): Uint8Array {
	const out = new Uint8Array(2 + pKey.length + cCols.length);
	out[0] = pKey.length >>> 8;
	out[1] = pKey.length & 0xff;
	out.set(pKey, 2);
	out.set(cCols, 2 + pKey.length);
	return out;
}

/** Length of the `u16 | pKey` prefix of a data key. @internal */
function partitionPrefixLength(key: Bytes): number {
	return 2 + (((key[0] as number) << 8) | (key[1] as number));
}

/** A plain `Uint8Array` copy (databases may hand out `Buffer`s or shared memory). @internal */
function plainCopy(bytes: Bytes): Uint8Array {
	return new Uint8Array(bytes);
}

/** The `cCols` part of a data key, copied. @internal */
export function cColsOf(key: Bytes): Uint8Array {
	return plainCopy(key.subarray(partitionPrefixLength(key)));
}

/**
 * The smallest key greater than every key that starts with `prefix` (the exclusive end of a
 * prefix range), or `undefined` when there is none (all bytes 0xff).
 * @internal
 */
export function prefixEnd(prefix: Bytes): Uint8Array | undefined {
	const out = Uint8Array.from(prefix);
	for (let i = out.length - 1; i >= 0; i--) {
		if ((out[i] as number) < 0xff) {
			out[i] = (out[i] as number) + 1;
			return out.slice(0, i + 1);
		}
	}
	return undefined;
}

/** A data value: expiry then the user's bytes. @internal */
export function encodeValue(expireAt: number, value: Bytes): Uint8Array {
	// From node's buffer pool (one slab per few KiB of values): LevelDB copies it, nothing keeps it,
	// and a small value costs no allocation of its own.
	const out = Buffer.allocUnsafe(EXPIRY_BYTES + value.length);
	writeU64(out, 0, expireAt);
	out.set(value, EXPIRY_BYTES);
	return out;
}

/** Splits a data value into its expiry and a copy of the user's bytes. @internal */
export function decodeValue(stored: Bytes): { expireAt: number; value: Uint8Array } {
	if (stored.length < EXPIRY_BYTES) {
		throw new TypeError(`corrupt record: ${stored.length} bytes, expected at least 8`);
	}
	return { expireAt: readU64(stored, 0), value: plainCopy(stored.subarray(EXPIRY_BYTES)) };
}

/** The index key of a record expiring at `expireAt`. @internal */
export function indexKey(expireAt: number, key: Bytes): Uint8Array {
	const out = new Uint8Array(EXPIRY_BYTES + key.length);
	writeU64(out, 0, expireAt);
	out.set(key, EXPIRY_BYTES);
	return out;
}

/** Index keys of records expiring at or before `nowMs` sort below this bound. @internal */
export function indexBound(nowMs: number): Uint8Array {
	const out = new Uint8Array(EXPIRY_BYTES);
	writeU64(out, 0, Math.max(0, Math.floor(nowMs) + 1));
	return out;
}

/** Splits an index key into expiry and data key. @internal */
export function decodeIndexKey(key: Bytes): { expireAt: number; dataKey: Uint8Array } {
	return { expireAt: readU64(key, 0), dataKey: plainCopy(key.subarray(EXPIRY_BYTES)) };
}

/** A string usable as a map key for a byte string (one char per byte, exact). @internal */
export function lockKeyOf(key: Bytes): string {
	// Short keys (every fence scope, most data keys): one flat string from the codes (a string
	// built char by char is a rope that each map lookup flattens again); both give latin1.
	if (key.length > 64)
		return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
	return String.fromCharCode.apply(null, key as unknown as number[]);
}
