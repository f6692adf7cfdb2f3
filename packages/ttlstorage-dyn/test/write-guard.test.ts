// The driver, not the AWS SDK, decides whether a write is sent again: a real DynamoDBClient (its
// own retry middleware, default or custom) over a scripted request handler, no server.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage, TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage } from "../src/index.ts";

type Reply = { status: number; type?: string } | { error: string; syscall?: string };
const ok: Reply = { status: 200 };
const reset: Reply = { error: "ECONNRESET" };
const refused: Reply = { error: "ECONNREFUSED", syscall: "connect" };
/**
 * ECONNREFUSED on an open (kept-alive) connection: Linux ends a connection that timed out with the
 * last ICMP error it had (a port unreachable from a firewall's REJECT). The request was written.
 */
const refusedOnRead: Reply = { error: "ECONNREFUSED", syscall: "read" };
const throttled: Reply = { status: 400, type: "ThrottlingException" };
const conditionFailed: Reply = { status: 400, type: "ConditionalCheckFailedException" };
const internal: Reply = { status: 500, type: "InternalServerError" };
const unreadable: Reply = { status: 200, type: "<not json" };

/** A retry strategy that retries every error, 4 times, at once: only the driver's guard stops it. */
const retryEverything = {
	mode: "everything",
	acquireInitialRetryToken: async () => token(0),
	refreshRetryTokenForRetry: async (t: ReturnType<typeof token>) => {
		if (t.getRetryCount() >= 4) throw new Error("no more retries");
		return token(t.getRetryCount() + 1);
	},
	recordSuccess: () => {},
};
function token(n: number) {
	return { getRetryCount: () => n, getRetryDelay: () => 0 };
}

/** A client whose HTTP attempts get `replies` in order (the last one repeats); counts them. */
function scripted(replies: Reply[], retry: "default" | "everything" = "default") {
	const calls: string[] = [];
	const requestHandler = {
		handle: async (request: { headers: Record<string, string> }) => {
			const target = request.headers["x-amz-target"] ?? "";
			calls.push(target.slice(target.indexOf(".") + 1));
			const reply = replies[Math.min(calls.length - 1, replies.length - 1)] as Reply;
			if ("error" in reply) {
				throw Object.assign(new Error(`socket ${reply.error}`), {
					code: reply.error,
					...(reply.syscall === undefined ? {} : { syscall: reply.syscall }),
				});
			}
			const body =
				reply.type === undefined
					? "{}"
					: reply.type.startsWith("<")
						? reply.type
						: JSON.stringify({ __type: `com.amazonaws.dynamodb.v20120810#${reply.type}` });
			return {
				response: {
					statusCode: reply.status,
					headers: { "content-type": "application/x-amz-json-1.0" },
					body: new TextEncoder().encode(body),
				},
			};
		},
		updateHttpClientConfig: () => {},
		httpHandlerConfigs: () => ({}),
	};
	const client = new DynamoDBClient({
		region: "us-east-1",
		endpoint: "http://127.0.0.1:9",
		credentials: { accessKeyId: "k", secretAccessKey: "s" },
		maxAttempts: 5,
		requestHandler,
		...(retry === "everything" ? { retryStrategy: retryEverything } : {}),
	});
	const storage = createDynamoTTLStorage({ client, tableName: "tbl" });
	return { storage, calls };
}

const p = utf8("p");
const k = utf8("k");
const v = utf8("v");
const fence = { scope: utf8("scope"), epoch: 2n };
const writes: Record<string, (s: TTLStorage) => Promise<unknown>> = {
	insertIfNotExists: (s) => s.insertIfNotExists(p, k, v, 5),
	compareAndSwap: (s) => s.compareAndSwap(p, k, v, utf8("w"), 5),
	compareAndDelete: (s) => s.compareAndDelete(p, k, v),
	put: (s) => s.put(p, k, v, 5),
	"fenced put": (s) => s.put(p, k, v, 5, { fence }),
	putBatch: (s) => s.putBatch([{ pKey: p, cCols: k, value: v }]),
	"fenced putBatch": (s) => s.putBatch([{ pKey: p, cCols: k, value: v, fence }]),
};

async function outcome(run: Promise<unknown>): Promise<unknown> {
	try {
		return await run;
	} catch (error) {
		expect(TTLStorageError.is(error), String(error)).toBe(true);
		return (error as TTLStorageError).code as TTLStorageErrorCode;
	}
}

describe("a write whose attempt may have been applied is never sent again", () => {
	for (const [label, fault] of [
		["a reset connection (the answer lost)", reset],
		["a 500", internal],
		["an unreadable 200", unreadable],
		// Found by review of 98b2628: it counted as "never sent" whatever the system call.
		["ECONNREFUSED on the open connection (after a timeout)", refusedOnRead],
	] as const) {
		it(`${label}: OUTCOME_UNKNOWN after exactly one attempt, with the SDK's default retries (maxAttempts 5)`, async () => {
			for (const [op, run] of Object.entries(writes)) {
				const { storage, calls } = scripted([fault, ok]);
				expect(await outcome(run(storage)), op).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
				expect(calls, op).toHaveLength(1);
			}
		});
	}

	it("ECONNREFUSED on the open connection: an insert that landed is not sent again to answer false", async () => {
		const { storage, calls } = scripted([refusedOnRead, conditionFailed]);
		expect(await outcome(storage.insertIfNotExists(p, k, v, 5))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(calls).toHaveLength(1);
	});

	it("a retry strategy that retries every error cannot send it again either", async () => {
		for (const [op, run] of Object.entries(writes)) {
			const { storage, calls } = scripted([reset, ok], "everything");
			expect(await outcome(run(storage)), op).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			expect(calls, op).toHaveLength(1);
		}
	});

	it("the cause is the lost attempt's error, not the guard's", async () => {
		const { storage } = scripted([reset], "everything");
		const error = (await storage.put(p, k, v).catch((e: unknown) => e)) as TTLStorageError;
		expect((error.cause as { code?: string }).code).toBe("ECONNRESET");
		expect(error.message).toMatch(/ECONNRESET.*not re-sent/);
	});
});

describe("after attempts that provably wrote nothing, the SDK may send it again and its answer counts", () => {
	it("throttled, then applied: true; throttled, then a failed condition: false", async () => {
		const applied = scripted([throttled, ok], "everything");
		expect(await applied.storage.insertIfNotExists(p, k, v, 5)).toBe(true);
		expect(applied.calls).toEqual(["PutItem", "PutItem"]);
		const failed = scripted([throttled, conditionFailed], "everything");
		expect(await failed.storage.compareAndSwap(p, k, v, utf8("w"), 5)).toBe(false);
		// A conditional write is re-sent by the driver, rebuilt, never by the SDK: the strategy that
		// would re-send even a failed condition gets no further attempt after it.
		expect(failed.calls).toHaveLength(2);
	});

	it("refused connection, then applied: resolves", async () => {
		const { storage, calls } = scripted([refused, ok], "everything");
		await storage.put(p, k, v);
		expect(calls).toHaveLength(2);
	});

	it("throttled, then the answer lost: OUTCOME_UNKNOWN, and no third attempt", async () => {
		const { storage, calls } = scripted([throttled, reset, ok], "everything");
		expect(await outcome(storage.compareAndDelete(p, k, v))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(calls).toHaveLength(2);
	});

	it("refused every time: UNAVAILABLE (nothing was written)", async () => {
		const { storage, calls } = scripted([refused], "everything");
		expect(await outcome(storage.insertIfNotExists(p, k, v, 5))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(calls).toHaveLength(5);
	});
});

describe("reads are still retried by the client", () => {
	it("a get after a reset connection is sent again and resolves", async () => {
		const { storage, calls } = scripted([reset, ok], "everything");
		expect(await storage.get(p, k)).toBeUndefined();
		expect(calls).toEqual(["GetItem", "GetItem"]);
	});
});
