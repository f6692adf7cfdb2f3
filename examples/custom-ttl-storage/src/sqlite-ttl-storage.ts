// A TTL storage driver written by a user: @vvm/ttlstorage's contract over SQLite (node:sqlite,
// built into Node 22.13+). It proves itself with the toolkit's two suites (test/).
//
// Atomic conditional writes: each operation is one SQL statement, and SQLite runs every statement
// atomically, whether one process or several share the file. Expiry: every record keeps its expiry
// time in ms (0 = none); every read and every condition compares it with the injected clock.
import { DatabaseSync } from "node:sqlite";
import type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import {
	closedError,
	expireAtMs,
	remainingSeconds,
	TTLStorageError,
	validateBatch,
	validateDeleteArgs,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
} from "@vvm/ttlstorage";

export interface SqliteTTLStorageOptions {
	/** A file path, or ":memory:". */
	readonly path: string;
	/** Where "now" comes from; the test suites pass a mock clock. Default `Date.now`. */
	readonly clock?: { now(): number };
}

const DRIVER = "sqlite";
const LIVE = "(exp = 0 OR exp > :now)";

class SqliteTTLStorage implements TTLStorage {
	readonly #db: DatabaseSync;
	readonly #clock: { now(): number };
	#closed = false;

	constructor(options: SqliteTTLStorageOptions) {
		this.#db = new DatabaseSync(options.path);
		this.#clock = options.clock ?? Date;
		this.#db.exec(`CREATE TABLE IF NOT EXISTS ttl (
			p BLOB NOT NULL, c BLOB NOT NULL, v BLOB NOT NULL, exp INTEGER NOT NULL,
			PRIMARY KEY (p, c)) WITHOUT ROWID`);
	}

	/** Runs one operation: rejects once closed, and wraps SQLite's errors in the contract's. */
	async #run<T>(operation: string, fn: (now: number) => T): Promise<T> {
		if (this.#closed) throw closedError(DRIVER, operation);
		try {
			return fn(this.#clock.now());
		} catch (cause) {
			const busy = (cause as { errcode?: number }).errcode === 5; // SQLITE_BUSY: nothing written
			throw new TTLStorageError(
				busy ? "TTLSTORAGE_UNAVAILABLE" : "TTLSTORAGE_FAILED",
				String(cause),
				{
					cause,
					driver: DRIVER,
					operation,
				},
			);
		}
	}

	#changes(sql: string, params: Record<string, Bytes | number>): boolean {
		return Number(this.#db.prepare(sql).run(params).changes) === 1;
	}

	insertIfNotExists(p: Bytes, c: Bytes, v: Bytes, ttlSeconds: number): Promise<boolean> {
		validateInsertArgs(p, c, v, ttlSeconds);
		return this.#run("insertIfNotExists", (now) =>
			// An expired record counts as missing: it is overwritten in the same statement.
			this.#changes(
				`INSERT INTO ttl VALUES (:p, :c, :v, :exp) ON CONFLICT (p, c)
				 DO UPDATE SET v = excluded.v, exp = excluded.exp WHERE ttl.exp != 0 AND ttl.exp <= :now`,
				{ p, c, v, exp: expireAtMs(now, ttlSeconds), now },
			),
		);
	}

	compareAndSwap(p: Bytes, c: Bytes, old: Bytes, v: Bytes, ttlSeconds: number): Promise<boolean> {
		validateSwapArgs(p, c, old, v, ttlSeconds);
		return this.#run("compareAndSwap", (now) =>
			this.#changes(
				`UPDATE ttl SET v = :v, exp = :exp WHERE p = :p AND c = :c AND v = :old AND ${LIVE}`,
				{ p, c, old, v, exp: expireAtMs(now, ttlSeconds), now },
			),
		);
	}

	compareAndDelete(p: Bytes, c: Bytes, expected: Bytes): Promise<boolean> {
		validateDeleteArgs(p, c, expected);
		return this.#run("compareAndDelete", (now) =>
			this.#changes(`DELETE FROM ttl WHERE p = :p AND c = :c AND v = :expected AND ${LIVE}`, {
				p,
				c,
				expected,
				now,
			}),
		);
	}

	get(p: Bytes, c: Bytes): Promise<Bytes | undefined> {
		validateKey(p, c);
		return this.#run("get", (now) => {
			const row = this.#db
				.prepare(`SELECT v FROM ttl WHERE p = :p AND c = :c AND ${LIVE}`)
				.get({ p, c, now });
			return row === undefined ? undefined : (row.v as Uint8Array);
		});
	}

	put(p: Bytes, c: Bytes, v: Bytes, ttlSeconds = 0): Promise<void> {
		validateInsertArgs(p, c, v, ttlSeconds);
		return this.putBatch([{ pKey: p, cCols: c, value: v, ttlSeconds }]);
	}

	putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		return this.#run("putBatch", (now) => {
			const upsert = this.#db.prepare(
				"INSERT INTO ttl VALUES (:p, :c, :v, :exp) ON CONFLICT (p, c) DO UPDATE SET v = excluded.v, exp = excluded.exp",
			);
			this.#db.exec("BEGIN");
			try {
				for (const { pKey: p, cCols: c, value: v, ttlSeconds = 0 } of items) {
					upsert.run({ p, c, v, exp: expireAtMs(now, ttlSeconds) });
				}
				this.#db.exec("COMMIT");
			} catch (error) {
				this.#db.exec("ROLLBACK");
				throw error;
			}
		});
	}

	read(p: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(p, new Uint8Array());
		validateRange(range.from, range.to);
		const query = (now: number) =>
			// BLOBs compare with memcmp: the contract's byte order; `from` inclusive, `to` exclusive.
			this.#db
				.prepare(
					`SELECT c, v FROM ttl WHERE p = :p AND ${LIVE} AND c >= :from
					 ${range.to === undefined ? "" : "AND c < :to"} ORDER BY c`,
				)
				.all({ p, now, from: range.from ?? new Uint8Array(), ...(range.to && { to: range.to }) });
		// Queried when iterated, not when called: a read nobody iterates does nothing.
		const run = () => this.#run("read", query);
		return (async function* () {
			for (const row of await run()) {
				yield { cCols: row.c as Uint8Array, value: row.v as Uint8Array };
			}
		})();
	}

	queryTTL(p: Bytes, c: Bytes): Promise<number | undefined> {
		validateKey(p, c);
		return this.#run("queryTTL", (now) => {
			const row = this.#db.prepare("SELECT exp FROM ttl WHERE p = :p AND c = :c").get({ p, c });
			return row === undefined ? undefined : remainingSeconds(Number(row.exp), now);
		});
	}

	async close(): Promise<void> {
		if (this.#closed) return;
		this.#closed = true;
		this.#db.close();
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/** The driver's factory: what users of your driver call. */
export function createSqliteTTLStorage(options: SqliteTTLStorageOptions): TTLStorage {
	return new SqliteTTLStorage(options);
}
