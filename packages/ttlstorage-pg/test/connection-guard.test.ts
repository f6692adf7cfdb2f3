// node-postgres can emit `error` on a connection between the pool handing it over and the
// driver's first line about it (a FATAL read in the same chunk as the handshake's end): the driver
// must have a listener on it by then, or the process crashes. A fake pool that behaves like
// pg-pool (the `acquire` event, then the hand-over) shows where the listener is attached.
import { EventEmitter } from "node:events";
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { PgPool, PgPoolClient } from "../src/index.ts";
import { createPgTTLStorage } from "../src/index.ts";

class FakeClient extends EventEmitter implements PgPoolClient {
	async query(): Promise<{ rows: Record<string, unknown>[]; rowCount: number }> {
		return { rows: [], rowCount: 0 };
	}
	release(): void {}
}

/** Emits `acquire` and then, before the caller's code can run, an `error` on the connection. */
class FatalOnHandOverPool extends EventEmitter implements PgPool {
	readonly client = new FakeClient();
	crashes = 0;
	connect(): Promise<PgPoolClient> {
		this.emit("acquire", this.client);
		try {
			this.client.emit("error", new Error("terminating connection due to administrator command"));
		} catch {
			this.crashes++; // an `error` with no listener throws: a real pool would crash the process
		}
		return Promise.resolve(this.client);
	}
}

describe("connections handed out by the pool", () => {
	it("have an error listener from the pool's acquire event on, before the driver uses them", async () => {
		const pool = new FatalOnHandOverPool();
		const storage = createPgTTLStorage({ pool, sweepIntervalMs: 0 });
		await storage.get(utf8("p"), utf8("c"));
		await storage.get(utf8("p"), utf8("c"));
		expect(pool.crashes).toBe(0);
		expect(pool.client.listenerCount("error")).toBe(1); // once per connection, not per query
		await storage.close();
	});

	it("a pool without events still works (the listener comes with the first query)", async () => {
		const pool = new FatalOnHandOverPool();
		const plain: PgPool = { connect: () => pool.connect() };
		const storage = createPgTTLStorage({ pool: plain, sweepIntervalMs: 0 });
		await storage.get(utf8("p"), utf8("c"));
		expect(pool.crashes).toBe(1); // the gap such a pool leaves: the first hand-over
		await storage.get(utf8("p"), utf8("c"));
		expect(pool.crashes).toBe(1);
		expect(pool.client.listenerCount("error")).toBe(1);
		await storage.close();
	});
});
