// Handing on (README, "Handing on"), where it must give way: a connection that broke while it
// answered is not handed on (a write queued behind is not lost to it), and while somebody waits
// for a connection of the pool, the pool gets it back (no caller starved behind a busy chain).
import { spawnSync } from "node:child_process";
import type { Bytes } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import type pg from "pg";
import { describe, expect, it } from "vitest";
import type { PgPool, PgPoolClient } from "../src/index.ts";
import { createPgTTLStorage } from "../src/index.ts";
import { newPool, pgGate, pgSettings, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_handon", skip);
let n = 0;
const unique = (what: string): Bytes => utf8(`${what}/${process.pid}/${Date.now()}/${++n}`);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);

/**
 * Ends the session of backend `pid` from another process, 0.3 s after it started, while this
 * process waits for it: this event loop is blocked meanwhile, so a statement just sent on that
 * session is answered, then the session's FATAL arrives, and both are read in one go.
 */
function terminateWhileBlocked(pid: number): void {
	const script = `
		const pg = require("pg");
		const c = new pg.Client(${JSON.stringify(pgSettings)});
		c.connect()
			.then(() => c.query("SELECT pg_sleep(0.3)"))
			.then(() => c.query("SELECT pg_terminate_backend($1)", [${pid}]))
			.then(() => c.end(), (e) => { console.error(e); process.exit(1); });`;
	const r = spawnSync(process.execPath, ["-e", script], { timeout: 20_000, encoding: "utf8" });
	if (r.status !== 0) throw new Error(`the terminating process failed: ${r.stderr}`);
}

describe.skipIf(skip)(`ttlstorage-pg handing on${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("a connection that broke as it answered is not handed on: the write queued behind goes on another", async () => {
		const { pool, schema } = fixture();
		let armed = false;
		const wrapped: PgPool = {
			async connect(): Promise<PgPoolClient> {
				const client = (await pool.connect()) as pg.PoolClient & { processID: number };
				return {
					query(config) {
						const answer = client.query(config);
						if (armed && config.text.startsWith("WITH i AS MATERIALIZED")) {
							armed = false;
							terminateWhileBlocked(client.processID);
						}
						return answer;
					},
					release: (destroy) => client.release(destroy),
					on: (event, listener) => client.on(event, listener),
					removeListener: (event, listener) => client.removeListener(event, listener),
				};
			},
		};
		const storage = createPgTTLStorage({ pool: wrapped, schema, writesInFlight: 1 });
		const pKey = unique("p");
		await storage.put(pKey, utf8("warm"), utf8("v"));
		armed = true;
		const first = storage.put(pKey, utf8("a"), utf8("v"));
		const second = storage.put(pKey, utf8("b"), utf8("v"));
		const settled = await Promise.allSettled([first, second]);
		// Before: the second went out on the broken session, and was answered OUTCOME_UNKNOWN
		// although nothing had been sent.
		expect(settled.map((s) => s.status)).toEqual(["fulfilled", "fulfilled"]);
		expect([
			text(await storage.get(pKey, utf8("a"))),
			text(await storage.get(pKey, utf8("b"))),
		]).toEqual(["v", "v"]);
		await storage.close();
	}, 30_000);

	it("while somebody waits for a connection of the pool, it gets one: writes do not keep it", async () => {
		const { schema } = fixture();
		const small = newPool({ max: 1 });
		try {
			const storage = createPgTTLStorage({ pool: small, schema, writesInFlight: 1 });
			const pKey = unique("p");
			await storage.put(pKey, utf8("k"), utf8("v"), 3600);
			const events: string[] = [];
			let stop = false;
			let writes = 0;
			const callers = Array.from({ length: 4 }, async (_, i) => {
				while (!stop && writes < 5_000) {
					await storage.put(pKey, utf8(`c${i}`), utf8(String(++writes)));
				}
			});
			// queryTTL takes a connection of the pool (not a group): it waits its turn behind the
			// group at the server, not behind every group the callers keep queuing.
			while (writes < 20) await new Promise((resolve) => setImmediate(resolve));
			const ttl = await storage.queryTTL(pKey, utf8("k"));
			events.push(`queryTTL answered after ${writes < 5_000 ? "some" : "all"} writes`);
			stop = true;
			await Promise.all(callers);
			expect(ttl).toBeGreaterThan(3500);
			expect(events).toEqual(["queryTTL answered after some writes"]);
			await storage.close();
		} finally {
			await small.end();
		}
	}, 60_000);
});
