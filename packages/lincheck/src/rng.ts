// A small seeded generator (mulberry32): the same seed gives the same choices.

/** A seeded source of choices. */
export interface Rng {
	/** In [0, 1). */
	next(): number;
	/** An integer in [0, n). */
	int(n: number): number;
	chance(p: number): boolean;
	pick<T>(items: readonly T[]): T;
	shuffle<T>(items: readonly T[]): T[];
	/** A generator of its own, seeded from this one. */
	fork(): Rng;
}

/**
 * A generator seeded with `seed`.
 *
 * @example
 * ```ts
 * const r = createRng(7);
 * const key = r.pick([0, 1, 2]);
 * ```
 */
export function createRng(seed: number): Rng {
	let a = seed >>> 0;
	const next = (): number => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
	const rng: Rng = {
		next,
		int: (n) => Math.floor(next() * n),
		chance: (p) => next() < p,
		pick: (items) => items[Math.floor(next() * items.length)] as (typeof items)[number],
		shuffle: (items) => {
			const out = [...items];
			for (let i = out.length - 1; i > 0; i--) {
				const j = Math.floor(next() * (i + 1));
				[out[i], out[j]] = [out[j] as (typeof out)[number], out[i] as (typeof out)[number]];
			}
			return out;
		},
		fork: () => createRng(Math.floor(next() * 4294967296)),
	};
	return rng;
}
