/**
 * A gate per fence scope: fenced writes of a scope pass it together (shared), `raiseFence` alone
 * (exclusive). So once a raise resolves, no write checked against the old epoch is still on its way
 * to LevelDB (whose concurrent batches may land in any order), and every later write sees the new
 * epoch. A write of several scopes enters their gates in sorted order, so gates never deadlock.
 * @internal
 */
export class FenceGate {
	readonly #scopes = new Map<string, ScopeState>();

	/** Runs a fenced write of `scopes`: `check` (inside the gates), then `write`. */
	async shared<T>(
		scopes: readonly string[],
		check: () => Promise<void> | void,
		write: () => Promise<T>,
	): Promise<T> {
		const held: Array<[string, ScopeState]> = [];
		try {
			for (const scope of [...new Set(scopes)].sort()) {
				const s = await this.#enter(scope);
				s.writers++;
				held.push([scope, s]);
			}
			await check();
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

	#forget(scope: string, s: ScopeState): void {
		if (s.writers === 0 && s.raising === undefined && this.#scopes.get(scope) === s)
			this.#scopes.delete(scope);
	}
}

interface ScopeState {
	writers: number;
	raising: Promise<void> | undefined;
	drained: (() => void) | undefined;
}
