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
 * The now of a write group's conditions and expiries: the database's clock once the group holds
 * its locks (the `nw` CTE), not when it started. A group that waited for a row lock judged a
 * record by its start time, so a swap could renew a lease that a `get` had already seen expire
 * while it waited (found by review: no order of the two explains both answers).
 */
const LOCKED_NOW = "(SELECT nw.ms FROM nw)";

/**
 * Compiles `template`: `:name` becomes `$n` (one marker per distinct name, `::` casts are left
 * alone) and `{now}` the now of the statement: the database's clock, or the `:now` parameter when
 * the storage runs on an injected test clock.
 */
function compile(kind: string, template: string, injectedNow: boolean): Statement {
	const params: string[] = [];
	const text = template
		.replaceAll("{now}", injectedNow ? ":now::int8" : DATABASE_NOW)
		.replaceAll("{lnow}", injectedNow ? ":now::int8" : LOCKED_NOW)
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
	readonly get: Statement;
	readonly queryTTL: Statement;
	/**
	 * Every write group with an insert, swap or delete, or with links: a group of requests in one
	 * statement (see {@link pgStatements}).
	 */
	readonly group: Statement;
	/**
	 * A group of puts only (kind 0: `put`, `putBatch`, a `putBatchIf` without expected values)
	 * and without links (level 2's writes of a command at `pipelineDepth` 1, the sequencer's
	 * flushes): the same answer as {@link PgStatements.group} for such a group (`r`, `ok`,
	 * `fenced_ok`, `held`, `fences`), from the arrays it needs (no `:k`, `:ex`, `:lr`, `:la`), and
	 * 12–21 % less PostgreSQL backend CPU per create in `BENCH_SHAPE=puts pnpm bench:group-plan`
	 * (no conditions to check, no write count to join).
	 */
	readonly puts: Statement;
	readonly createFences: Statement;
	readonly raiseTo: Statement;
	readonly raiseNext: Statement;
	readonly fenceEpoch: Statement;
	readonly sweep: Statement;
	read(lower: LowerBound, upper: boolean): Statement;
	/** Many `get`s in one statement: `:ps`, `:cs` (`bytea[]`); rows `(i, c_cols, value)`, `i` from 1. */
	readonly gets: Statement;
	/**
	 * Many pages of one `read` shape in one statement: `:ps` and, as the shape has them, `:los`,
	 * `:his` (`bytea[]`), one `:limit`; rows `(i, c_cols, value)` in `(i, c_cols)` order.
	 */
	reads(lower: LowerBound, upper: boolean): Statement;
	/**
	 * `get`s and pages of one `read` shape in one statement (a cold workspace's two reads, its
	 * numbers' page and its log probe, wait side by side): the gets' `:gps`, `:gcs`, their count
	 * `:gn`, then the pages' arrays as in {@link PgStatements.reads}; rows `(i, c_cols, value)` in
	 * `(i, c_cols)` order, the gets' `i` from 1, the pages' from `:gn + 1`.
	 */
	mixed(lower: LowerBound, upper: boolean): Statement;
}

/**
 * The kind of one item of a write group: `0` a put (a fenced one stands only over an older
 * `(epoch, stamp)`: F2), `1` an insert where no live record is, `2` a swap from `ex`, `3` a delete
 * of `ex`. Kinds 1–3 are conditions of their request. @internal
 */
export type ItemKind = 0 | 1 | 2 | 3;

/** Text of the SQLSTATE 22P02 error a group raises when a request was written only in part. */
export const PARTIAL_MARK = "vvm_ttl_partial_";

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
	// The group: requests (r) of items (kinds: ItemKind) and of fences (scope, epoch per request).
	// 1. The fence rows of every scope, share-locked until the statement commits: a raise (an
	//    exclusive row lock) waits for it, and it sees a raise that committed before (in READ
	//    COMMITTED a locking read follows the row to its newest version).
	// 2. The rows of every conditional item, locked (in key order), so their conditions hold until
	//    the commit; a request writes only if its fences pass and all its conditions hold.
	// 3. The writes of those requests. An absent key can still be taken by another transaction
	//    between 2 and 3 (nothing to lock): the insert then finds it and writes nothing, so the
	//    request would land in part; the statement then fails on purpose (PARTIAL_MARK, nothing
	//    written) and the driver sends it again, when step 2 sees the row.
	// Keys are unique within a group (the driver starts a new group instead), so no row is written
	// twice by one statement; but for links (:lr, :la): request lr only follows request la's write
	// of a key it requires as la writes it (its item of that key is not sent), so it writes only if
	// la wrote, and is "held" (sent again by the driver) when it could but la did not.
	// Between 2 and 3, the now of every condition and expiry is read (nw): each count reads its
	// CTE to the end, so the clock is read once every lock of steps 1 and 2 is held.
	// Steps 1 and 2 look each key up on its own (a LATERAL subquery with LIMIT, which the planner
	// cannot flatten into a join), in key order: the statement runs on a cached generic plan, which
	// sizes every unnest() at 100 rows, and a join over the keys then went to a hash semi-join
	// over a sequential scan of the whole table (kept until the next ANALYZE) while a lookup by
	// primary key stays an index scan.
	const item = "CASE WHEN i.ttl = 0 THEN NULL ELSE {now} + i.ttl * 1000 END";
	const newer = "(i.fe IS NULL OR t.f_epoch IS NULL OR (t.f_epoch, t.f_seq) <= (i.fe, i.fs))";
	const go = "i.r IN (SELECT go.r FROM go)";
	const returning = "RETURNING t.p_key, t.c_cols";
	const set = `SET value = EXCLUDED.value, expire_at = EXCLUDED.expire_at,
		f_epoch = EXCLUDED.f_epoch, f_seq = EXCLUDED.f_seq`;
	// The fence rows of the scopes in `scopes` (an array), share-locked in scope order (step 1).
	const fence = (scopes: string): string => `
			SELECT f.scope, f.epoch
			FROM (SELECT DISTINCT u.s FROM unnest(${scopes}) AS u(s) ORDER BY u.s) AS q
			CROSS JOIN LATERAL (
				SELECT f.scope, f.epoch FROM ${F} AS f WHERE f.scope = q.s LIMIT 1 FOR SHARE
			) AS f`;
	// Per request: whether every fence of it passed (a scope without a row fails it).
	const fenceOk = `
			SELECT wf.r, bool_and(coalesce(fence.epoch <= wf.epoch, false)) AS ok
			FROM wf LEFT JOIN fence ON fence.scope = wf.scope GROUP BY wf.r`;
	// The puts of the items `where` admits, in key order (F2: a fenced put stands only over an
	// older (epoch, stamp), an unfenced one or one over an expired record always).
	const putsOf = (where: string): string => `
			INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at, f_epoch, f_seq)
			SELECT i.p, i.c, i.v, ${item}, i.fe, i.fs FROM i WHERE ${where} ORDER BY i.p, i.c
			ON CONFLICT (p_key, c_cols) DO UPDATE ${set}
			WHERE EXCLUDED.f_epoch IS NULL OR t.f_epoch IS NULL OR ${expired}
				OR (t.f_epoch, t.f_seq) <= (EXCLUDED.f_epoch, EXCLUDED.f_seq)`;
	// The stored epochs of the group's scopes, `hex(scope):epoch`, for a request whose fence failed.
	const fencesIfFailed = `CASE WHEN NOT coalesce(fok.ok, true)
				THEN ARRAY(SELECT encode(fence.scope, 'hex') || ':' || fence.epoch::text FROM fence)
			END`;
	const group = `WITH i AS MATERIALIZED (
			SELECT * FROM unnest(:r::int4[], :k::int4[], :p::bytea[], :c::bytea[], :v::bytea[],
				:ex::bytea[], :ttl::int8[], :fe::int8[], :fs::int8[]) AS i(r, k, p, c, v, ex, ttl, fe, fs)
		), wf AS MATERIALIZED (
			SELECT * FROM unnest(:fr::int4[], :fsc::bytea[], :fep::int8[]) AS wf(r, scope, epoch)
		), fence AS MATERIALIZED (${fence(":fsc::bytea[]")}
		), cur AS MATERIALIZED (
			SELECT t.p_key, t.c_cols, t.value, t.expire_at, t.f_epoch, t.f_seq
			FROM (SELECT DISTINCT i.p, i.c FROM i WHERE i.k <> 0 ORDER BY i.p, i.c) AS q
			CROSS JOIN LATERAL (
				SELECT t.p_key, t.c_cols, t.value, t.expire_at, t.f_epoch, t.f_seq FROM ${T} AS t
				WHERE t.p_key = q.p AND t.c_cols = q.c LIMIT 1 FOR UPDATE
			) AS t
		), nw AS MATERIALIZED (
			SELECT floor(extract(epoch FROM clock_timestamp()) * 1000)::int8 AS ms
			FROM (SELECT count(*) FROM fence) AS a CROSS JOIN (SELECT count(*) FROM cur) AS b
		), chk AS MATERIALIZED (
			SELECT i.r, bool_and(coalesce(CASE WHEN i.k = 1
					THEN t.p_key IS NULL OR (t.expire_at IS NOT NULL AND t.expire_at <= {now})
					ELSE t.p_key IS NOT NULL AND (t.expire_at IS NULL OR t.expire_at > {now})
						AND t.value = i.ex AND ${newer} END, false)) AS ok
			FROM i LEFT JOIN cur AS t ON t.p_key = i.p AND t.c_cols = i.c WHERE i.k <> 0 GROUP BY i.r
		), fok AS MATERIALIZED (${fenceOk}
		), want AS MATERIALIZED (
			SELECT i.r, (count(*) FILTER (WHERE i.k <> 0))::int4 AS nc FROM i GROUP BY i.r
		), own AS MATERIALIZED (
			SELECT want.r, coalesce(chk.ok, true) AND coalesce(fok.ok, true) AS ok
			FROM want LEFT JOIN chk ON chk.r = want.r LEFT JOIN fok ON fok.r = want.r
		), go AS MATERIALIZED (
			SELECT own.r FROM own WHERE own.ok AND NOT EXISTS (
				SELECT 1 FROM unnest(:lr::int4[], :la::int4[]) AS l(r, a) JOIN own AS o ON o.r = l.a
				WHERE l.r = own.r AND NOT o.ok)
		), put AS (${putsOf(`i.k = 0 AND ${go}`)}
			${returning}
		), ins AS (
			INSERT INTO ${T} AS t (p_key, c_cols, value, expire_at, f_epoch, f_seq)
			SELECT i.p, i.c, i.v, ${item}, i.fe, i.fs FROM i WHERE i.k = 1 AND ${go} ORDER BY i.p, i.c
			ON CONFLICT (p_key, c_cols) DO UPDATE ${set} WHERE ${expired}
			${returning}
		), swap AS (
			UPDATE ${T} AS t SET value = i.v, expire_at = ${item}, f_epoch = i.fe, f_seq = i.fs
			FROM i WHERE i.k = 2 AND ${go} AND t.p_key = i.p AND t.c_cols = i.c AND t.value = i.ex
				AND ${live} AND ${newer}
			${returning}
		), del AS (
			DELETE FROM ${T} AS t USING i
			WHERE i.k = 3 AND ${go} AND t.p_key = i.p AND t.c_cols = i.c AND t.value = i.ex
				AND ${live} AND ${newer}
			${returning}
		), w AS (
			SELECT * FROM put UNION ALL SELECT * FROM ins UNION ALL SELECT * FROM swap
			UNION ALL SELECT * FROM del
		), n AS (
			SELECT i.r, count(*)::int4 AS n, (count(*) FILTER (WHERE i.k <> 0))::int4 AS nc
			FROM w JOIN i ON i.p = w.p_key AND i.c = w.c_cols GROUP BY i.r
		)
		SELECT want.r, go.r IS NOT NULL AS ok, coalesce(fok.ok, true) AS fenced_ok,
			own.ok AND go.r IS NULL AS held,
			coalesce(n.n, 0) AS n,
			CASE WHEN go.r IS NOT NULL AND coalesce(n.nc, 0) <> want.nc
				THEN ('${PARTIAL_MARK}' || want.r::text)::int4 END AS partial,
			${fencesIfFailed} AS fences
		FROM want JOIN own ON own.r = want.r LEFT JOIN go ON go.r = want.r
			LEFT JOIN n ON n.r = want.r LEFT JOIN fok ON fok.r = want.r
		ORDER BY want.r`;
	// A group of puts only, without links (level 2's writes at pipelineDepth 1, the sequencer's,
	// a putBatchIf without expected values): steps 1 and 3 of
	// the group (no item has a condition, so nothing is locked but the fences). Every array is read
	// through a scalar subquery, so the planner never sees its length: with the lengths (a custom
	// plan) a small group looked cheaper planned afresh than on the cached generic plan, and
	// PostgreSQL then planned every execution (~150 µs of its CPU each).
	const arr = (name: string, type: string): string => `(SELECT :${name}::${type}[])`;
	const puts = `WITH i AS MATERIALIZED (
			SELECT * FROM unnest(${arr("r", "int4")}, ${arr("p", "bytea")}, ${arr("c", "bytea")},
				${arr("v", "bytea")}, ${arr("ttl", "int8")}, ${arr("fe", "int8")}, ${arr("fs", "int8")})
				AS i(r, p, c, v, ttl, fe, fs)
		), wf AS MATERIALIZED (
			SELECT * FROM unnest(${arr("fr", "int4")}, ${arr("fsc", "bytea")}, ${arr("fep", "int8")})
				AS wf(r, scope, epoch)
		), fence AS MATERIALIZED (${fence(arr("fsc", "bytea"))}
		), fok AS MATERIALIZED (${fenceOk}
		), put AS (${putsOf("NOT EXISTS (SELECT 1 FROM fok WHERE fok.r = i.r AND NOT fok.ok)")}
		)
		SELECT w.r, coalesce(fok.ok, true) AS ok, coalesce(fok.ok, true) AS fenced_ok, false AS held,
			${fencesIfFailed} AS fences
		FROM (SELECT DISTINCT i.r FROM i) AS w LEFT JOIN fok ON fok.r = w.r
		ORDER BY w.r`;
	// A statement per shape of `read` page, made when first asked for.
	const byShape = (make: (lower: LowerBound, upper: boolean, shape: string) => Statement) => {
		const made = new Map<string, Statement>();
		return (lower: LowerBound, upper: boolean): Statement => {
			const shape = `${lower}_${upper ? "hi" : "open"}`;
			let s = made.get(shape);
			if (s === undefined) {
				s = make(lower, upper, shape);
				made.set(shape, s);
			}
			return s;
		};
	};
	// `get`s of the keys in two arrays: the rows `(i, c_cols, value)` of those found.
	const lookups = (ps: string, cs: string): string =>
		`SELECT k.i::int4 AS i, t.c_cols, t.value
		FROM unnest(${ps}::bytea[], ${cs}::bytea[]) WITH ORDINALITY AS k(p, c, i)
		CROSS JOIN LATERAL (
			SELECT t.c_cols, t.value FROM ${T} AS t WHERE t.p_key = k.p AND t.c_cols = k.c AND ${live} LIMIT 1
		) AS t`;
	// Many reads in one statement: each key looked up on its own in a LATERAL subquery with LIMIT
	// (an index scan, whatever the generic plan's row estimate of unnest(), as in the group).
	const bounds = (lower: LowerBound, upper: boolean, lo: string, hi: string): string =>
		[
			lower === "from" ? `AND t.c_cols >= ${lo}` : lower === "after" ? `AND t.c_cols > ${lo}` : "",
			upper ? `AND t.c_cols < ${hi}` : "",
		].join(" ");
	// Pages of one `read` shape, one per key: the rows `(i, c_cols, value)`, unordered.
	const pages = (lower: LowerBound, upper: boolean, index: string): string => {
		const columns = ["p", ...(lower === "none" ? [] : ["lo"]), ...(upper ? ["hi"] : [])];
		const arrays = columns.map((col) => `:${col}s::bytea[]`);
		return `SELECT (${index})::int4 AS i, t.c_cols, t.value
			FROM unnest(${arrays.join(", ")}) WITH ORDINALITY AS k(${columns.join(", ")}, i)
			CROSS JOIN LATERAL (
				SELECT t.c_cols, t.value FROM ${T} AS t
				WHERE t.p_key = k.p ${bounds(lower, upper, "k.lo", "k.hi")} AND ${live}
				ORDER BY t.c_cols LIMIT :limit
			) AS t`;
	};
	return {
		get: c("get", `SELECT t.value FROM ${T} AS t WHERE t.p_key = :p AND t.c_cols = :c AND ${live}`),
		queryTTL: c(
			"ttl",
			`SELECT CASE WHEN t.expire_at IS NULL THEN 0
				ELSE ceil((t.expire_at - {now}) / 1000.0)::int4 END AS remaining
			FROM ${T} AS t WHERE t.p_key = :p AND t.c_cols = :c AND ${live}`,
		),
		// Every condition and expiry of the group on the clock after its locks ({lnow}).
		group: c("group", group.replaceAll("{now}", "{lnow}")),
		puts: c("puts", puts),
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
		read: byShape((lower, upper, shape) =>
			c(
				`read_${shape}`,
				`SELECT t.c_cols, t.value FROM ${T} AS t
				WHERE t.p_key = :p ${bounds(lower, upper, ":lo", ":hi")} AND ${live}
				ORDER BY t.c_cols LIMIT :limit`,
			),
		),
		gets: c("gets", lookups(":ps", ":cs")),
		reads: byShape((lower, upper, shape) =>
			c(`reads_${shape}`, `${pages(lower, upper, "k.i")} ORDER BY k.i, t.c_cols`),
		),
		mixed: byShape((lower, upper, shape) =>
			c(
				`mixed_${shape}`,
				`${lookups(":gps", ":gcs")} UNION ALL ${pages(lower, upper, "k.i + :gn::int4")}
				ORDER BY i, c_cols`,
			),
		),
	};
}
