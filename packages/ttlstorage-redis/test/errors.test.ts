import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createRedisTTLStorage, mapRedisError } from "../src/index.ts";
import { fakeClient, replyError } from "./fake-client.ts";

const p = utf8("p");
const c = utf8("c");
const v = utf8("v");

function named(name: string, message: string): Error {
	const error = new Error(message);
	error.name = name;
	return error;
}

async function codeOf(run: () => Promise<unknown>): Promise<string> {
	try {
		await run();
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : `foreign: ${String(error)}`;
	}
}

describe("mapRedisError", () => {
	const cases: [string, Error, string, string][] = [
		// [label, error, code of a write, code of a read]
		[
			"connection closed in flight",
			new Error("Connection is closed."),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
		],
		[
			"flushed at the first close (maxRetriesPerRequest 0)",
			named("MaxRetriesPerRequestError", "Reached the max retries per request limit (which is 0)."),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
		],
		["commandTimeout", new Error("Command timed out"), "OUTCOME_UNKNOWN", "UNAVAILABLE"],
		[
			"socket reset",
			Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }),
			"OUTCOME_UNKNOWN",
			"UNAVAILABLE",
		],
		[
			"not sent (no offline queue)",
			new Error("Stream isn't writeable and enableOfflineQueue options is false"),
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"busy server",
			replyError("BUSY Redis is busy running a script."),
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"loading",
			replyError("LOADING Redis is loading the dataset in memory"),
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"replica",
			replyError("READONLY You can't write against a read only replica."),
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"persistence failing",
			replyError("MISCONF Errors writing to the AOF file"),
			"UNAVAILABLE",
			"UNAVAILABLE",
		],
		[
			"out of memory",
			replyError("OOM command not allowed when used memory > 'maxmemory'."),
			"THROTTLED",
			"THROTTLED",
		],
		["authentication", replyError("NOAUTH Authentication required."), "FAILED", "FAILED"],
		["permissions", replyError("NOPERM this user has no permissions"), "FAILED", "FAILED"],
		[
			"wrong type",
			replyError("WRONGTYPE Operation against a key holding the wrong kind of value"),
			"FAILED",
			"FAILED",
		],
		// Not a reply: a client error on a command that may have been sent (a ParserError).
		["anything else", new Error("something odd"), "OUTCOME_UNKNOWN", "FAILED"],
	];
	for (const [label, error, write, read] of cases) {
		it(`${label}: ${write} on a write, ${read} on a read`, () => {
			const w = mapRedisError(error, { operation: "put", phase: "write" });
			const r = mapRedisError(error, { operation: "get", phase: "read" });
			expect([w.code, r.code]).toEqual([`TTLSTORAGE_${write}`, `TTLSTORAGE_${read}`]);
			expect(w.cause).toBe(error);
			expect(w.message).toContain("[@vvm/ttlstorage-redis] put:");
		});
	}
	it("passes a TTLStorageError through and says to re-read on an unknown outcome", () => {
		const e = new TTLStorageError("TTLSTORAGE_FENCED", "x");
		expect(mapRedisError(e, { operation: "put", phase: "write" })).toBe(e);
		expect(
			mapRedisError(new Error("Connection is closed."), { operation: "put", phase: "write" })
				.message,
		).toMatch(/re-read before deciding/);
	});
});

describe("sending scripts", () => {
	it("after NOSCRIPT (nothing ran) sends the script's text once with EVAL", async () => {
		const client = fakeClient();
		client.replies.push(replyError("NOSCRIPT No matching script."), [1]);
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		await s.put(p, c, v);
		expect(client.sent.map((x) => x.command)).toEqual(["EVALSHA", "EVAL"]);
		// The same keys and arguments, the text in place of the SHA.
		expect(client.sent[1]?.args.slice(1)).toEqual(client.sent[0]?.args.slice(1));
		expect(String(client.sent[1]?.args[0])).toMatch(/^#!lua\n/);
	});

	it("a lost answer of EVALSHA is OUTCOME_UNKNOWN and is never sent again", async () => {
		const client = fakeClient();
		client.replies.push(new Error("Connection is closed."));
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await codeOf(() => s.compareAndSwap(p, c, v, v, 10))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(client.sent.map((x) => x.command)).toEqual(["EVALSHA"]);
	});

	it("a lost answer of a read is UNAVAILABLE", async () => {
		const client = fakeClient();
		client.replies.push(new Error("Command timed out"));
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await codeOf(() => s.get(p, c))).toBe("TTLSTORAGE_UNAVAILABLE");
	});

	it("NOSCRIPT, then the connection went down: UNAVAILABLE, the script is not sent", async () => {
		const client = fakeClient();
		client.replies.push(replyError("NOSCRIPT No matching script."));
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		const write = s.put(p, c, v);
		client.status = "reconnecting";
		expect(await codeOf(() => write)).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(client.sent.map((x) => x.command)).toEqual(["EVALSHA"]);
	});

	it("a fenced reply names the stored epoch; a condition reply is false", async () => {
		const client = fakeClient();
		client.replies.push([-1, Buffer.from("1"), Buffer.from("5")], [0]);
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		const fence = { scope: utf8("s"), epoch: 3n };
		await expect(s.put(p, c, v, 0, { fence })).rejects.toMatchObject({
			code: "TTLSTORAGE_FENCED",
			message: expect.stringContaining(`superseded by epoch ${(1n << 32n) + 5n}`),
		});
		expect(await s.insertIfNotExists(p, c, v, 0, { fence })).toBe(false);
		// The epoch goes as two 32-bit halves (Lua numbers are doubles), with a stamp.
		const args = client.sent[0]?.args.map((a) => (Buffer.isBuffer(a) ? a.toString() : a));
		expect(args?.slice(-9, -1)).toEqual([
			"P",
			"c",
			"v",
			0,
			1,
			"0",
			"3",
			expect.stringMatching(/^\d{16,}$/),
		]);
	});

	it("with waitForReplicas, a write that too few replicas acknowledged is OUTCOME_UNKNOWN", async () => {
		const client = fakeClient();
		client.replies.push([1], 0, [0], [1], 2);
		const s = createRedisTTLStorage({
			client,
			sweepIntervalMs: 0,
			waitForReplicas: { replicas: 2, timeoutMs: 50 },
		});
		expect(await codeOf(() => s.put(p, c, v))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		// Nothing written: no WAIT. Written and acknowledged by both: resolved.
		expect(await s.insertIfNotExists(p, c, v, 0)).toBe(false);
		expect(await s.insertIfNotExists(p, c, v, 0)).toBe(true);
		expect(client.sent.map((x) => x.command)).toEqual([
			"EVALSHA",
			"WAIT",
			"EVALSHA",
			"EVALSHA",
			"WAIT",
		]);
		expect(client.sent[1]?.args).toEqual([2, 50]);
	});

	it("an unexpected reply is FAILED", async () => {
		const client = fakeClient();
		client.replies.push("what");
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await codeOf(() => s.put(p, c, v))).toBe("TTLSTORAGE_FAILED");
	});
});
