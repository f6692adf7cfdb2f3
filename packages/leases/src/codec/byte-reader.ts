import { corrupt } from "../errors.ts";

const decoder = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads what a `ByteWriter` wrote; any overrun or malformed varint throws `LEASES_CORRUPT_RECORD`
 * naming `what`.
 * @internal
 */
export class ByteReader {
	readonly #buf: Uint8Array;
	readonly #what: string;
	#pos = 0;

	constructor(buf: Uint8Array, what: string) {
		this.#buf = buf;
		this.#what = what;
	}

	get done(): boolean {
		return this.#pos === this.#buf.length;
	}

	byte(): number {
		const b = this.#buf[this.#pos++];
		if (b === undefined) throw corrupt(`${this.#what}: truncated`);
		return b;
	}

	varint(): number {
		let n = 0;
		let scale = 1;
		for (let i = 0; i < 8; i++) {
			const b = this.byte();
			n += (b & 0x7f) * scale;
			if (b < 0x80) {
				if (!Number.isSafeInteger(n)) break;
				return n;
			}
			scale *= 0x80;
		}
		throw corrupt(`${this.#what}: bad varint`);
	}

	string(): string {
		const len = this.varint();
		if (this.#pos + len > this.#buf.length) throw corrupt(`${this.#what}: truncated string`);
		const bytes = this.#buf.subarray(this.#pos, this.#pos + len);
		this.#pos += len;
		try {
			return decoder.decode(bytes);
		} catch {
			throw corrupt(`${this.#what}: invalid UTF-8`);
		}
	}

	/** Throws unless every byte was read. */
	end(): void {
		if (!this.done) throw corrupt(`${this.#what}: ${this.#buf.length - this.#pos} trailing bytes`);
	}
}
