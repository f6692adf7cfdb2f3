/**
 * Per-key async mutex: callers of the same key run one after another, in call order; the map entry
 * is removed when a key goes idle, so memory is bounded by the keys in use.
 * @internal
 */
export class KeyLock {
	readonly #tails = new Map<string, Promise<void>>();

	/** Number of keys with a holder or waiters (for tests). */
	get size(): number {
		return this.#tails.size;
	}

	/** Waits for the key and returns its release function (call it exactly once). */
	async acquire(key: string): Promise<() => void> {
		const previous = this.#tails.get(key);
		let release!: () => void;
		const mine = new Promise<void>((resolve) => {
			release = resolve;
		});
		const tail = previous === undefined ? mine : previous.then(() => mine);
		this.#tails.set(key, tail);
		if (previous !== undefined) await previous;
		let released = false;
		return () => {
			if (released) return;
			released = true;
			release();
			if (this.#tails.get(key) === tail) this.#tails.delete(key);
		};
	}

	/**
	 * Acquires several keys in sorted order (so two multi-key holders can never deadlock) and returns
	 * one function releasing them all.
	 */
	async acquireAll(keys: Iterable<string>): Promise<() => void> {
		const sorted = [...new Set(keys)].sort();
		const releases: Array<() => void> = [];
		for (const key of sorted) releases.push(await this.acquire(key));
		return () => {
			for (const release of releases) release();
		};
	}

	/** Runs `fn` holding `key`. */
	async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
		const release = await this.acquire(key);
		try {
			return await fn();
		} finally {
			release();
		}
	}
}
