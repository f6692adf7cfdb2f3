// ECONNREFUSED reported by an OPEN connection (syscall "read"), as Linux does when a connection
// dies of a retransmission or keepalive timeout after an ICMP port-unreachable (a firewall REJECT,
// kube-proxy for a service without endpoints). The request was written: the write may have been
// applied. The driver must neither let the SDK re-send it nor call it UNAVAILABLE. Found by review
// of 98b2628 (before, ECONNREFUSED counted as "never sent" whatever the system call: the SDK sent
// it again, and an insert that had landed answered false). The real SDK, a scripted handler.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage } from "../src/index.ts";

type Reply = { status: number; type?: string } | { error: string; syscall: string };

function scripted(replies: Reply[]) {
	const calls: string[] = [];
	const requestHandler = {
		handle: async (request: { headers: Record<string, string> }) => {
			const target = request.headers["x-amz-target"] ?? "";
			calls.push(target.slice(target.indexOf(".") + 1));
			const reply = replies[Math.min(calls.length - 1, replies.length - 1)] as Reply;
			if ("error" in reply)
				throw Object.assign(new Error(`read ${reply.error}`), {
					code: reply.error,
					errno: -111,
					syscall: reply.syscall,
				});
			const body =
				reply.type === undefined
					? "{}"
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
	// The SDK's default retry strategy (standard, as the host's client has), maxAttempts 3.
	const client = new DynamoDBClient({
		region: "us-east-1",
		endpoint: "http://127.0.0.1:9",
		credentials: { accessKeyId: "k", secretAccessKey: "s" },
		requestHandler,
	});
	return { storage: createDynamoTTLStorage({ client, tableName: "tbl" }), calls };
}

const p = utf8("p");
const k = utf8("k");
const v = utf8("v");
const refusedOnRead: Reply = { error: "ECONNREFUSED", syscall: "read" };
const conditionFailed: Reply = { status: 400, type: "ConditionalCheckFailedException" };

describe("ECONNREFUSED on an open connection (syscall read) after the write was sent", () => {
	it("is never re-sent: insertIfNotExists that landed must not answer false", async () => {
		// Attempt 1 landed (its answer lost); the SDK's re-send finds the item: condition false.
		const { storage, calls } = scripted([refusedOnRead, conditionFailed]);
		const result = await storage
			.insertIfNotExists(p, k, v, 5)
			.catch((e: unknown) => (TTLStorageError.is(e) ? e.code : e));
		expect({ result, attempts: calls.length }).toEqual({
			result: "TTLSTORAGE_OUTCOME_UNKNOWN",
			attempts: 1,
		});
	});

	it("is OUTCOME_UNKNOWN, not UNAVAILABLE (nothing written)", async () => {
		const { storage, calls } = scripted([refusedOnRead]);
		const code = await storage
			.put(p, k, v)
			.then(() => "resolved")
			.catch((e: unknown) => (TTLStorageError.is(e) ? e.code : e));
		expect({ code, attempts: calls.length }).toEqual({
			code: "TTLSTORAGE_OUTCOME_UNKNOWN",
			attempts: 1,
		});
	});
});
