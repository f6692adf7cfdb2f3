// Reads a group statement's array parameter back (PostgreSQL's binary array format, as
// src/binary-arrays.ts writes it), so tests can see what a statement carried.

/** The elements of a one-dimensional binary `int4[]`, `int8[]` or `bytea[]` parameter. */
export function readArray(param: unknown): Array<number | bigint | Buffer | null> {
	if (!Buffer.isBuffer(param)) throw new TypeError("not a binary array parameter");
	const ndim = param.readInt32BE(0);
	const oid = param.readInt32BE(8);
	if (ndim === 0) return [];
	const length = param.readInt32BE(12);
	const out: Array<number | bigint | Buffer | null> = [];
	let at = 20;
	for (let i = 0; i < length; i++) {
		const size = param.readInt32BE(at);
		at += 4;
		if (size === -1) {
			out.push(null);
			continue;
		}
		if (oid === 23) out.push(param.readInt32BE(at));
		else if (oid === 20) out.push(param.readBigInt64BE(at));
		else out.push(param.subarray(at, at + size));
		at += size;
	}
	return out;
}
