// A put issued after a lightweight transaction of the same record returned must win, and a
// lightweight transaction issued after a put returned must win: one client, no concurrency, no
// faults, straight to the server, many tries (review4 case 4). Before the fix, an unfenced put took
// the client's timestamp (a whole millisecond, like the server's Paxos ballot), and in 8-10 % of
// the tries it tied with or fell below the Paxos write's timestamp, so the older value won.
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage } from "../src/index.ts";
import { cassandraGate, useCassandraKeyspace } from "./cassandra-env.ts";

const skip = await cassandraGate();
const fixture = useCassandraKeyspace("vvm_putlwt", skip);
const run = `${process.pid}-${Date.now()}`;
const text = (b: Uint8Array | undefined) =>
	b === undefined ? "absent" : new TextDecoder().decode(b);
/** Tries per case: at the old behaviour's 8 % per try, 150 tries all pass with p < 4e-6. */
const TRIES = 150;

describe.skipIf(skip)(
	`ttlstorage-cas: puts keep their real-time order with lightweight transactions${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		it("put after insertIfNotExists / compareAndSwap / compareAndDelete of the same record, then get: the put's value, every try", async () => {
			const { client, keyspace } = fixture();
			const storage = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`seq/${run}`); // one partition, as in the review's script
			const lost: string[] = [];
			for (let i = 0; i < TRIES; i++) {
				for (const first of ["ins", "cas", "cad"] as const) {
					const cCols = utf8(`${first}${i}`);
					let applied: boolean;
					if (first === "ins")
						applied = await storage.insertIfNotExists(pKey, cCols, utf8("a"), 3600);
					else {
						await storage.put(pKey, cCols, utf8("a"), 3600);
						applied =
							first === "cas"
								? await storage.compareAndSwap(pKey, cCols, utf8("a"), utf8("c"), 3600)
								: await storage.compareAndDelete(pKey, cCols, utf8("a"));
					}
					expect(applied, `${first} #${i}`).toBe(true);
					await storage.put(pKey, cCols, utf8("b"), 3600);
					const got = text(await storage.get(pKey, cCols));
					if (got !== "b") lost.push(`${first} #${i}: ${got}`);
				}
			}
			expect(lost).toEqual([]);
		});

		it("a putBatch after swaps of its records, and a swap after a put of the same record: the later write, every try", async () => {
			const { client, keyspace } = fixture();
			const storage = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`batch/${run}`);
			const lost: string[] = [];
			for (let i = 0; i < TRIES; i++) {
				const a = utf8(`a${i}`);
				const b = utf8(`b${i}`);
				expect(await storage.insertIfNotExists(pKey, a, utf8("a"), 0)).toBe(true);
				expect(await storage.insertIfNotExists(pKey, b, utf8("a"), 0)).toBe(true);
				expect(await storage.compareAndSwap(pKey, a, utf8("a"), utf8("z"), 0)).toBe(true);
				await storage.putBatch([
					{ pKey, cCols: a, value: utf8("b") },
					{ pKey, cCols: b, value: utf8("b") },
					{ pKey, cCols: a, value: utf8("c") }, // a later item of a record wins
				]);
				const got = `${text(await storage.get(pKey, a))}${text(await storage.get(pKey, b))}`;
				if (got !== "cb") lost.push(`batch #${i}: ${got}`);
				// The other way round: a swap right after a put, to a smaller value (a tie would lose).
				await storage.put(pKey, a, utf8("z"), 0);
				if (!(await storage.compareAndSwap(pKey, a, utf8("z"), utf8("a"), 0)))
					lost.push(`swap after put #${i}: not applied`);
				else if (text(await storage.get(pKey, a)) !== "a")
					lost.push(`swap after put #${i}: ${text(await storage.get(pKey, a))}`);
			}
			expect(lost).toEqual([]);
		});

		it("fenced puts and lightweight transactions of the same record, one after the other: the later write, every try", async () => {
			const { client, keyspace } = fixture();
			const storage = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`fenced/${run}`);
			const scope = utf8(`scope/fenced/${run}`);
			await storage.raiseFence?.(scope, 1n);
			const fence = { scope, epoch: 1n };
			const lost: string[] = [];
			for (let i = 0; i < TRIES; i++) {
				const k = utf8(`k${i}`);
				// LWT, then a fenced put (a level 1 record: inserted, then updated by a put) ...
				expect(await storage.insertIfNotExists(pKey, k, utf8("c"), 0, { fence })).toBe(true);
				await storage.put(pKey, k, utf8("b"), 0, { fence });
				const afterPut = text(await storage.get(pKey, k));
				if (afterPut !== "b") lost.push(`put after insert #${i}: ${afterPut}`);
				// ... then a swap right after the fenced put (to a smaller value: a tie would lose) ...
				if (!(await storage.compareAndSwap(pKey, k, utf8("b"), utf8("a"), 0, { fence })))
					lost.push(`swap after put #${i}: not applied`);
				else if (text(await storage.get(pKey, k)) !== "a")
					lost.push(`swap after put #${i}: ${text(await storage.get(pKey, k))}`);
				// ... and a fenced putBatch right after the swap.
				await storage.putBatch([{ pKey, cCols: k, value: utf8("0"), fence }]);
				const afterBatch = text(await storage.get(pKey, k));
				if (afterBatch !== "0") lost.push(`putBatch after swap #${i}: ${afterBatch}`);
			}
			expect(lost).toEqual([]);
		});

		it("an unfenced put of the value a record already holds renews its TTL (the second round)", async () => {
			const { client, keyspace } = fixture();
			const storage = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`ttl/${run}`);
			await storage.put(pKey, utf8("k"), utf8("v"), 100);
			await storage.put(pKey, utf8("k"), utf8("v"), 3000);
			expect(await storage.queryTTL(pKey, utf8("k"))).toBeGreaterThan(2900);
			await storage.put(pKey, utf8("k"), utf8("v"), 0);
			expect(await storage.queryTTL(pKey, utf8("k"))).toBe(0);
			expect(text(await storage.get(pKey, utf8("k")))).toBe("v");
		});
	},
);
