// A pool whose next statement matching a pattern waits (before it is sent) until released: a
// request held on its way, as a congested link or a stalled process would hold it.
import type { PgPool } from "../src/index.ts";
import { wrappedPool } from "./wrapped-pool.ts";

interface Hold {
	/** Resolves once the armed statement is held. */
	readonly reached: Promise<void>;
	/** Lets it go on to the server. */
	release(): void;
}

export interface HeldPool {
	readonly pool: PgPool;
	/** Holds the next statement whose SQL matches `pattern`. */
	arm(pattern: RegExp): Hold;
}

export function holdingPool(inner: PgPool): HeldPool {
	let armed: { pattern: RegExp; reached: () => void; gate: Promise<void> } | undefined;
	const pool = wrappedPool(inner, async (config, run) => {
		const hold = armed;
		if (hold?.pattern.test(config.text)) {
			armed = undefined;
			hold.reached();
			await hold.gate;
		}
		return run();
	});
	return {
		pool,
		arm(pattern) {
			let release!: () => void;
			const gate = new Promise<void>((r) => {
				release = r;
			});
			let reached!: () => void;
			const atGate = new Promise<void>((r) => {
				reached = r;
			});
			armed = { pattern, reached, gate };
			return { reached: atGate, release };
		},
	};
}
