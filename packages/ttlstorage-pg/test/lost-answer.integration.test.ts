// A write delivered after its timeout (the answer lost), on a real PostgreSQL through a proxy that
// reads the wire protocol: the driver reports OUTCOME_UNKNOWN (never "nothing written"), the
// statement runs and commits once, and nothing sends it again (node-postgres has no retries; the
// driver re-sends only a statement the server aborted with 40001/40P01).
import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createPgTTLStorage } from "../src/index.ts";
import { newPool, pgGate, pgSettings, usePgSchema } from "./pg-env.ts";
import { startPgLateProxy } from "./pg-late-proxy.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_lost", skip);
const run = `${process.pid}-${Date.now().toString(36)}`;

describe.skipIf(skip !== false)("a write whose answer was lost (PostgreSQL, wire proxy)", () => {
	it("a request delivered after its timeout (the answer lost) is OUTCOME_UNKNOWN, runs once, and is not re-sent", async () => {
		const { pool, schema } = fixture();
		const proxy = await startPgLateProxy({ host: pgSettings.host, port: pgSettings.port });
		const impatient = newPool({ host: "127.0.0.1", port: proxy.port, query_timeout: 300 });
		try {
			const lossy = createPgTTLStorage({ pool: impatient, schema, sweepIntervalMs: 0 });
			const direct = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
			const pKey = utf8(`lost/${run}`);
			const fence = { scope: utf8(`lost-scope/${run}`), epoch: 1n };
			await direct.raiseFence?.(fence.scope, 1n);
			const cases: Record<
				string,
				{ before?: string; run: (c: Uint8Array) => Promise<unknown>; after: string }
			> = {
				insertIfNotExists: {
					run: (c) => lossy.insertIfNotExists(pKey, c, utf8("new"), 60),
					after: "new",
				},
				compareAndSwap: {
					before: "old",
					run: (c) => lossy.compareAndSwap(pKey, c, utf8("old"), utf8("new"), 60),
					after: "new",
				},
				compareAndDelete: {
					before: "old",
					run: (c) => lossy.compareAndDelete(pKey, c, utf8("old")),
					after: "absent",
				},
				put: { before: "old", run: (c) => lossy.put(pKey, c, utf8("new"), 60), after: "new" },
				"fenced put": {
					before: "old",
					run: (c) => lossy.put(pKey, c, utf8("new"), 60, { fence }),
					after: "new",
				},
				putBatch: {
					run: (c) => lossy.putBatch([{ pKey, cCols: c, value: utf8("new"), ttlSeconds: 60 }]),
					after: "new",
				},
			};
			const stored = async (s: TTLStorage, c: Uint8Array) => {
				const v = await s.get(pKey, c);
				return v === undefined ? "absent" : fromUtf8(v);
			};
			for (const [op, c] of Object.entries(cases)) {
				await c.run(utf8(`warm-${op}`)); // prepared while answers still flow
				const cCols = utf8(`late-${op}`);
				if (c.before !== undefined) await direct.put(pKey, cCols, utf8(c.before), 60);
				const { held, answered } = proxy.arm();
				const before = proxy.statements();
				const outcome = c.run(cCols).then(
					(v) => `resolved ${String(v)}`,
					(e: unknown) => (TTLStorageError.is(e) ? e.code : String(e)),
				);
				await held;
				const code = await outcome;
				proxy.deliver();
				await answered;
				expect({
					op,
					code,
					statementsToServer: proxy.statements() - before,
					stored: await stored(direct, cCols),
				}).toEqual({
					op,
					code: "TTLSTORAGE_OUTCOME_UNKNOWN",
					statementsToServer: 1,
					stored: c.after,
				});
			}
		} finally {
			await impatient.end();
			await proxy.close();
		}
	});
});
