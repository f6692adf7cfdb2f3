// A PLog write whose answer was lost can land later (a timed-out request applied late). Its
// offset must not go to the next command: at level 2 the two puts would overwrite each other
// (an acknowledged command lost, or two events at one offset). Found by the simulator
// (apps/sim, seeds 3978 and 9348 of the epoch profile at level 2).
import type { BatchItem, Bytes, TTLStorage, WriteOptions } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import { CpError } from "../src/errors.ts";
import { PKEY_PREFIX_PLOG } from "../src/keys.ts";
import { checkCpStorage } from "../src/testing/checker.ts";
import { prefixOf } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";

/**
 * mem whose first PLog put (or batch holding a PLog entry) fails with OUTCOME_UNKNOWN at once and
 * is applied only when `land()` is called: a request that timed out and arrives late.
 */
function lateFirstPLogWrite(inner: TTLStorage) {
	let late: (() => Promise<void>) | undefined;
	let armed = true;
	const isPLog = (p: Bytes) => prefixOf(p) === PKEY_PREFIX_PLOG;
	const unknown = () =>
		new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "timed out; the request may still land");
	const storage: TTLStorage = {
		...(inner.supports === undefined ? {} : { supports: inner.supports }),
		raiseFence: (s: Bytes, e?: bigint) =>
			(inner.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(s, e),
		insertIfNotExists: (p, c, v, ttl, o?: WriteOptions) => inner.insertIfNotExists(p, c, v, ttl, o),
		compareAndSwap: (p, c, ov, nv, ttl, o?: WriteOptions) =>
			inner.compareAndSwap(p, c, ov, nv, ttl, o),
		compareAndDelete: (p, c, v, o?: WriteOptions) => inner.compareAndDelete(p, c, v, o),
		get: (p, c) => inner.get(p, c),
		read: (p, range) => inner.read(p, range),
		queryTTL: (p, c) => inner.queryTTL(p, c),
		put: async (p, c, v, ttl, o?: WriteOptions) => {
			if (armed && isPLog(p)) {
				armed = false;
				late = () => inner.put(p, c, v, ttl, o);
				throw unknown();
			}
			return inner.put(p, c, v, ttl, o);
		},
		putBatch: async (items: readonly BatchItem[]) => {
			if (armed && items.some((i) => isPLog(i.pKey))) {
				armed = false;
				late = () => inner.putBatch(items);
				throw unknown();
			}
			return inner.putBatch(items);
		},
		close: async () => {},
		[Symbol.asyncDispose]: async () => {},
	};
	return {
		storage,
		land: async () => {
			await late?.();
		},
		get armed() {
			return armed;
		},
	};
}

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

describe("a PLog write whose answer was lost, landing after the next command", () => {
	it.each([
		{ atomicBatches: false, label: "event then effects" },
		{ atomicBatches: true, label: "one batch" },
	])(
		"level 2 ($label): the next command gets another offset, and both commands stand",
		async ({ atomicBatches }) => {
			const base = createMemTTLStorage();
			const link = lateFirstPLogWrite(base);
			const cp = createCommandProcessor({
				storage: link.storage,
				appId: 1,
				partitions: 1,
				trustLevel: 2,
				atomicBatches,
				coalesceWrites: false,
				sequencerRetry: { baseDelayMs: 1, maxDelayMs: 5 },
			});
			processors.push(cp);
			const p = cp.deploy(0, { lease: { epoch: 10n, valid: () => true } });
			await p.ready();
			const first = await p
				.createRecord({ wsid: 1001, table: CUSTOMER, fields: { name: "Ada" }, idempotencyKey: "a" })
				.then(
					() => "ok",
					(e: unknown) => (CpError.is(e) ? e.committed : String(e)),
				);
			expect(first).toBe("unknown");
			expect(link.armed).toBe(false);
			// The partition re-actualizes (settling the first write), then the next command, then
			// the first one's request lands, late.
			await p.ready();
			const second = await p.createRecord({ wsid: 1001, table: CUSTOMER, fields: { name: "Bob" } });
			await link.land();
			// The first command's retry with its key answers its result (it was applied) and writes
			// nothing more.
			const retry = await p.createRecord({
				wsid: 1001,
				table: CUSTOMER,
				fields: { name: "Ada" },
				idempotencyKey: "a",
			});
			expect(retry.replayed).toBe(true);
			expect(retry.plogOffset).not.toBe(second.plogOffset);
			await cp.close();
			const report = await checkCpStorage({
				storage: base,
				appId: 1,
				partitions: 1,
				acknowledged: [
					{ wsid: 1001, result: second },
					{ wsid: 1001, result: retry },
				],
			});
			expect(report.problems).toEqual([]);
			expect(report.events).toBe(2);
		},
	);
});
