// Fenced writes on real Cassandra: a put that reaches the server late (held between the driver and
// the client, as a congested link or a retried request would) never replaces a newer one, because
// it is a lightweight transaction conditional on the stored stamp being below its own, and its
// stamp comes from its epoch's reserved range.
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";
import { cassandraGate, useCassandraKeyspace } from "./cassandra-env.ts";

const skip = await cassandraGate();
const fixture = useCassandraKeyspace("vvm_fence", skip);
const run = `${process.pid}-${Date.now()}`;
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);

/** A client whose next fenced put (`… IF fence_stamp < ?`) waits for `release()`. */
function holding(client: Client) {
	let armed = false;
	let release!: () => void;
	const gate = new Promise<void>((r) => {
		release = r;
	});
	let reached!: () => void;
	const atServer = new Promise<void>((r) => {
		reached = r;
	});
	const wrapped = new Proxy(client, {
		get(target, prop, receiver) {
			if (prop === "execute")
				return async (cql: string, ...rest: unknown[]) => {
					if (armed && cql.endsWith("IF fence_stamp < ?")) {
						armed = false;
						reached();
						await gate;
					}
					return (target.execute as (...a: unknown[]) => unknown).call(target, cql, ...rest);
				};
			const v = Reflect.get(target, prop, receiver);
			return typeof v === "function" ? v.bind(target) : v;
		},
	});
	return { client: wrapped, arm: () => (armed = true), reached: atServer, release };
}

describe.skipIf(skip)(
	`ttlstorage-cas fenced writes on Cassandra${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		it("F2: of two puts under one epoch, the later call wins although the earlier one lands last", async () => {
			const { client, keyspace } = fixture();
			const held = holding(client);
			const slow = createCassandraTTLStorage({ client: held.client, keyspace });
			const pKey = utf8(`f2/${run}`);
			const fence = { scope: utf8(`scope/f2/${run}`), epoch: 1n };
			await slow.raiseFence?.(fence.scope, 1n);
			held.arm();
			const first = slow.put(pKey, utf8("k"), utf8("first"), 0, { fence });
			await held.reached;
			await slow.put(pKey, utf8("k"), utf8("second"), 0, { fence });
			held.release();
			await first;
			expect(text(await slow.get(pKey, utf8("k")))).toBe("second");
		});

		it("a conditional write right after a fenced put of the same key, just after a raise, is not shadowed", async () => {
			// A new epoch's stamps start above the previous epoch's ceiling, ahead of the wall clock;
			// a lightweight transaction's own timestamp must not fall below them.
			const { client, keyspace } = fixture();
			// Two processes: the previous holder's stamps reach up to its ceiling, ahead of the clock.
			const previous = createCassandraTTLStorage({ client, keyspace });
			const storage = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`mix/${run}`);
			const scope = utf8(`scope/mix/${run}`);
			await previous.raiseFence?.(scope, 1n);
			await previous.put(pKey, utf8("warm"), utf8("v"), 0, { fence: { scope, epoch: 1n } });
			await storage.raiseFence?.(scope, 2n);
			const fence = { scope, epoch: 2n };
			await storage.put(pKey, utf8("k"), utf8("x"), 0, { fence });
			expect(
				await storage.compareAndSwap(pKey, utf8("k"), utf8("x"), utf8("y"), 0, { fence }),
			).toBe(true);
			expect(text(await storage.get(pKey, utf8("k")))).toBe("y");
			expect(await storage.compareAndDelete(pKey, utf8("k"), utf8("y"), { fence })).toBe(true);
			expect(await storage.get(pKey, utf8("k"))).toBeUndefined();
			// And the other way round: a put after a swap of the same key wins.
			await storage.put(pKey, utf8("j"), utf8("a"), 0, { fence });
			expect(
				await storage.compareAndSwap(pKey, utf8("j"), utf8("a"), utf8("b"), 0, { fence }),
			).toBe(true);
			await storage.put(pKey, utf8("j"), utf8("c"), 0, { fence });
			expect(text(await storage.get(pKey, utf8("j")))).toBe("c");
		});

		it("a table of an earlier version: ensureCassandraSchema adds fence_stamp, and fenced writes take records without a stamp", async () => {
			const { client, keyspace } = fixture();
			const table = `old_${process.pid}`;
			await client.execute(
				`CREATE TABLE ${keyspace}.${table} (p_key blob, c_col blob, value blob, PRIMARY KEY ((p_key), c_col))`,
			);
			const pKey = utf8(`legacy/${run}`);
			const legacy = `UPDATE ${keyspace}.${table} SET value = ? WHERE p_key = ? AND c_col = ?`;
			for (const k of ["a", "b", "c"])
				await client.execute(legacy, [Buffer.from(`old-${k}`), Buffer.from(pKey), Buffer.from(k)], {
					prepare: true,
				});
			await ensureCassandraSchema(client, { keyspace, table });
			// again: a no-op
			await ensureCassandraSchema(client, { keyspace, table });
			const storage = createCassandraTTLStorage({ client, keyspace, table });
			const scope = utf8(`scope/legacy/${run}`);
			const fence = { scope, epoch: 1n };
			await storage.put(pKey, utf8("a"), utf8("new-a"), 0, { fence });
			expect(text(await storage.get(pKey, utf8("a")))).toBe("new-a");
			expect(
				await storage.compareAndSwap(pKey, utf8("b"), utf8("old-b"), utf8("new-b"), 0, { fence }),
			).toBe(true);
			expect(await storage.compareAndDelete(pKey, utf8("c"), utf8("old-c"), { fence })).toBe(true);
			expect(await storage.get(pKey, utf8("c"))).toBeUndefined();
			// A later epoch's write stands against the earlier epoch's, as on a new table.
			await storage.raiseFence?.(scope, 2n);
			await storage.put(pKey, utf8("a"), utf8("newer-a"), 0, { fence: { scope, epoch: 2n } });
			const late = await storage.put(pKey, utf8("a"), utf8("late-a"), 0, { fence }).then(
				() => "resolved",
				(e: unknown) => (TTLStorageError.is(e) ? e.code : String(e)),
			);
			expect(late).toBe("TTLSTORAGE_FENCED");
			expect(text(await storage.get(pKey, utf8("a")))).toBe("newer-a");
		});

		it("F1: a deposed writer's put that lands after the new epoch took over never replaces the new epoch's write", async () => {
			const { client, keyspace } = fixture();
			const held = holding(client);
			const deposed = createCassandraTTLStorage({ client: held.client, keyspace });
			const next = createCassandraTTLStorage({ client, keyspace });
			const pKey = utf8(`f1/${run}`);
			const scope = utf8(`scope/f1/${run}`);
			await deposed.raiseFence?.(scope, 1n);
			held.arm();
			const late = deposed.putBatch([
				{ pKey, cCols: utf8("a"), value: utf8("old-a"), fence: { scope, epoch: 1n } },
			]);
			await held.reached;
			expect(await next.raiseFence?.(scope, 2n)).toBe(2n);
			await next.put(pKey, utf8("a"), utf8("new-a"), 0, { fence: { scope, epoch: 2n } });
			held.release();
			await late;
			// And later writes of the deposed process lose too: shadowed while its reservation lasts,
			// refused (TTLSTORAGE_FENCED) once it had to extend it and found epoch 2 (the new
			// epoch's raise waited out that reservation, so here it has run out).
			const later = await deposed
				.put(pKey, utf8("a"), utf8("later-a"), 0, { fence: { scope, epoch: 1n } })
				.then(
					() => "shadowed",
					(e: unknown) => (TTLStorageError.is(e) ? e.code : String(e)),
				);
			expect(["shadowed", "TTLSTORAGE_FENCED"]).toContain(later);
			expect(text(await next.get(pKey, utf8("a")))).toBe("new-a");
		});
	},
);
