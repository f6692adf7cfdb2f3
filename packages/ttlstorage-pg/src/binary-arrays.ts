// One-dimensional arrays in PostgreSQL's binary wire format (what `array_recv` reads). node-postgres
// sends a Buffer parameter with the binary format code, and a parameter cast in the statement
// (`$3::bytea[]`) is received as that type; so a group's arrays go as a few length-prefixed copies
// of their bytes instead of hex text that the client escapes and the server parses element by
// element (`array_in`, `byteain`). Layout: ndim, has-null flag, element type OID, then per
// dimension its length and lower bound (1), then per element its byte length (-1: NULL) and bytes;
// an empty array has no dimension.

const BYTEA_OID = 17;
const INT4_OID = 23;
const INT8_OID = 20;
const HEADER = 20;
const EMPTY_HEADER = 12;

function header(out: Buffer, length: number, hasNull: boolean, oid: number): number {
	out.writeInt32BE(length === 0 ? 0 : 1, 0);
	out.writeInt32BE(hasNull ? 1 : 0, 4);
	out.writeInt32BE(oid, 8);
	if (length === 0) return EMPTY_HEADER;
	out.writeInt32BE(length, 12);
	out.writeInt32BE(1, 16);
	return HEADER;
}

/** A `bytea[]` parameter; `null` elements are SQL NULLs. @internal */
export function byteaArray(values: ReadonlyArray<Uint8Array | null>): Buffer {
	let size = values.length === 0 ? EMPTY_HEADER : HEADER;
	let hasNull = false;
	for (const v of values) {
		size += 4;
		if (v === null) hasNull = true;
		else size += v.length;
	}
	const out = Buffer.allocUnsafe(size);
	let at = header(out, values.length, hasNull, BYTEA_OID);
	for (const v of values) {
		if (v === null) {
			at = out.writeInt32BE(-1, at);
			continue;
		}
		at = out.writeInt32BE(v.length, at);
		out.set(v, at);
		at += v.length;
	}
	return out;
}

/** An `int4[]` parameter of integers in int4's range (no NULLs). @internal */
export function int4Array(values: readonly number[]): Buffer {
	const out = Buffer.allocUnsafe((values.length === 0 ? EMPTY_HEADER : HEADER) + values.length * 8);
	let at = header(out, values.length, false, INT4_OID);
	for (const v of values) {
		at = out.writeInt32BE(4, at);
		at = out.writeInt32BE(v, at);
	}
	return out;
}

/** An `int8[]` parameter; `null` elements are SQL NULLs. @internal */
export function int8Array(values: ReadonlyArray<bigint | number | null>): Buffer {
	let hasNull = false;
	let size = values.length === 0 ? EMPTY_HEADER : HEADER;
	for (const v of values) {
		if (v === null) {
			hasNull = true;
			size += 4;
		} else size += 12;
	}
	const out = Buffer.allocUnsafe(size);
	let at = header(out, values.length, hasNull, INT8_OID);
	for (const v of values) {
		if (v === null) {
			at = out.writeInt32BE(-1, at);
			continue;
		}
		at = out.writeInt32BE(8, at);
		at = out.writeBigInt64BE(typeof v === "bigint" ? v : BigInt(v), at);
	}
	return out;
}
