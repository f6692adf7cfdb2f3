// A pool whose statements go through a function of the test's: to record them, hold them, or
// answer some its own way.
import type { PgPool, PgPoolClient, PgQueryConfig } from "../src/index.ts";

type Query = PgPoolClient["query"];

/**
 * `inner` with every statement going through `query` (which runs it with `run`, or not). One
 * wrapper per connection: the driver guards each client it is handed once (an `error` listener).
 */
export function wrappedPool(
	inner: PgPool,
	query: (config: PgQueryConfig, run: () => ReturnType<Query>) => ReturnType<Query>,
): PgPool {
	const wrappers = new WeakMap<PgPoolClient, PgPoolClient>();
	return {
		async connect(): Promise<PgPoolClient> {
			const client = await inner.connect();
			let wrapper = wrappers.get(client);
			if (wrapper === undefined) {
				wrapper = {
					query: (config: PgQueryConfig) => query(config, () => client.query(config)),
					release: (destroy) => client.release(destroy),
					on: (event, listener) => client.on(event, listener),
					removeListener: (event, listener) => client.removeListener(event, listener),
				};
				wrappers.set(client, wrapper);
			}
			return wrapper;
		},
	};
}
