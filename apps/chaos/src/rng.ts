/**
 * A small seeded pseudo-random generator (mulberry32 over a 32-bit state derived from the seed
 * text): the same seed gives the same sequence of decisions. Each concern of a run (faults,
 * restarts) takes its own stream (`fork`), so one consumer's draws never shift another's.
 */
export interface Rng {
	/** Uniform in [0, 1). */
	next(): number;
	/** Uniform in [min, max). */
	between(min: number, max: number): number;
	/** Integer uniform in [min, max]. */
	int(min: number, max: number): number;
	/** `true` with probability `p`. */
	chance(p: number): boolean;
	/** One element, uniformly; `undefined` for an empty list. */
	pick<T>(items: readonly T[]): T | undefined;
	/** A key drawn with probability proportional to its (non-negative) weight. */
	weighted<K extends string>(weights: Readonly<Record<K, number>>): K | undefined;
	/** Exponentially distributed with the given mean (time between independent events). */
	exponential(mean: number): number;
	/** An independent stream named `name`, derived from this one's seed. */
	fork(name: string): Rng;
}

/** FNV-1a of the text: a 32-bit state from any seed string. */
function hash32(text: string): number {
	let h = 0x811c9dc5;
	for (let i = 0; i < text.length; i++) {
		h ^= text.charCodeAt(i);
		h = Math.imul(h, 0x01000193) >>> 0;
	}
	return h >>> 0;
}

/**
 * Creates a generator for `seed`.
 *
 * @example
 * ```ts
 * const rng = createRng("42");
 * rng.int(1, 6); // the same number on every run with seed "42"
 * ```
 */
export function createRng(seed: string): Rng {
	let state = hash32(seed) || 1;
	const next = (): number => {
		state = (state + 0x6d2b79f5) >>> 0;
		let t = state;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
	};
	const rng: Rng = {
		next,
		between: (min, max) => min + (max - min) * next(),
		int: (min, max) => min + Math.floor(next() * (max - min + 1)),
		chance: (p) => next() < p,
		pick: (items) => (items.length === 0 ? undefined : items[Math.floor(next() * items.length)]),
		weighted(weights) {
			const entries = (Object.entries(weights) as [keyof typeof weights, number][]).filter(
				([, w]) => w > 0,
			);
			const total = entries.reduce((sum, [, w]) => sum + w, 0);
			if (total <= 0) return undefined;
			let x = next() * total;
			for (const [key, w] of entries) {
				x -= w;
				if (x < 0) return key;
			}
			return entries.at(-1)?.[0];
		},
		exponential: (mean) => -mean * Math.log(1 - next()),
		fork: (name) => createRng(`${seed}/${name}`),
	};
	return rng;
}
