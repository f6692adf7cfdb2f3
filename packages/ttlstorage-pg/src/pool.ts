/** One result of {@link PgPoolClient.query}: what the driver reads of node-postgres' `QueryResult`. */
export interface PgQueryResult {
	readonly rows: ReadonlyArray<Record<string, unknown>>;
	readonly rowCount: number | null;
}

/** A statement as node-postgres takes it: `name` makes it a prepared statement of the connection. */
export interface PgQueryConfig {
	readonly text: string;
	readonly values?: unknown[];
	readonly name?: string;
}

/**
 * A connection checked out of a {@link PgPool}: node-postgres' `PoolClient`, typed by the methods
 * the driver calls on it.
 */
export interface PgPoolClient {
	query(config: PgQueryConfig): Promise<PgQueryResult>;
	/** Back to the pool; with an error (or `true`) the pool closes the connection instead. */
	release(destroy?: Error | boolean): void;
	/**
	 * node-postgres emits `error` on a connection that breaks, even while a query on it fails with
	 * the same error; the driver listens while it holds the connection (the pool does while idle).
	 */
	on(event: "error", listener: (error: Error) => void): unknown;
	removeListener(event: "error", listener: (error: Error) => void): unknown;
}

/**
 * A node-postgres `Pool` (`new Pool(...)` from `pg` 8), typed by what the driver calls on it, so
 * this package needs neither `pg` nor `@types/pg` at run time or for its types: any `pg.Pool`
 * fits.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * const pool: PgPool = new pg.Pool();
 * ```
 */
export interface PgPool {
	connect(): Promise<PgPoolClient>;
	/**
	 * Callers waiting for a connection (node-postgres' `waitingCount`). While any wait, a statement
	 * that answered gives its connection back to the pool instead of handing it on.
	 */
	readonly waitingCount?: number;
	/**
	 * node-postgres' `acquire` event, emitted as a connection is handed out. The driver listens so
	 * a connection has an `error` listener before anything can be emitted on it (see
	 * `guardConnections`); a pool without `on` works too, with that short gap.
	 */
	on?(event: "acquire", listener: (client: PgPoolClient) => void): unknown;
}

const guarded = new WeakSet<PgPoolClient>();
const guardedPools = new WeakSet<PgPool>();
/** Connections that emitted `error` (see {@link isBroken}). */
const broken = new WeakSet<PgPoolClient>();

/**
 * Gives a connection one `error` listener for good. node-postgres emits `error` on a connection
 * that breaks even while a query on it fails with the same error (the driver sees the query's),
 * and a `FATAL` the server sends right behind a new connection's handshake (pg_terminate_backend,
 * a shutdown) is emitted while the client reads that same chunk, after the pool handed the
 * connection over and before the driver's code runs: with no listener the process would crash
 * (seen under load in CI). The pool's own listener still reports errors of idle connections.
 */
export function guardConnection(client: PgPoolClient): void {
	if (guarded.has(client)) return;
	guarded.add(client);
	client.on("error", () => broken.add(client));
}

/**
 * Whether `client` emitted `error` while the driver held it (e.g. a `FATAL` read in the same chunk
 * as the answer it just gave): it is not handed on to the next statement, but back to the pool,
 * which drops it.
 */
export function isBroken(client: PgPoolClient): boolean {
	return broken.has(client);
}

/** Guards every connection `pool` hands out, at its `acquire` event (once per pool). */
export function guardConnections(pool: PgPool): void {
	if (guardedPools.has(pool) || pool.on === undefined) return;
	guardedPools.add(pool);
	pool.on("acquire", guardConnection);
}
