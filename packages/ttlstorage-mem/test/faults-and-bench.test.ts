// withFaults and benchTTLStorage live in @vvm/ttlstorage/testing; they are exercised here because
// they need a real storage underneath and the contract package must not depend on a driver.
import { MockClock } from "@vvm/clock";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { benchTTLStorage, faults, formatBenchTable, withFaults } from "@vvm/ttlstorage/testing";
import { describe, expect, it } from "vitest";
import { createMemTTLStorage } from "../src/index.ts";

const p = utf8("p");
const k = utf8("k");
const v = utf8("v");

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
	try {
		await promise;
		return undefined;
	} catch (e) {
		return TTLStorageError.is(e) ? e.code : String(e);
	}
}

describe("withFaults", () => {
	it("fails chosen operations without reaching the storage, a limited number of times", async () => {
		const inner = createMemTTLStorage();
		const storage = withFaults(inner);
		storage.inject({ on: "insertIfNotExists", action: faults.fail(), times: 2 });
		expect(await codeOf(storage.insertIfNotExists(p, k, v, 5))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(await inner.get(p, k)).toBeUndefined();
		expect(await codeOf(storage.insertIfNotExists(p, k, v, 5))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(await storage.insertIfNotExists(p, k, v, 5)).toBe(true);
		expect(storage.count("insertIfNotExists")).toBe(3);
		expect(storage.calls.map((c) => c.callNumber)).toEqual([1, 2, 3]);
	});

	it("reports unknown outcomes, applied or not", async () => {
		const inner = createMemTTLStorage();
		const storage = withFaults(inner, {
			rules: [{ on: ["insertIfNotExists"], action: faults.unknownOutcome(true), times: 1 }],
		});
		expect(await codeOf(storage.insertIfNotExists(p, k, v, 5))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(await inner.get(p, k)).toEqual(v);
		storage.inject({ on: "compareAndSwap", action: faults.unknownOutcome(false) });
		expect(await codeOf(storage.compareAndSwap(p, k, v, utf8("w"), 5))).toBe(
			"TTLSTORAGE_OUTCOME_UNKNOWN",
		);
		expect(await inner.get(p, k)).toEqual(v);
	});

	it("delays on its clock, runs hooks, matches by predicate, and can be removed or cleared", async () => {
		const clock = new MockClock(0);
		const storage = withFaults(createMemTTLStorage({ clock }), { clock });
		const remove = storage.inject({ on: "get", action: faults.delay(500) });
		let done = false;
		const pending = storage.get(p, k).then(() => {
			done = true;
		});
		await Promise.resolve();
		expect(done).toBe(false);
		await clock.advanceAsync(500);
		await pending;
		expect(done).toBe(true);
		remove();
		const seen: string[] = [];
		storage.inject({
			on: "*",
			match: (call) => call.operation === "put",
			action: faults.hook((call) => {
				seen.push(`${call.operation}#${call.callNumber}`);
			}),
		});
		await storage.put(p, k, v);
		await storage.get(p, k);
		expect(seen).toEqual(["put#1"]);
		storage.clear();
		storage.inject({ on: "read", action: faults.fail("TTLSTORAGE_THROTTLED") });
		const iterate = async () => {
			for await (const _ of storage.read(p)) {
				// drain
			}
		};
		expect(await codeOf(iterate())).toBe("TTLSTORAGE_THROTTLED");
	});
});

describe("benchTTLStorage", () => {
	it("measures every operation and formats a table", async () => {
		const results = await benchTTLStorage(createMemTTLStorage(), {
			operations: 50,
			concurrency: [1, 4],
			extra: { "other store": (i) => createMemTTLStorage().put(utf8(`x${i}`), k, v) },
		});
		const ops = ["insertIfNotExists", "compareAndSwap", "get", "put", "other store"];
		expect(results.map((r) => `${r.operation}@${r.concurrency}`)).toEqual([
			...ops.map((o) => `${o}@1`),
			...ops.map((o) => `${o}@4`),
		]);
		for (const r of results) {
			expect(r.operations).toBe(50);
			expect(r.opsPerSec).toBeGreaterThan(0);
			expect(r.p99Ms).toBeGreaterThanOrEqual(r.p50Ms);
		}
		const table = formatBenchTable(results);
		expect(table.split("\n")).toHaveLength(12);
		expect(table).toContain("| compareAndSwap | 4 | 50 |");
	});
});
