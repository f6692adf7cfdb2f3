// The plans of the write group statement and of grouped reads (issue 36). The driver prepares it once per connection, so
// PostgreSQL soon runs it on a cached generic plan, made without the arrays' sizes (every unnest()
// counts as 100 rows) and kept until the next ANALYZE. Looking the group's keys up as a join let
// that plan take a hash semi-join over a sequential scan of the whole records table (made while the
// table was small, then kept as it grew: ~1.3–5 ms and 300–1 500 buffer hits per group of ~5
// creates instead of ~0.45 ms and ~200). Each key must be an index lookup.
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { Statement } from "../src/statements.ts";
import { pgStatements } from "../src/statements.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_gplan", skip);

interface PlanNode {
	readonly "Node Type": string;
	readonly "Relation Name"?: string;
	readonly "Index Name"?: string;
	readonly "Subplan Name"?: string;
	readonly Plans?: readonly PlanNode[];
}

/** Every node of `node`'s tree. */
function nodes(node: PlanNode): PlanNode[] {
	return [node, ...(node.Plans ?? []).flatMap(nodes)];
}

/** The generic plan of `stmt` (as a prepared statement soon runs on it), at any arguments. */
async function genericPlan(pool: pg.Pool, stmt: Statement): Promise<PlanNode> {
	const client = await pool.connect();
	try {
		await client.query("BEGIN");
		await client.query("SET LOCAL plan_cache_mode = force_generic_plan");
		await client.query(`PREPARE vvm_gplan AS ${stmt.text}`);
		try {
			// A generic plan does not depend on the arguments: empty arrays will do.
			const args = stmt.params
				.map((name) => (name === "limit" || name === "gn" ? "10" : "'{}'"))
				.join(", ");
			const result = await client.query(`EXPLAIN (FORMAT JSON) EXECUTE vvm_gplan(${args})`);
			return result.rows[0]["QUERY PLAN"][0].Plan;
		} finally {
			await client.query("ROLLBACK");
			await client.query("DEALLOCATE vvm_gplan");
		}
	} finally {
		client.release();
	}
}

/** The records table is only read through its primary key's index. */
function expectIndexScansOnly(all: readonly PlanNode[]): void {
	const scans = all.filter((n) => n["Relation Name"] === "vvm_ttl" && /Scan/.test(n["Node Type"]));
	expect(scans.length).toBeGreaterThan(0);
	expect(scans.filter((n) => n["Node Type"] !== "Index Scan")).toEqual([]);
}

describe.skipIf(skip)(
	`ttlstorage-pg group statement plan${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		it("its generic plan reads records by primary key, not by a sequential scan", async () => {
			const { pool, schema } = fixture();
			// A table of 1 000 records with statistics: there the old join went to a sequential scan.
			await pool.query(
				`INSERT INTO "${schema}".vvm_ttl (p_key, c_cols, value, f_epoch, f_seq)
			SELECT int8send(g % 50), int8send(g), decode(repeat('ab', 120), 'hex'), 1, g
			FROM generate_series(1, 1000) AS g`,
			);
			await pool.query(`ANALYZE "${schema}".vvm_ttl`);
			const stmt = pgStatements(schema, "vvm_ttl", false).group;
			const all = nodes(await genericPlan(pool, stmt));
			expectIndexScansOnly(all);
			// The locking read of the conditional items' rows (step 2) in particular.
			const cur = all.find((n) => n["Subplan Name"] === "CTE cur");
			expect(cur).toBeDefined();
			expect(
				nodes(cur as PlanNode).some(
					(n) => n["Node Type"] === "Index Scan" && n["Index Name"] === "vvm_ttl_pkey",
				),
			).toBe(true);
		});

		it("the puts-only group reads no record table by a scan, and stays on the cached generic plan", async () => {
			const { pool, schema } = fixture();
			await pool.query(`ANALYZE "${schema}".vvm_ttl`);
			const stmt = pgStatements(schema, "vvm_ttl", false).puts;
			const all = nodes(await genericPlan(pool, stmt));
			expect(all.filter((n) => /Seq Scan/.test(n["Node Type"]))).toEqual([]);
			expect(
				all.some(
					(n) => n["Node Type"] === "Index Scan" && n["Index Name"] === "vvm_ttl_fences_pkey",
				),
			).toBe(true);
			// Prepared and run as the driver runs it, on groups of one put (whose lengths, seen by
			// the planner, made a custom plan look cheaper than the generic one every time).
			const client = await pool.connect();
			try {
				await client.query(
					`INSERT INTO "${schema}".vvm_ttl_fences (scope, epoch) VALUES ('\\x01', 1)`,
				);
				for (let n = 0; n < 12; n++) {
					const args: Record<string, unknown> = {
						r: [0],
						p: [Buffer.from([n])],
						c: [Buffer.from([1])],
						v: [Buffer.from([2])],
						ttl: [0],
						fe: [1],
						fs: [n],
						fr: [0],
						fsc: [Buffer.from([1])],
						fep: [1],
					};
					const result = await client.query({
						name: stmt.name,
						text: stmt.text,
						values: stmt.params.map((name) => args[name]),
					});
					expect(result.rows).toEqual([
						{ r: 0, ok: true, fenced_ok: true, held: false, fences: null },
					]);
				}
				const plans = await client.query(
					"SELECT generic_plans::int AS generic, custom_plans::int AS custom FROM pg_prepared_statements WHERE name = $1",
					[stmt.name],
				);
				// PostgreSQL plans the first 5 executions with the arguments, then keeps the generic one.
				expect(plans.rows).toEqual([{ generic: 7, custom: 5 }]);
			} finally {
				client.release();
			}
		});

		it("so do the statements of grouped reads (gets, pages of each read shape, and both)", async () => {
			const { pool, schema } = fixture();
			await pool.query(`ANALYZE "${schema}".vvm_ttl`);
			const sql = pgStatements(schema, "vvm_ttl", false);
			const statements = [sql.gets];
			for (const lower of ["none", "from", "after"] as const)
				for (const upper of [false, true])
					statements.push(sql.reads(lower, upper), sql.mixed(lower, upper));
			for (const stmt of statements) expectIndexScansOnly(nodes(await genericPlan(pool, stmt)));
		});
	},
);
