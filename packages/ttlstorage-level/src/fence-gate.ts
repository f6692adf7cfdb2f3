/**
 * A gate per fence scope: fenced writes of a scope pass it together (shared), `raiseFence` alone
 * (exclusive). So once a raise resolves, no write checked against the old epoch is still on its way
 * to LevelDB (whose concurrent batches may land in any order), and every later write sees the new
 * epoch. A write of several scopes enters their gates in sorted order, so gates never deadlock.
 * @internal
 */
export class FenceGate {
	readonly #scopes = new Map<string, ScopeState>();

	/** Runs a fenced write of `scopes` (distinct): `check` (inside the gates), then `write`. */
	shared<T>(
		scopes: readonly string[],
		check: () => Promise<void> | void,
		write: () => Promise<T>,
	): Promise<T> {
		// The common case: one scope, no raise under way, its epoch known: no extra promise hops.
		const only = scopes.length === 1 ? (scopes[0] as string) : undefined;
		const s = only === undefined ? undefined : this.#scopes.get(only);
		if (only === undefined || (s !== undefined && s.raising !== undefined))
			return this.#sharedSlow(scopes, check, write);
		const entered = s ?? this.#state(only);
		entered.writers++;
		const leave = (): void => {
			entered.writers--;
			if (entered.writers === 0) entered.drained?.();
			this.#forget(only, entered);
		};
		let written: Promise<T>;
		try {
			const checked = check();
			written = checked === undefined ? write() : checked.then(write);
		} catch (error) {
			leave();
			return Promise.reject(error);
		}
		return written.finally(leave);
	}

	async #sharedSlow<T>(
		scopes: readonly string[],
		check: () => Promise<void> | void,
		write: () => Promise<T>,
	): Promise<T> {
		const held: Array<[string, ScopeState]> = [];
		try {
			// The common case, no raise under way: enter every gate at once, without waiting.
			const sorted = scopes.length === 1 ? scopes : [...scopes].sort();
			for (const scope of sorted) {
				const s = this.#scopes.get(scope);
				const entered = s !== undefined && s.raising === undefined ? s : await this.#enter(scope);
				entered.writers++;
				held.push([scope, entered]);
			}
			const checked = check();
			if (checked !== undefined) await checked;
			return await write();
		} finally {
			for (const [scope, s] of held) {
				s.writers--;
				if (s.writers === 0) s.drained?.();
				this.#forget(scope, s);
			}
		}
	}

	/** Runs `raise` alone: waits for the scope's writes in flight and holds new ones back. */
	async exclusive<T>(scope: string, raise: () => Promise<T>): Promise<T> {
		const s = await this.#enter(scope);
		let done!: () => void;
		s.raising = new Promise<void>((resolve) => {
			done = resolve;
		});
		try {
			if (s.writers > 0)
				await new Promise<void>((resolve) => {
					s.drained = resolve;
				});
			s.drained = undefined;
			return await raise();
		} finally {
			s.raising = undefined;
			done();
			this.#forget(scope, s);
		}
	}

	/** The scope's state once no raise is running on it. */
	async #enter(scope: string): Promise<ScopeState> {
		for (;;) {
			let s = this.#scopes.get(scope);
			if (s === undefined) {
				s = { writers: 0, raising: undefined, drained: undefined };
				this.#scopes.set(scope, s);
			}
			if (s.raising === undefined) return s;
			await s.raising;
		}
	}

	#state(scope: string): ScopeState {
		const s: ScopeState = { writers: 0, raising: undefined, drained: undefined };
		this.#scopes.set(scope, s);
		return s;
	}

	/** States stay: there is one per fenced scope this process writes (a partition), few. */
	#forget(_scope: string, _s: ScopeState): void {}
}

interface ScopeState {
	writers: number;
	raising: Promise<void> | undefined;
	drained: (() => void) | undefined;
}
