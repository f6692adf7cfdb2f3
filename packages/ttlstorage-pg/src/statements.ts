import { createHash } from "node:crypto";

/**
 * A compiled statement: SQL with `$n` markers, the parameter name of each marker, and the name it
 * is prepared under on each connection.
 * @internal
 */
export interface Statement {
	readonly name: string;
	readonly text: string;
	readonly params: readonly string[];
}

/**
 * The now of every expiry comparison, in ms since the Unix epoch, once per statement:
 * `statement_timestamp()` is the time the server received the statement (stable within it), so a
 * record's expiry is `server time at its write + TTL` whatever the client's clock says.
 */
const DATABASE_NOW = "floor(extract(epoch FROM statement_timestamp()) * 1000)::int8";

/**
 * Compiles `template`: `:name` becomes `$n` (one marker per distinct name, `::` casts are left
 * alone) and `{now}` the now of the statement: the database's clock, or the `:now` parameter when
 * the storage runs on an injected test clock.
 */
function compile(kind: string, template: string, injectedNow: boolean): Statement {
	const params: string[] = [];
	const text = template
		.replaceAll("{now}", injectedNow ? ":now::int8" : DATABASE_NOW)
		.replace(/(?<![:\w]):([a-z_]+)/g, (_, name: string) => {
			let i = params.indexOf(name);
			if (i === -1) i = params.push(name) - 1;
			return `$${i + 1}`;
		})
		.replace(/\s+/g, " ")
		.trim();
	const hash = createHash("sha1").update(text).digest("hex").slice(0, 12);
	return { name: `vvm_ttl_${kind}_${hash}`, text, params };
}

/** Lower bound of a page of `read`: none, `>= from`, or `> the last cCols of the page before`. */
export type LowerBound = "none" | "from" | "after";

/** Every statement of one storage (one table pair, one clock mode). @internal */
export interface PgStatements {
	readonly insertIfNotExists: Statement;
	readonly compareAndSwap: Statement;
	readonly compareAndDelete: Statement;
	readonly get: Statement;
	readonly queryTTL: Statement;
	readonly put: Statement;
	readonly putBatch: Statement;
	readonly fenced: {
		readonly insertIfNotExists: Statement;
		readonly compareAndSwap: Statement;
		readonly compareAndDelete: Statement;
		readonly putBatch: Statement;
	};
	readonly createFences: Statement;
	readonly raiseTo: Statement;
	readonly raiseNext: Statement;
	readonly fenceEpoch: Statement;
	readonly sweep: Statement;
	read(lower: LowerBound, upper: boolean): Statement;
}

const quote = (id: string): string => `"${id}"`;

/**
 * The SQL of a storage over `schema.table` (records) and `schema.table_fences` (fences). Names are
 * validated by the caller. `injectedNow`: compare expiry with a `:now` parameter (a test clock)
 * instead of the database's clock.
 * @internal
 */
export function pgStatements(schema: string, table: string, injectedNow: boolean): PgStatements {
	const T = `${quote(schema)}.${quote(table)}`;
	const F = `${quote(schema)}.${quote(`${table}_fences`)}`;
	const c = (kind: string, template: string) => compile(kind, template, injectedNow);
	const live = "(t.expire_at IS NULL OR t.expire_at > {now})";
	const expired = "(t.expire_at IS NOT NULL AND t.expire_at <= {now})";
	const expiry = "CASE WHEN :ttl::int8 = 0 THEN NULL ELSE {now} + :ttl::int8 * 1000 END";
	// Of two fenced writes of one record, the one with the higher (epoch, stamp) stands (F2).
	const ordered = "(t.f_epoch IS NULL OR (t.f_epoch, t.f_seq) <= (:fe::int8, :fs::int8))";
	// The fence rows of the write's scopes, share-locked until the statement commits: a raise
	// (an exclusive row lock) waits for it, and it sees a raise that committed before (in READ
	// COMMITTED a locking read follows the row to its newest version).
	const fence = `WITH fence AS MATERIALIZED (
			SELECT f.scope, f.epoch FROM ${F} AS f WHERE f.scope = ANY(:scopes::bytea[]) FOR SHARE
		), allowed AS MATERIALIZED (
			SELECT count(*) = cardinality(:scopes::bytea[]) AS ok
			FROM fence JOIN unnest(:scopes::bytea[], :epochs::int8[]) AS w(scope, epoch)
				ON fence.scope = w.scope
			WHERE fence.epoch <= w.epoch
		), written AS (`;
	const fenceResult = `)
		SELECT (SELECT ok FROM allowed) AS ok, (SELECT count(*) FROM written)::int4 AS n,
			ARRAY(SELECT encode(scope, 'hex') || ':' || epoch::text FROM fence) AS fences`;
	const batchRows = `unnest(:p::bytea[], :c::bytea[], :v::bytea[], :ttl::int8[], :fe::int8[], :fs::int8[])
		AS i(p, c, v, ttl, fe, fs)`;
	const batchExpiry = "CASE WHEN i.ttl = 0 THEN NULL ELSE {now} + i.ttl * 1000 END";
	const upsert = `ON CONFLICT (p_key, c_cols) DO UPDATE SET value = EXCLUDED.value,
		expire_at = EXCLUDED.expire_at, f_epoch = EXCLUDED.f_epoch, f_seq = EXCLUDED.f_seq`;
	const reads = new Map<string, Statement>();
	return {
		insertIfNotExists: c(
			"ins",
			`INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at) VALUES (:p, :c, :v, ${expiry})
			${upsert} WHERE ${expired}`,
		),
		compareAndSwap: c(
			"cas",
			`UPDATE ${T} AS t SET value = :nv, expire_at = ${expiry}, f_epoch = NULL, f_seq = NULL
			WHERE t.p_key = :p AND t.c_cols = :c AND t.value = :ov AND ${live}`,
		),
		compareAndDelete: c(
			"cad",
			`DELETE FROM ${T} AS t WHERE t.p_key = :p AND t.c_cols = :c AND t.value = :v AND ${live}`,
		),
		get: c("get", `SELECT t.value FROM ${T} AS t WHERE t.p_key = :p AND t.c_cols = :c AND ${live}`),
		queryTTL: c(
			"ttl",
			`SELECT CASE WHEN t.expire_at IS NULL THEN 0
				ELSE ceil((t.expire_at - {now}) / 1000.0)::int4 END AS remaining
			FROM ${T} AS t WHERE t.p_key = :p AND t.c_cols = :c AND ${live}`,
		),
		put: c(
			"put",
			`INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at) VALUES (:p, :c, :v, ${expiry})
			${upsert}`,
		),
		putBatch: c(
			"batch",
			`INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at)
			SELECT i.p, i.c, i.v, ${batchExpiry} FROM ${batchRows} ${upsert}`,
		),
		fenced: {
			insertIfNotExists: c(
				"fins",
				`${fence} INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at, f_epoch, f_seq)
				SELECT :p::bytea, :c::bytea, :v::bytea, ${expiry}, :fe::int8, :fs::int8
				WHERE (SELECT ok FROM allowed)
				${upsert} WHERE ${expired} RETURNING 1 ${fenceResult}`,
			),
			compareAndSwap: c(
				"fcas",
				`${fence} UPDATE ${T} AS t SET value = :nv, expire_at = ${expiry}, f_epoch = :fe::int8,
					f_seq = :fs::int8
				WHERE t.p_key = :p AND t.c_cols = :c AND t.value = :ov AND ${live} AND ${ordered}
					AND (SELECT ok FROM allowed)
				RETURNING 1 ${fenceResult}`,
			),
			compareAndDelete: c(
				"fcad",
				`${fence} DELETE FROM ${T} AS t
				WHERE t.p_key = :p AND t.c_cols = :c AND t.value = :v AND ${live} AND ${ordered}
					AND (SELECT ok FROM allowed)
				RETURNING 1 ${fenceResult}`,
			),
			putBatch: c(
				"fbatch",
				`${fence} INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at, f_epoch, f_seq)
				SELECT i.p, i.c, i.v, ${batchExpiry}, i.fe, i.fs FROM ${batchRows}
				WHERE (SELECT ok FROM allowed)
				${upsert} WHERE EXCLUDED.f_epoch IS NULL OR t.f_epoch IS NULL OR ${expired}
					OR (t.f_epoch, t.f_seq) <= (EXCLUDED.f_epoch, EXCLUDED.f_seq)
				RETURNING 1 ${fenceResult}`,
			),
		},
		createFences: c(
			"fnew",
			`INSERT INTO ${F} (scope, epoch) SELECT s, 0 FROM unnest(:scopes::bytea[]) AS s
			ON CONFLICT (scope) DO NOTHING`,
		),
		raiseTo: c(
			"raise",
			`INSERT INTO ${F} AS f (scope, epoch) VALUES (:scope, :epoch::int8)
			ON CONFLICT (scope) DO UPDATE SET epoch = EXCLUDED.epoch WHERE f.epoch <= EXCLUDED.epoch
			RETURNING f.epoch::text AS epoch`,
		),
		raiseNext: c(
			"raise1",
			`INSERT INTO ${F} AS f (scope, epoch) VALUES (:scope, 1)
			ON CONFLICT (scope) DO UPDATE SET epoch = f.epoch + 1
			RETURNING f.epoch::text AS epoch`,
		),
		fenceEpoch: c("fepoch", `SELECT f.epoch::text AS epoch FROM ${F} AS f WHERE f.scope = :scope`),
		sweep: c(
			"sweep",
			`DELETE FROM ${T} AS t WHERE t.ctid = ANY(ARRAY(
				SELECT s.ctid FROM ${T} AS s WHERE s.expire_at IS NOT NULL AND s.expire_at <= {now}
				ORDER BY s.expire_at LIMIT :limit FOR UPDATE SKIP LOCKED
			)) AND ${expired}`,
		),
		read(lower, upper) {
			const key = `${lower}/${upper}`;
			let s = reads.get(key);
			if (s === undefined) {
				const bounds = [
					lower === "from" ? "AND t.c_cols >= :lo" : lower === "after" ? "AND t.c_cols > :lo" : "",
					upper ? "AND t.c_cols < :hi" : "",
				].join(" ");
				s = c(
					`read_${lower}_${upper ? "hi" : "open"}`,
					`SELECT t.c_cols, t.value FROM ${T} AS t WHERE t.p_key = :p ${bounds} AND ${live}
					ORDER BY t.c_cols LIMIT :limit`,
				);
				reads.set(key, s);
			}
			return s;
		},
	};
}
