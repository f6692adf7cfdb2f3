import type { Bytes } from "./ttl-storage.ts";

/** Orders byte strings lexicographically (shorter prefix first), as every driver sorts `cCols`. */
export function compareBytes(a: Bytes, b: Bytes): number {
	const n = Math.min(a.length, b.length);
	for (let i = 0; i < n; i++) {
		const d = (a[i] as number) - (b[i] as number);
		if (d !== 0) return d;
	}
	return a.length - b.length;
}

/** Byte equality. */
export function bytesEqual(a: Bytes, b: Bytes): boolean {
	if (a.length !== b.length) return false;
	for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
	return true;
}

/** Whether `key` lies in `[from, to)`; a missing bound is open. */
export function inRange(key: Bytes, from: Bytes | undefined, to: Bytes | undefined): boolean {
	return (
		(from === undefined || compareBytes(key, from) >= 0) &&
		(to === undefined || compareBytes(key, to) < 0)
	);
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** UTF-8 bytes of a string. */
export function utf8(text: string): Bytes {
	return encoder.encode(text);
}

/** The string of UTF-8 bytes; throws a `TypeError` on invalid UTF-8. */
export function fromUtf8(bytes: Bytes): string {
	return decoder.decode(bytes);
}

/** 4-byte big-endian encoding of an unsigned 32-bit integer. */
export function u32(n: number): Bytes {
	if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff)
		throw new RangeError(`[@vvm/ttlstorage] not a u32: ${n}`);
	const b = new Uint8Array(4);
	new DataView(b.buffer).setUint32(0, n);
	return b;
}

/** Concatenates byte strings. */
export function concatBytes(...parts: readonly Bytes[]): Bytes {
	let len = 0;
	for (const p of parts) len += p.length;
	const out = new Uint8Array(len);
	let off = 0;
	for (const p of parts) {
		out.set(p, off);
		off += p.length;
	}
	return out;
}

const TWO_32 = 0x1_0000_0000;

/**
 * Writes `n` (0..2^32-1) big-endian at `at`: keys built on a hot path write their parts straight
 * into one buffer, with no `DataView` per key.
 *
 * @example
 * ```ts
 * const key = new Uint8Array(8); putU32(key, 0, 3); putU32(key, 4, appId);
 * ```
 */
export function putU32(b: Uint8Array, at: number, n: number): void {
	b[at] = n >>> 24;
	b[at + 1] = (n >>> 16) & 0xff;
	b[at + 2] = (n >>> 8) & 0xff;
	b[at + 3] = n & 0xff;
}

/**
 * Writes a safe non-negative integer as 8 bytes big-endian at `at` (see {@link putU32}).
 *
 * @example
 * ```ts
 * const key = new Uint8Array(8); putU64(key, 0, wsid);
 * ```
 */
export function putU64(b: Uint8Array, at: number, n: number): void {
	putU32(b, at, Math.floor(n / TWO_32));
	putU32(b, at + 4, n >>> 0);
}
