const encoder = new TextEncoder();

/**
 * A growable byte buffer with LEB128 varints: the records of this package are written with it.
 * @internal
 */
export class ByteWriter {
	#buf: Uint8Array;
	#len = 0;

	constructor(initialCapacity = 256) {
		this.#buf = new Uint8Array(initialCapacity);
	}

	get length(): number {
		return this.#len;
	}

	#ensure(extra: number): void {
		if (this.#len + extra <= this.#buf.length) return;
		let cap = this.#buf.length * 2;
		while (cap < this.#len + extra) cap *= 2;
		const next = new Uint8Array(cap);
		next.set(this.#buf.subarray(0, this.#len));
		this.#buf = next;
	}

	byte(b: number): void {
		this.#ensure(1);
		this.#buf[this.#len++] = b & 0xff;
	}

	/** Unsigned LEB128 of a safe integer >= 0 (at most 8 bytes). */
	varint(n: number): void {
		if (!Number.isSafeInteger(n) || n < 0)
			throw new RangeError(`[@vvm/leases] cannot encode ${n} as an unsigned varint`);
		this.#ensure(8);
		while (n >= 0x80) {
			this.#buf[this.#len++] = (n % 0x80) | 0x80;
			n = Math.floor(n / 0x80);
		}
		this.#buf[this.#len++] = n;
	}

	/** A varint byte length, then the UTF-8 bytes. */
	string(s: string): void {
		const bytes = encoder.encode(s);
		this.varint(bytes.length);
		this.#ensure(bytes.length);
		this.#buf.set(bytes, this.#len);
		this.#len += bytes.length;
	}

	/** A copy of the bytes written so far. */
	finish(): Uint8Array {
		return this.#buf.slice(0, this.#len);
	}
}

/** Bytes of `n` as an unsigned varint. @internal */
export function varintSize(n: number): number {
	let size = 1;
	while (n >= 0x80) {
		n = Math.floor(n / 0x80);
		size++;
	}
	return size;
}

/** UTF-8 byte length of `s`. @internal */
export function utf8Length(s: string): number {
	return Buffer.byteLength(s, "utf8");
}
