// cassandra-driver never re-sends a write on its own: every write statement carries the driver's
// retry policy (replacing the client's) and `isIdempotent: false` (no speculative execution).
import type { Client } from "cassandra-driver";
import { policies, types } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage } from "../src/index.ts";
import { CONDITIONAL_RETRY, WRITE_RETRY } from "../src/retry.ts";

// The runtime enum; the typings declare it under another name.
const { rethrow, retry } = (
	policies.retry.RetryPolicy as unknown as { retryDecision: { rethrow: number; retry: number } }
).retryDecision;
const c = types.consistencies;
const info = (nbRetry: number) =>
	({ query: "q", executionOptions: {}, nbRetry }) as unknown as policies.retry.OperationInfo;

describe("the write retry policies", () => {
	it("rethrow every read timeout, write timeout and request error, on the first try already", () => {
		for (const policy of [CONDITIONAL_RETRY, WRITE_RETRY]) {
			// The default policy retries this read timeout (enough replies, no data) once.
			expect(policy.onReadTimeout(info(0), c.serial, 2, 2, false).decision).toBe(rethrow);
			expect(policy.onWriteTimeout(info(0), c.quorum, 1, 2, "CAS").decision).toBe(rethrow);
			expect(policy.onWriteTimeout(info(0), c.quorum, 1, 2, "BATCH_LOG").decision).toBe(rethrow);
			expect(policy.onRequestError(info(0), c.quorum, new Error("reset")).decision).toBe(rethrow);
		}
	});

	it("send a plain write to the next host once after Unavailable, a lightweight transaction never", () => {
		expect(CONDITIONAL_RETRY.onUnavailable(info(0), c.quorum, 2, false).decision).toBe(rethrow);
		expect(CONDITIONAL_RETRY.onUnavailable(info(0), c.serial, 2, false).decision).toBe(rethrow);
		const once = WRITE_RETRY.onUnavailable(info(0), c.quorum, 2, false);
		expect(once).toMatchObject({ decision: retry, consistency: c.quorum, useCurrentHost: false });
		expect(WRITE_RETRY.onUnavailable(info(1), c.quorum, 2, false).decision).toBe(rethrow);
	});
});

describe("every statement that writes carries them", () => {
	it("insert, swap, delete, put, fenced put, putBatch: not idempotent, with the policy; reads: idempotent, the client's", async () => {
		const seen: Array<{ cql: string; options: Record<string, unknown> }> = [];
		const record = (cql: string, options: Record<string, unknown>) => {
			seen.push({ cql, options });
			return { rows: cql.includes(" IF ") ? [{ "[applied]": true }] : [] };
		};
		const client = {
			execute: async (cql: string, _params: unknown[], options: Record<string, unknown>) =>
				record(cql, options),
			batch: async (queries: Array<{ query: string }>, options: Record<string, unknown>) =>
				record(queries.map((q) => q.query).join("; "), options),
		} as unknown as Client;
		const storage = createCassandraTTLStorage({ client, keyspace: "ks" });
		const k = new Uint8Array([1]);
		const fence = { scope: new Uint8Array([9]), epoch: 1n };
		await storage.insertIfNotExists(k, k, k, 20);
		await storage.compareAndSwap(k, k, k, k, 0);
		await storage.compareAndDelete(k, k, k);
		await storage.put(k, k, k).catch(() => {}); // its rounds are the other tests' business
		await storage.put(k, k, k, 0, { fence }).catch(() => {});
		await storage.putBatch([{ pKey: k, cCols: k, value: k, fence }]).catch(() => {});
		await storage.get(k, k);
		const writes = seen.filter((s) => !/^\s*SELECT/i.test(s.cql));
		const reads = seen.filter((s) => /^\s*SELECT/i.test(s.cql));
		expect(writes.length).toBeGreaterThanOrEqual(5);
		expect(reads.length).toBeGreaterThanOrEqual(1);
		for (const w of writes) {
			expect(w.options.isIdempotent, w.cql).toBe(false);
			const policy = w.cql.includes(" IF ") ? CONDITIONAL_RETRY : WRITE_RETRY;
			expect(w.options.retry, w.cql).toBe(policy);
		}
		for (const r of reads) {
			expect(r.options.isIdempotent, r.cql).toBe(true);
			expect(r.options.retry, r.cql).toBeUndefined();
		}
	});
});
