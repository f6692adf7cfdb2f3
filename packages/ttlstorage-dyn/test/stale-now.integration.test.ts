// A conditional write compares the stored expiry with the clock's now. Found by review: the now
// was read once when the call started and sent unchanged on every attempt of the AWS SDK's retry
// strategy, so a renewal (compareAndSwap old -> old) that DynamoDB throttled once was re-sent after
// the lease had expired and still renewed it, although a get in between (same clock) had already
// answered that the record was gone. The driver now re-sends such a write itself, rebuilt with a
// fresh now. Same class as the PostgreSQL driver's "liveness judged at a statement's start".
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { utf8 } from "@vvm/ttlstorage";
import { dynamoEnv } from "@vvm/vitest-config/servers";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage, DYNAMO_CLIENT_OPTIONS } from "../src/index.ts";
import { dynamoGate, useTable } from "./dynamo-local.ts";

const skip = await dynamoGate();
const { client: admin, tableName } = useTable("stalenow", skip);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A retry strategy a user may configure: throttling retried after a fixed 1.2 s pause. */
const token = (n: number) => ({ getRetryCount: () => n, getRetryDelay: () => 1200 });
const retryStrategy = {
	mode: "fixed-1200ms",
	acquireInitialRetryToken: async () => token(0),
	refreshRetryTokenForRetry: async (t: ReturnType<typeof token>, info: { errorType?: string }) => {
		if (t.getRetryCount() >= 2 || info.errorType !== "THROTTLING") throw new Error("no retry");
		return token(t.getRetryCount() + 1);
	},
	recordSuccess: () => {},
};

describe.skipIf(skip !== false)("a throttled renewal retried after the lease expired", () => {
	it("is judged by the now of its retry: a get that saw the lease expire is not contradicted", async () => {
		const client = new DynamoDBClient({ ...dynamoEnv(), ...DYNAMO_CLIENT_OPTIONS, retryStrategy });
		// DynamoDB throttles the next PutItem once (400 ThrottlingException: nothing written).
		let throttleNext = false;
		let puts = 0;
		const handler = client.config.requestHandler as unknown as {
			handle: (req: { headers: Record<string, string> }, o?: unknown) => Promise<unknown>;
		};
		const real = handler.handle.bind(handler);
		handler.handle = async (req, o) => {
			if ((req.headers["x-amz-target"] ?? "").endsWith(".PutItem")) {
				puts++;
				if (throttleNext) {
					throttleNext = false;
					return {
						response: {
							statusCode: 400,
							headers: { "content-type": "application/x-amz-json-1.0" },
							body: new TextEncoder().encode(
								JSON.stringify({
									__type: "com.amazonaws.dynamodb.v20120810#ThrottlingException",
									message: "Rate of requests exceeds the allowed throughput.",
								}),
							),
						},
					};
				}
			}
			return real(req, o);
		};
		const leader = createDynamoTTLStorage({ client, tableName, requestTimeoutMs: 10_000 });
		const observer = createDynamoTTLStorage({ client: admin, tableName });
		const p = utf8("lease");
		const c = utf8(`slot-${Date.now()}`);
		const v = utf8("leader-A");
		try {
			const t0 = Date.now();
			expect(await observer.insertIfNotExists(p, c, v, 1)).toBe(true); // expires at ~t0 + 1000
			await sleep(Math.max(0, t0 + 700 - Date.now()));
			throttleNext = true;
			puts = 0;
			// The renewal starts while the lease is live (t0 + 700); its retry comes at ~t0 + 1900.
			const renewal = leader.compareAndSwap(p, c, v, v, 10);
			await sleep(Math.max(0, t0 + 1400 - Date.now()));
			// t0 + 1400: the lease has expired; every read says so.
			const seen = await observer.get(p, c);
			const seenTTL = await observer.queryTTL(p, c);
			const renewed = await renewal;
			const after = await observer.get(p, c);
			expect({ seen, seenTTL }).toEqual({ seen: undefined, seenTTL: undefined });
			// Linearizability: once a get (after the record's expiry) saw it gone, a compareAndSwap
			// whose write lands later must not find it live. The old driver answered true here and the
			// expired lease was back.
			expect({ renewed, revived: after !== undefined, puts }).toEqual({
				renewed: false,
				revived: false,
				puts: 2,
			});
		} finally {
			client.destroy();
		}
	}, 20_000);
});
