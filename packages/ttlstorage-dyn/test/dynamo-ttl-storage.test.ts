// Our own logic, with a stubbed `client.send`: error mapping, the one-conditional-write rule,
// retried conditional writes, putBatch chunking and retries, the item layout, range queries.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { MockClock, systemClock } from "@vvm/clock";
import type { TTLStorage, TTLStorageErrorCode } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { DynamoTTLStorageOptions } from "../src/index.ts";
import { createDynamoTTLStorage } from "../src/index.ts";

type Input = Record<string, unknown>;
interface Sent {
	readonly command: string;
	readonly input: Input;
	readonly signal: AbortSignal | undefined;
}
type Responder = (sent: Sent, n: number) => unknown;

function stubClient(respond: Responder = () => ({})): { client: DynamoDBClient; sent: Sent[] } {
	const sent: Sent[] = [];
	const client = {
		send: async (
			cmd: { constructor: { name: string }; input: Input },
			opts?: { abortSignal?: AbortSignal },
		) => {
			const s = { command: cmd.constructor.name, input: cmd.input, signal: opts?.abortSignal };
			sent.push(s);
			return respond(s, sent.length);
		},
		destroy: () => {
			throw new Error("the storage must not destroy the injected client");
		},
	};
	return { client: client as unknown as DynamoDBClient, sent };
}

function sdkError(fields: Record<string, unknown>): Error {
	return Object.assign(new Error(String(fields.message ?? fields.name ?? "error")), fields);
}
const service = (name: string, status: number, extra: Record<string, unknown> = {}) =>
	sdkError({
		name,
		$fault: status >= 500 ? "server" : "client",
		$metadata: { httpStatusCode: status, attempts: 1 },
		...extra,
	});
const network = (code: string, name = "Error", attempts = 1, syscall?: string) =>
	sdkError({
		name,
		code,
		message: `socket ${code}`,
		$metadata: { attempts },
		...(syscall === undefined ? {} : { syscall }),
	});

const p = utf8("p");
const k = utf8("k");
const v = utf8("v");
const NOW = 1_700_000_000_123;

function make(
	respond: Responder,
	extra: Partial<DynamoTTLStorageOptions> = {},
): { storage: TTLStorage; sent: Sent[]; clock: MockClock } {
	const { client, sent } = stubClient(respond);
	const clock = new MockClock(NOW);
	const storage = createDynamoTTLStorage({ client, tableName: "tbl", clock, ...extra });
	return { storage, sent, clock };
}

async function codeOf(p: Promise<unknown>): Promise<TTLStorageErrorCode | "resolved"> {
	try {
		await p;
		return "resolved";
	} catch (error) {
		expect(TTLStorageError.is(error), String(error)).toBe(true);
		return (error as TTLStorageError).code;
	}
}

const fence = { scope: utf8("scope"), epoch: 3n };
const ops: Record<string, [writes: boolean, run: (s: TTLStorage) => Promise<unknown>]> = {
	insertIfNotExists: [true, (s) => s.insertIfNotExists(p, k, v, 5)],
	compareAndSwap: [true, (s) => s.compareAndSwap(p, k, v, v, 5)],
	compareAndDelete: [true, (s) => s.compareAndDelete(p, k, v)],
	"fenced compareAndSwap": [true, (s) => s.compareAndSwap(p, k, v, v, 5, { fence })],
	put: [true, (s) => s.put(p, k, v, 5)],
	"fenced put": [true, (s) => s.put(p, k, v, 5, { fence })],
	putBatch: [true, (s) => s.putBatch([{ pKey: p, cCols: k, value: v }])],
	"fenced putBatch": [true, (s) => s.putBatch([{ pKey: p, cCols: k, value: v, fence }])],
	get: [false, (s) => s.get(p, k)],
	queryTTL: [false, (s) => s.queryTTL(p, k)],
	read: [
		false,
		async (s) => {
			for await (const _ of s.read(p));
		},
	],
};

const errors: Array<[string, () => Error, TTLStorageErrorCode, TTLStorageErrorCode]> = [
	// [label, error, code on a write (conditional or not, fenced or not), code on a read]
	[
		"throttled (provisioned)",
		() => service("ProvisionedThroughputExceededException", 400),
		"TTLSTORAGE_THROTTLED",
		"TTLSTORAGE_THROTTLED",
	],
	[
		"throttled (ThrottlingException)",
		() => service("ThrottlingException", 400),
		"TTLSTORAGE_THROTTLED",
		"TTLSTORAGE_THROTTLED",
	],
	[
		"throttled (RequestLimitExceeded)",
		() => service("RequestLimitExceeded", 400),
		"TTLSTORAGE_THROTTLED",
		"TTLSTORAGE_THROTTLED",
	],
	[
		// The write guard let the SDK re-send only after attempts DynamoDB refused (4xx).
		"throttled after SDK re-sends of refused attempts",
		() => service("ThrottlingException", 400, { $metadata: { httpStatusCode: 400, attempts: 3 } }),
		"TTLSTORAGE_THROTTLED",
		"TTLSTORAGE_THROTTLED",
	],
	[
		"503 (the request may have been applied)",
		() => service("ServiceUnavailable", 503),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"a 4xx that says the server timed out",
		() => service("RequestTimeoutException", 400),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"validation after an SDK retry (not transient: the last answer stands)",
		() => service("ValidationException", 400, { $metadata: { httpStatusCode: 400, attempts: 2 } }),
		"TTLSTORAGE_FAILED",
		"TTLSTORAGE_FAILED",
	],
	[
		"connection refused",
		() => network("ECONNREFUSED", "Error", 1, "connect"),
		"TTLSTORAGE_UNAVAILABLE",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		// Linux ends a kept-alive connection that timed out with the last ICMP error it had: the
		// request was written, and may have been applied.
		"connection refused on an open socket (after a timeout)",
		() => network("ECONNREFUSED", "Error", 1, "read"),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"host not found",
		() => network("ENOTFOUND"),
		"TTLSTORAGE_UNAVAILABLE",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"host unreachable when connecting",
		() => sdkError({ code: "EHOSTUNREACH", syscall: "connect", message: "connect EHOSTUNREACH" }),
		"TTLSTORAGE_UNAVAILABLE",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"host unreachable on an open connection (the request may have been sent)",
		() => sdkError({ code: "EHOSTUNREACH", syscall: "read", message: "read EHOSTUNREACH" }),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"connection timed out on an open connection",
		() => network("ETIMEDOUT"),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"request timeout",
		() => network("ETIMEDOUT", "TimeoutError"),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"socket reset",
		() => network("ECONNRESET", "TimeoutError"),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"aborted",
		() => sdkError({ name: "AbortError", message: "Request aborted" }),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"no $metadata at all",
		() => new Error("something broke in transit"),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"500 InternalServerError",
		() => service("InternalServerError", 500),
		"TTLSTORAGE_OUTCOME_UNKNOWN",
		"TTLSTORAGE_UNAVAILABLE",
	],
	[
		"validation",
		() => service("ValidationException", 400),
		"TTLSTORAGE_FAILED",
		"TTLSTORAGE_FAILED",
	],
	[
		"missing table",
		() => service("ResourceNotFoundException", 400),
		"TTLSTORAGE_FAILED",
		"TTLSTORAGE_FAILED",
	],
	[
		"bad credentials",
		() => sdkError({ name: "CredentialsProviderError" }),
		"TTLSTORAGE_FAILED",
		"TTLSTORAGE_FAILED",
	],
];

describe("error mapping", () => {
	for (const [label, error, onWrite, onRead] of errors) {
		it(`${label} → ${onWrite} on writes, ${onRead} on reads`, async () => {
			for (const [op, [writes, run]] of Object.entries(ops)) {
				const { storage } = make(() => {
					throw error();
				});
				expect(await codeOf(run(storage)), op).toBe(writes ? onWrite : onRead);
			}
		});
	}

	it("ConditionalCheckFailedException → false", async () => {
		for (const op of ["insertIfNotExists", "compareAndSwap", "compareAndDelete"] as const) {
			const { storage } = make(() => {
				throw service("ConditionalCheckFailedException", 400);
			});
			expect(
				await (ops[op] as [boolean, (s: TTLStorage) => Promise<unknown>])[1](storage),
				op,
			).toBe(false);
		}
	});

	it("keeps the SDK error as cause and prefixes the message with the driver", async () => {
		const cause = service("ValidationException", 400, { message: "bad expression" });
		const { storage } = make(() => {
			throw cause;
		});
		const error = (await storage.get(p, k).catch((e: unknown) => e)) as TTLStorageError;
		expect(error.cause).toBe(cause);
		expect(error.message).toBe("[@vvm/ttlstorage-dyn] get: ValidationException: bad expression");
	});
});

describe("conditional writes", () => {
	it("each is exactly one conditional write comparing the stored expiry with the clock (never read-then-write)", async () => {
		const { storage, sent } = make(() => ({}));
		expect(await storage.insertIfNotExists(p, k, v, 5)).toBe(true);
		expect(await storage.compareAndSwap(p, k, v, utf8("w"), 0)).toBe(true);
		expect(await storage.compareAndDelete(p, k, utf8("w"))).toBe(true);
		expect(sent.map((s) => s.command)).toEqual([
			"PutItemCommand",
			"PutItemCommand",
			"DeleteItemCommand",
		]);
		const [insert, cas, del] = sent.map((s) => s.input);
		expect(insert?.ConditionExpression).toBe(
			"attribute_not_exists(#pk) OR (#exp > :zero AND #exp <= :now)",
		);
		expect(cas?.ConditionExpression).toBe("#v = :old AND (#exp = :zero OR #exp > :now)");
		expect(del?.ConditionExpression).toBe("#v = :old AND (#exp = :zero OR #exp > :now)");
		for (const input of [insert, cas, del]) {
			expect(input?.ExpressionAttributeValues).toMatchObject({ ":now": { N: String(NOW) } });
		}
		expect(cas?.ExpressionAttributeValues).toMatchObject({ ":old": { B: v } });
	});

	it("writes the item layout: 0x00-prefixed sort key, ms expiry, native TTL with grace only when TTL > 0", async () => {
		const { storage, sent } = make(() => ({}), { reapGraceSeconds: 100 });
		await storage.insertIfNotExists(p, new Uint8Array(), v, 5);
		await storage.compareAndSwap(p, new Uint8Array(), v, v, 0);
		const withTTL = sent[0]?.input.Item as Record<string, { B?: Uint8Array; N?: string }>;
		expect([...(withTTL.ck?.B ?? [])]).toEqual([0]);
		expect(withTTL.pk?.B).toEqual(p);
		expect(withTTL.exp?.N).toBe(String(NOW + 5_000));
		expect(withTTL.ttl?.N).toBe(String(Math.ceil((NOW + 5_000) / 1000) + 100));
		const noTTL = sent[1]?.input.Item as Record<string, unknown>;
		expect(noTTL.exp).toEqual({ N: "0" });
		expect(noTTL.ttl).toBeUndefined();
	});

	it("a fenced put whose condition failed was superseded: it resolves", async () => {
		const { storage } = make(() => {
			throw service("ConditionalCheckFailedException", 400);
		});
		await expect(storage.put(p, k, v, 5, { fence })).resolves.toBeUndefined();
		await expect(
			storage.putBatch([{ pKey: p, cCols: k, value: v, fence }]),
		).resolves.toBeUndefined();
	});
});

describe("reads", () => {
	it("get and queryTTL are strongly consistent and filter expired items with the clock", async () => {
		let exp = NOW + 10_000;
		const { storage, sent, clock } = make(() => ({
			Item: { v: { B: v }, exp: { N: String(exp) } },
		}));
		expect(await storage.get(p, k)).toEqual(v);
		expect(await storage.queryTTL(p, k)).toBe(10);
		clock.advance(10_000);
		expect(await storage.get(p, k)).toBeUndefined();
		expect(await storage.queryTTL(p, k)).toBeUndefined();
		exp = 0;
		expect(await storage.queryTTL(p, k)).toBe(0);
		expect(sent.every((s) => s.input.ConsistentRead === true)).toBe(true);
	});

	it("read builds one key condition per bound shape, drops the inclusive BETWEEN end, and pages", async () => {
		const item = (c: number[], exp = 0) => ({
			ck: { B: new Uint8Array([0, ...c]) },
			v: { B: v },
			exp: { N: String(exp) },
		});
		const { storage, sent } = make((s) => {
			if (s.input.ExclusiveStartKey === undefined) {
				return { Items: [item([1]), item([2], NOW - 1)], LastEvaluatedKey: { pk: {}, ck: {} } };
			}
			return { Items: [item([3]), item([4])] };
		});
		const collect = async (range: { from?: Uint8Array; to?: Uint8Array }) => {
			const out: number[][] = [];
			for await (const r of storage.read(p, range)) out.push([...r.cCols]);
			return out;
		};
		const b = (...x: number[]) => new Uint8Array(x);
		expect(await collect({})).toEqual([[1], [3], [4]]);
		expect(sent[0]?.input.KeyConditionExpression).toBe("#pk = :pk");
		expect(sent).toHaveLength(2);
		expect(await collect({ from: b(1) })).toEqual([[1], [3], [4]]);
		expect(sent[2]?.input.KeyConditionExpression).toBe("#pk = :pk AND #ck >= :from");
		// The stub ignores bounds; the driver still never yields cCols >= to.
		expect(await collect({ to: b(4) })).toEqual([[1], [3]]);
		expect(sent[4]?.input.KeyConditionExpression).toBe("#pk = :pk AND #ck < :to");
		expect(await collect({ from: b(1), to: b(4) })).toEqual([[1], [3]]);
		expect(sent[6]?.input.KeyConditionExpression).toBe("#pk = :pk AND #ck BETWEEN :from AND :to");
		expect(sent[6]?.input.ExpressionAttributeValues).toMatchObject({
			":from": { B: b(0, 1) },
			":to": { B: b(0, 4) },
		});
		const before = sent.length;
		expect(await collect({ from: b(4), to: b(1) })).toEqual([]);
		expect(sent).toHaveLength(before); // an empty range sends nothing (BETWEEN would reject it)
		expect(sent.every((s) => s.input.ConsistentRead === true)).toBe(true);
	});
});

describe("putBatch", () => {
	const items = (n: number, key = (i: number) => `c${i}`) =>
		Array.from({ length: n }, (_, i) => ({ pKey: p, cCols: utf8(key(i)), value: utf8(`v${i}`) }));
	const writes = (s: Sent) => (s.input.RequestItems as Record<string, unknown[]>).tbl ?? [];

	it("splits into chunks of 25", async () => {
		const { storage, sent } = make(() => ({}));
		await storage.putBatch(items(60));
		expect(sent.map((s) => writes(s).length)).toEqual([25, 25, 10]);
		await storage.putBatch([]);
		expect(sent).toHaveLength(3);
	});

	it("sends each key once, the last item winning", async () => {
		const { storage, sent } = make(() => ({}));
		await storage.putBatch(items(30, (i) => `c${i % 10}`));
		expect(sent).toHaveLength(1);
		const sentValues = writes(sent[0] as Sent).map((w) =>
			new TextDecoder().decode(
				(w as { PutRequest: { Item: { v: { B: Uint8Array } } } }).PutRequest.Item.v.B,
			),
		);
		expect(sentValues).toEqual(Array.from({ length: 10 }, (_, i) => `v${i + 20}`));
	});

	it("retries UnprocessedItems until they are all written", async () => {
		const { storage, sent } = make((s, n) => {
			const w = writes(s);
			// Twice, DynamoDB leaves the last 5 items of the request unprocessed.
			return n <= 2 ? { UnprocessedItems: { tbl: w.slice(-5) } } : {};
		});
		await storage.putBatch(items(20));
		expect(sent.map((s) => writes(s).length)).toEqual([20, 5, 5]);
	});

	it("rejects with TTLSTORAGE_UNAVAILABLE when items stay unprocessed past the deadline", async () => {
		const { storage, sent } = make((s) => ({ UnprocessedItems: { tbl: writes(s) } }), {
			batchDeadlineMs: 150,
		});
		expect(await codeOf(storage.putBatch(items(3)))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(sent.length).toBeGreaterThan(1);
	});

	it('once some items were written, a failure that would say "nothing written" is OUTCOME_UNKNOWN', async () => {
		// The second chunk's connection is refused after the first chunk was stored.
		const refusedSecond = make((_s, n) => {
			if (n === 2) throw network("ECONNREFUSED", "Error", 1, "connect");
			return {};
		});
		expect(await codeOf(refusedSecond.storage.putBatch(items(30)))).toBe(
			"TTLSTORAGE_OUTCOME_UNKNOWN",
		);
		// The first request stored 2 of 3 items; the last one stays unprocessed past the deadline.
		const partly = make((s) => ({ UnprocessedItems: { tbl: writes(s).slice(-1) } }), {
			batchDeadlineMs: 150,
		});
		expect(await codeOf(partly.storage.putBatch(items(3)))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		// Refused before anything was written: nothing was.
		const refusedFirst = make(() => {
			throw network("ECONNREFUSED", "Error", 1, "connect");
		});
		expect(await codeOf(refusedFirst.storage.putBatch(items(30)))).toBe("TTLSTORAGE_UNAVAILABLE");
	});
});

describe("lifecycle and options", () => {
	it("close marks the storage closed without destroying the client", async () => {
		const { storage, sent } = make(() => ({}));
		await storage.close();
		await storage.close();
		expect(await codeOf(storage.get(p, k))).toBe("TTLSTORAGE_CLOSED");
		expect(await codeOf(storage.insertIfNotExists(p, k, v, 1))).toBe("TTLSTORAGE_CLOSED");
		expect(sent).toEqual([]);
	});

	it("bounds every request with an abort signal unless requestTimeoutMs is 0", async () => {
		const a = make(() => ({}));
		await a.storage.get(p, k);
		expect(a.sent[0]?.signal).toBeInstanceOf(AbortSignal);
		const b = make(() => ({}), { requestTimeoutMs: 0 });
		await b.storage.get(p, k);
		expect(b.sent[0]?.signal).toBeUndefined();
	});

	it("rejects bad options", () => {
		const { client } = stubClient();
		expect(() => createDynamoTTLStorage({ client, tableName: "" })).toThrow(RangeError);
		expect(() => createDynamoTTLStorage({ client, tableName: "a b" })).toThrow(
			/tableName must match .* got "a b"/,
		);
		expect(() =>
			createDynamoTTLStorage({ client: {} as DynamoDBClient, tableName: "tbl" }),
		).toThrow(TypeError);
		expect(() =>
			createDynamoTTLStorage({ client, tableName: "tbl", reapGraceSeconds: -1 }),
		).toThrow(RangeError);
		expect(() =>
			createDynamoTTLStorage({ client, tableName: "tbl", batchDeadlineMs: 1.5 }),
		).toThrow(RangeError);
	});

	it("refuses an unknown option with a TypeError naming it and the known ones, before any I/O", () => {
		// Found by review: a misspelt `requestTimeoutMS` was ignored, so requests kept the 5 s bound.
		const { client, sent } = stubClient();
		expect(() =>
			createDynamoTTLStorage({ client, tableName: "tbl", requestTimeoutMS: 100 } as never),
		).toThrow(
			/unknown option "requestTimeoutMS"; the options are client, tableName, clock, reapGraceSeconds, batchDeadlineMs, requestTimeoutMs/,
		);
		expect(sent).toEqual([]);
	});

	it("takes only a test clock or systemClock as clock", () => {
		// Found by review: `clock: {}` was accepted and failed later, inside every operation.
		const { client } = stubClient();
		expect(() => createDynamoTTLStorage({ client, tableName: "tbl", clock: {} as never })).toThrow(
			TypeError,
		);
		const wall = { ...systemClock, now: () => Date.now() + 25_000 };
		expect(() => createDynamoTTLStorage({ client, tableName: "tbl", clock: wall })).toThrow(
			/clock is for tests only/,
		);
		expect(() =>
			createDynamoTTLStorage({ client, tableName: "tbl", clock: new MockClock() }),
		).not.toThrow();
		expect(() =>
			createDynamoTTLStorage({ client, tableName: "tbl", clock: systemClock }),
		).not.toThrow();
	});
});
