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
}
