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
		// The common case, no raise under way on any of them: enter every gate at once, without a
		// promise hop (a raise's exclusive turn waits for `writers` to drain).
		const entered: ScopeState[] = [];
		for (const scope of scopes) {
			const s = this.#scopes.get(scope);
			if (s !== undefined && s.raising !== undefined) return this.#sharedSlow(scopes, check, write);
			entered.push(s ?? this.#state(scope));
		}
		for (const s of entered) s.writers++;
		const leave = (): void => {
			for (const s of entered) {
				s.writers--;
				if (s.writers === 0) s.drained?.();
			}
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
		const held: ScopeState[] = [];
		try {
			// A raise is under way on one of them: enter in sorted order, waiting where one runs.
			for (const scope of [...scopes].sort()) {
				const entered = await this.#enter(scope);
				entered.writers++;
				held.push(entered);
			}
			const checked = check();
			if (checked !== undefined) await checked;
			return await write();
		} finally {
			for (const s of held) {
				s.writers--;
				if (s.writers === 0) s.drained?.();
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
		}
	}

	/** The scope's state once no raise is running on it. */
	async #enter(scope: string): Promise<ScopeState> {
		for (;;) {
			const s = this.#scopes.get(scope) ?? this.#state(scope);
			if (s.raising === undefined) return s;
			await s.raising;
		}
	}

	/** A new scope's state. States stay: one per fenced scope this process writes (a partition). */
	#state(scope: string): ScopeState {
		const s: ScopeState = { writers: 0, raising: undefined, drained: undefined };
		this.#scopes.set(scope, s);
		return s;
	}
}

interface ScopeState {
	writers: number;
	raising: Promise<void> | undefined;
	drained: (() => void) | undefined;
}
