// A conditional write that waited for a row lock judged liveness by the `statement_timestamp()` of
// its start (found by review): a record a concurrent `get` had already seen expire was still "live"
// for the swap, which succeeded and extended it. No linearization exists: the get saw it expired
// after the swap was called, and the swap succeeded on a record that was expired when it took effect.
import type { Bytes } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import { createPgTTLStorage } from "../src/index.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("lock_wait_now", skip);
const unique = (what: string): Bytes => utf8(`lock_wait_now_${what}/${process.pid}/${Date.now()}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function someoneWaitsForALock(pool: pg.Pool): Promise<void> {
	for (;;) {
		const r = await pool.query(
			"SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR UPDATE%'",
		);
		if (r.rows[0]?.n > 0) return;
		await sleep(5);
	}
}

describe.skipIf(skip)(
	"the now of a conditional write that waited for a row lock (database clock)",
	() => {
		it("a compareAndSwap must not succeed on a record a get already saw expired", async () => {
			const { pool, schema } = fixture();
			const storage = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
			const pKey = unique("lease");
			const cCols = utf8("slot");
			const me = utf8("leader-A");
			await storage.put(pKey, cCols, me, 1); // expires 1 s from now by the server's clock
			const blocker = await pool.connect(); // another transaction holds the row lock for a moment
			try {
				await blocker.query("BEGIN");
				await blocker.query(
					`SELECT 1 FROM "${schema}".vvm_ttl WHERE p_key = $1 AND c_cols = $2 FOR UPDATE`,
					[Buffer.from(pKey), Buffer.from(cCols)],
				);
				await sleep(500);
				// The leader renews half-way through its lease: the statement starts now, then waits.
				const renewal = storage.compareAndSwap(pKey, cCols, me, me, 30);
				await someoneWaitsForALock(pool);
				await sleep(1_000); // the lease has now expired by the server's clock
				const seen = await storage.get(pKey, cCols);
				expect(seen).toBeUndefined(); // an observer sees the lease gone
				await blocker.query("COMMIT");
				const renewed = await renewal;
				// Linearizability: the get saw the record expired after the swap was called, so the swap
				// can only have taken effect after the expiry, on an expired record: it must be false.
				expect({ seenByGet: seen, renewed }).toEqual({ seenByGet: undefined, renewed: false });
			} finally {
				blocker.release();
				await storage.close();
			}
		});
	},
);
