// A batch is one script whose keys and arguments are the arguments of one client call: its size is
// bounded before any I/O, and an error thrown before the client took a command is "not sent",
// never OUTCOME_UNKNOWN. No server: the fake client.
import type { BatchItem } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { RedisArg } from "../src/index.ts";
import { createRedisTTLStorage, MAX_REDIS_BATCH_ITEMS } from "../src/index.ts";
import { fakeClient } from "./fake-client.ts";

const batch = (n: number): BatchItem[] =>
	Array.from({ length: n }, (_, i) => ({
		pKey: utf8("p"),
		cCols: utf8(`c${i}`),
		value: utf8("v"),
		fence: { scope: utf8(`s${i}`), epoch: 1n },
	}));

async function outcome(run: () => Promise<unknown>): Promise<string> {
	try {
		await run();
		return "resolved";
	} catch (error) {
		if (TTLStorageError.is(error)) return `${error.code}: ${error.message}`;
		return `${(error as Error).name}: ${(error as Error).message}`;
	}
}

describe("batch size", () => {
	// Found by review: 30 000 items (about 330 000 arguments) overflowed the argument spread of the
	// client call inside the driver, before anything was sent, and was reported OUTCOME_UNKNOWN.
	it("a batch above MAX_REDIS_BATCH_ITEMS is a RangeError before any I/O", async () => {
		const client = fakeClient();
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await outcome(() => s.putBatch(batch(30_000)))).toBe(
			`RangeError: [@vvm/ttlstorage-redis] putBatch has 30000 items; the limit is ${MAX_REDIS_BATCH_ITEMS} (one script each: split the batch)`,
		);
		expect(await outcome(() => s.putBatchIf(batch(MAX_REDIS_BATCH_ITEMS + 1)))).toMatch(
			/^RangeError: .*putBatchIf has 5001 items; the limit is 5000/,
		);
		expect(client.sent).toEqual([]);
		await s.close();
	});

	it("a batch of MAX_REDIS_BATCH_ITEMS, each under its own fence, is sent as one script", async () => {
		const client = fakeClient();
		client.replies.push([1]);
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await outcome(() => s.putBatch(batch(MAX_REDIS_BATCH_ITEMS)))).toBe("resolved");
		expect(client.sent.map((c) => [c.command, c.args.length])).toEqual([
			// sha, key count, the index + a fence and two keys per item, 3 + 9 per item
			["EVALSHA", 2 + (1 + 3 * MAX_REDIS_BATCH_ITEMS) + (3 + 9 * MAX_REDIS_BATCH_ITEMS)],
		]);
		await s.close();
	});
});

describe("an error thrown before the client took the command", () => {
	// A call whose argument spread overflows, or a client that refuses its arguments, throws before
	// anything is written to the connection: the old mapping called it OUTCOME_UNKNOWN.
	it("is FAILED with nothing sent, never OUTCOME_UNKNOWN, for every write", async () => {
		const client = fakeClient();
		const sent: string[] = [];
		client.callBuffer = (command: string, ..._args: RedisArg[]): Promise<unknown> => {
			sent.push(command);
			throw new RangeError("Maximum call stack size exceeded");
		};
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		const [p, c, v] = [utf8("p"), utf8("c"), utf8("v")];
		const writes: (() => Promise<unknown>)[] = [
			() => s.put(p, c, v),
			() => s.insertIfNotExists(p, c, v, 10),
			() => s.compareAndSwap(p, c, v, v, 10),
			() => s.compareAndDelete(p, c, v),
			() => s.putBatch(batch(3)),
			() => s.putBatchIf(batch(3)),
			() => s.raiseFence(utf8("s")),
		];
		for (const write of writes)
			expect(await outcome(write)).toMatch(
				/^TTLSTORAGE_FAILED: .* the EVALSHA could not be handed to the client \(RangeError: Maximum call stack size exceeded\); nothing was sent or written$/,
			);
		expect(sent).toEqual(Array(writes.length).fill("EVALSHA")); // once each: never an EVAL after it
		await s.close();
	});
});
