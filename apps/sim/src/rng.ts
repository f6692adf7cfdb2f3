/**
 * A small seeded PRNG (a 32-bit multiply-xorshift counter generator): the simulator's only source
 * of randomness. Streams forked with {@link Rng.fork} are independent, so turning one fault off
 * (shrinking) leaves the draws of the other streams where they were.
 */
export class Rng {
	#state: number;

	/** @param seed any integer; equal seeds give equal streams */
	constructor(seed: number) {
		this.#state = (seed ^ 0x9e3779b9) >>> 0;
	}

	/** The next value in `[0, 2^32)`. */
	nextU32(): number {
		this.#state = (this.#state + 0x6d2b79f5) >>> 0;
		let z = this.#state;
		z = Math.imul(z ^ (z >>> 15), z | 1);
		z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
		return (z ^ (z >>> 14)) >>> 0;
	}

	/** A float in `[0, 1)`. */
	next(): number {
		return this.nextU32() / 4_294_967_296;
	}

	/** An integer in `[lo, hi]`. */
	int(lo: number, hi: number): number {
		return lo + Math.floor(this.next() * (hi - lo + 1));
	}

	/** `true` with probability `p`. */
	chance(p: number): boolean {
		return this.next() < p;
	}

	/** One element of a non-empty list. */
	pick<T>(items: readonly T[]): T {
		return items[Math.floor(this.next() * items.length)] as T;
	}

	/** An independent stream named by `salt`. */
	fork(salt: number): Rng {
		return new Rng((this.nextU32() ^ Math.imul(salt + 1, 0x85ebca6b)) >>> 0);
	}
}
