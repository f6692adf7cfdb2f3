import { TTLStorageError } from "@vvm/ttlstorage";
import { DRIVER_NAME } from "./errors.ts";

/**
 * The CQL the driver runs against `<keyspace>.<table>`, every one prepared, TTL as a bind marker.
 *
 * Every write is an `UPDATE`, never an `INSERT`. An `INSERT` also writes a row marker with its own
 * TTL; a later `UPDATE ... USING TTL` renews only the value cell. After an `INSERT` without TTL (or
 * with a longer one) and a swap with a shorter TTL, the value expires but the row marker lives on:
 * the row then reads as `value = null` and `INSERT ... IF NOT EXISTS` refuses to insert until the
 * marker expires. voedger's driver has this bug. With `UPDATE` only, a row exists exactly while its
 * value cell lives, and `IF value = null` is true for a missing or expired row.
 */
export interface CassandraStatements {
	/** Params: ttl, value, fence stamp (0: unfenced), pKey, cCols. Conditional. */
	readonly insertIfNotExists: string;
	/** Params: ttl, newValue, fence stamp (0: unfenced), pKey, cCols, oldValue. Conditional. */
	readonly compareAndSwap: string;
	/**
	 * Params: ttl, newValue, stamp, pKey, cCols, oldValue, stamp. Conditional: a fenced swap, over a
	 * record last written under a lower stamp or unfenced (stamp 0).
	 */
	readonly compareAndSwapFenced: string;
	/**
	 * Params: ttl, newValue, stamp, pKey, cCols, oldValue. Conditional: a fenced swap over a record
	 * without a stamp (written before the `fence_stamp` column existed). CQL has no `OR`, and
	 * `fence_stamp < ?` is false against a missing cell.
	 */
	readonly compareAndSwapUnstamped: string;
	/** Params: pKey, cCols, expectedValue. Conditional. */
	readonly compareAndDelete: string;
	/** Params: pKey, cCols, expectedValue, stamp. Conditional: a fenced delete. */
	readonly compareAndDeleteFenced: string;
	/** Params: pKey, cCols, expectedValue. Conditional: a fenced delete of a record without a stamp. */
	readonly compareAndDeleteUnstamped: string;
	/** Params: pKey, cCols. */
	readonly get: string;
	/**
	 * Params: ttl, value, pKey, cCols. A plain write with the client's timestamp: not used by the
	 * driver (every write is a lightweight transaction); kept for benchmarks and tools.
	 */
	readonly put: string;
	/**
	 * Params: ttl, value, stamp, pKey, cCols, stamp. Conditional: a fenced put, applied over a
	 * record last written under a lower stamp or unfenced (stamp 0).
	 */
	readonly putFenced: string;
	/**
	 * Params: ttl, value, stamp, pKey, cCols. Conditional: a fenced put of a record without a stamp
	 * (absent, or written before the `fence_stamp` column existed).
	 */
	readonly putUnstamped: string;
	/**
	 * Params: ttl, value, 0, pKey, cCols, value. Conditional: the first half of an unfenced `put`,
	 * which is a lightweight transaction (applied unless the record holds `value` already; then
	 * `compareAndSwap` from `value` to `value` renews its TTL).
	 */
	readonly putIfChanged: string;
	/** Params: pKey, cCols. Columns `value`, `remaining`. */
	readonly queryTTL: string;
	/** Params: pKey, then `from` and/or `to` as named. Columns `c_col`, `value`. */
	readonly read: {
		readonly all: string;
		readonly from: string;
		readonly to: string;
		readonly fromTo: string;
	};
}

/**
 * The column holding the stamp of the fenced write that wrote a record (`bigint`, µs; 0 for an
 * unfenced write; missing on records written before it existed). A fenced write is a lightweight
 * transaction conditional on it being below its own stamp: see the README, "Fenced writes".
 */
export const FENCE_STAMP_COLUMN = "fence_stamp";

/**
 * Builds the statements for an already validated keyspace and table.
 *
 * @example
 * ```ts
 * cassandraStatements("sysvvm", "ttl_values").compareAndSwap;
 * // "UPDATE sysvvm.ttl_values USING TTL ? SET value = ?, fence_stamp = ? WHERE p_key = ? AND c_col = ? IF value = ?"
 * ```
 */
export function cassandraStatements(keyspace: string, table: string): CassandraStatements {
	const t = `${keyspace}.${table}`;
	const key = "WHERE p_key = ? AND c_col = ?";
	const select = `SELECT c_col, value FROM ${t} WHERE p_key = ?`;
	const set = `SET value = ?, ${FENCE_STAMP_COLUMN} = ?`;
	const below = `${FENCE_STAMP_COLUMN} < ?`;
	const unstamped = `${FENCE_STAMP_COLUMN} = null`;
	return {
		insertIfNotExists: `UPDATE ${t} USING TTL ? ${set} ${key} IF value = null`,
		compareAndSwap: `UPDATE ${t} USING TTL ? ${set} ${key} IF value = ?`,
		compareAndSwapFenced: `UPDATE ${t} USING TTL ? ${set} ${key} IF value = ? AND ${below}`,
		compareAndSwapUnstamped: `UPDATE ${t} USING TTL ? ${set} ${key} IF value = ? AND ${unstamped}`,
		compareAndDelete: `DELETE FROM ${t} ${key} IF value = ?`,
		compareAndDeleteFenced: `DELETE FROM ${t} ${key} IF value = ? AND ${below}`,
		compareAndDeleteUnstamped: `DELETE FROM ${t} ${key} IF value = ? AND ${unstamped}`,
		get: `SELECT value FROM ${t} ${key}`,
		put: `UPDATE ${t} USING TTL ? SET value = ? ${key}`,
		putFenced: `UPDATE ${t} USING TTL ? ${set} ${key} IF ${below}`,
		putUnstamped: `UPDATE ${t} USING TTL ? ${set} ${key} IF ${unstamped}`,
		putIfChanged: `UPDATE ${t} USING TTL ? ${set} ${key} IF value != ?`,
		queryTTL: `SELECT value, TTL(value) AS remaining FROM ${t} ${key}`,
		read: {
			all: select,
			from: `${select} AND c_col >= ?`,
			to: `${select} AND c_col < ?`,
			fromTo: `${select} AND c_col >= ? AND c_col < ?`,
		},
	};
}

/**
 * Cassandra removes an expiring cell on a whole second of the server clock, so `USING TTL T` lives
 * between `T - 1` and `T` seconds. The driver writes `T + 1`, so a record never expires before its
 * TTL: it lives between `T` and `T + 1` seconds. 0 stays 0 (no TTL). This departs from the
 * contract's `now >= expireAt` on purpose (late, never early); see the README.
 */
export const TTL_GRACE_SECONDS = 1;

/** The server TTL for a contract TTL (0 = none). */
export function serverTTL(ttlSeconds: number): number {
	return ttlSeconds === 0 ? 0 : ttlSeconds + TTL_GRACE_SECONDS;
}

/** The contract's remaining seconds for the server's `TTL(value)`: null = no TTL = 0. */
export function remainingFromServer(remaining: unknown): number {
	if (remaining === null || remaining === undefined) return 0;
	const n = Number(remaining);
	if (!Number.isInteger(n) || n < 0) {
		throw new TTLStorageError("TTLSTORAGE_FAILED", `unexpected TTL(value) ${String(remaining)}`, {
			driver: DRIVER_NAME,
			operation: "queryTTL",
		});
	}
	return Math.max(1, n - TTL_GRACE_SECONDS);
}

/**
 * Reads `[applied]` from the first row of a lightweight transaction's result, strictly: a missing
 * row or a non-boolean column is an error (`TTLSTORAGE_OUTCOME_UNKNOWN`: the statement ran), never a guess. (`ResultSet.wasApplied()`
 * of `cassandra-driver` returns `true` when there is no row, which would turn a surprise into
 * "you are the leader".)
 *
 * @example
 * ```ts
 * const rs = await client.execute(cql, params, { prepare: true });
 * const swapped = parseApplied(rs.rows, "compareAndSwap");
 * ```
 */
export function parseApplied(rows: readonly unknown[] | undefined, operation: string): boolean {
	const row = rows?.[0];
	const applied =
		typeof row === "object" && row !== null
			? (row as Record<string, unknown>)["[applied]"]
			: undefined;
	if (typeof applied !== "boolean") {
		// It ran: whatever this result is, the write may have been applied.
		throw new TTLStorageError(
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			`the lightweight transaction returned no boolean [applied] column (got ${rows === undefined ? "no rows" : `${rows.length} row(s)`})`,
			{ driver: DRIVER_NAME, operation },
		);
	}
	return applied;
}

/**
 * The `fence_stamp` a lightweight transaction that was not applied reports (Cassandra returns the
 * current values of the columns of its condition): `undefined` when the record is missing or has
 * no stamp (a row without the column, or `null`). A value that is no `bigint` is an error
 * (`TTLSTORAGE_FAILED`).
 */
export function storedFenceStamp(
	rows: readonly unknown[] | undefined,
	operation: string,
): bigint | undefined {
	const row = rows?.[0];
	const stamp =
		typeof row === "object" && row !== null
			? (row as Record<string, unknown>)[FENCE_STAMP_COLUMN]
			: undefined;
	if (stamp === undefined || stamp === null) return undefined;
	if (
		typeof stamp === "object" &&
		typeof (stamp as { toString: unknown }).toString === "function"
	) {
		const text = String(stamp);
		if (/^-?\d+$/.test(text)) return BigInt(text);
	}
	throw new TTLStorageError(
		"TTLSTORAGE_FAILED",
		`the lightweight transaction returned a ${FENCE_STAMP_COLUMN} that is no bigint: ${String(stamp)}`,
		{ driver: DRIVER_NAME, operation },
	);
}
