// A write that DynamoDB refused on every attempt, or that never left the connection pool, wrote
// nothing: when requestTimeoutMs ends it, it is THROTTLED or UNAVAILABLE, never OUTCOME_UNKNOWN
// (found by review: the timeout firing during the SDK's backoff, or while the request waited for a
// pooled socket, was reported as "may have been applied"). A real DynamoDBClient over a local
// HTTP server, no DynamoDB.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage } from "../src/index.ts";

const p = utf8("p");
const k = utf8("k");
const v = utf8("v");

function throttle(res: ServerResponse): void {
	res.writeHead(400, {
		"content-type": "application/x-amz-json-1.0",
		"x-amzn-errortype": "ThrottlingException",
	});
	res.end(
		JSON.stringify({
			__type: "com.amazonaws.dynamodb.v20120810#ThrottlingException",
			message: "Rate of requests exceeds the allowed throughput.",
		}),
	);
}

async function withServer<T>(
	handle: (req: IncomingMessage, res: ServerResponse) => void,
	run: (endpoint: string) => Promise<T>,
): Promise<T> {
	const server = createServer((req, res) => {
		req.resume();
		req.on("end", () => handle(req, res));
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	try {
		return await run(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
	} finally {
		server.closeAllConnections();
		await new Promise<void>((resolve) => server.close(() => resolve()));
	}
}

async function codeOf(run: Promise<unknown>): Promise<string> {
	try {
		await run;
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : String(error);
	}
}

const writes: Record<string, (s: TTLStorage) => Promise<unknown>> = {
	insertIfNotExists: (s) => s.insertIfNotExists(p, k, v, 5),
	compareAndSwap: (s) => s.compareAndSwap(p, k, v, utf8("w"), 5),
	"fenced put": (s) => s.put(p, k, v, 5, { fence: { scope: utf8("f"), epoch: 1n } }),
	// Re-sent by the SDK (no `:now` in it): the timeout fires in the SDK's backoff.
	put: (s) => s.put(p, k, v, 5),
};

describe("a write refused on every attempt until requestTimeoutMs", () => {
	for (const [op, run] of Object.entries(writes)) {
		it(`${op}: TTLSTORAGE_THROTTLED (nothing written), not OUTCOME_UNKNOWN`, async () => {
			let requests = 0;
			await withServer(
				(_req, res) => {
					requests++;
					throttle(res);
				},
				async (endpoint) => {
					// A client of the kind DynamoDB users run: more attempts than the default 3.
					const client = new DynamoDBClient({
						region: "us-east-1",
						endpoint,
						credentials: { accessKeyId: "k", secretAccessKey: "s" },
						maxAttempts: 10,
					});
					try {
						const storage = createDynamoTTLStorage({
							client,
							tableName: "tbl",
							requestTimeoutMs: 1500,
						});
						const started = performance.now();
						expect(await codeOf(run(storage))).toBe("TTLSTORAGE_THROTTLED");
						expect(requests).toBeGreaterThan(0);
						// Ended by the request timeout, not by running out of attempts.
						expect(performance.now() - started).toBeLessThan(3_000);
					} finally {
						client.destroy();
					}
				},
			);
		}, 20_000);
	}
});

describe("a write that waited for a pooled socket until requestTimeoutMs", () => {
	it("was never sent: TTLSTORAGE_UNAVAILABLE, and the server never saw it", async () => {
		const seen: string[] = [];
		await withServer(
			(req, res) => {
				const target = String(req.headers["x-amz-target"] ?? "");
				seen.push(target.slice(target.indexOf(".") + 1));
				// The only socket stays busy: the first request is answered after 4 s, once every write
				// below has given up.
				setTimeout(() => {
					res.writeHead(200, { "content-type": "application/x-amz-json-1.0" });
					res.end("{}");
				}, 4_000);
			},
			async (endpoint) => {
				const client = new DynamoDBClient({
					region: "us-east-1",
					endpoint,
					credentials: { accessKeyId: "k", secretAccessKey: "s" },
					requestHandler: { httpAgent: { keepAlive: true, maxSockets: 1 } },
				});
				try {
					const busy = createDynamoTTLStorage({ client, tableName: "tbl", requestTimeoutMs: 0 });
					const storage = createDynamoTTLStorage({
						client,
						tableName: "tbl",
						requestTimeoutMs: 500,
					});
					const first = busy.get(p, k);
					await new Promise((resolve) => setTimeout(resolve, 200));
					for (const [op, run] of Object.entries(writes)) {
						expect(await codeOf(run(storage)), op).toBe("TTLSTORAGE_UNAVAILABLE");
					}
					await first;
					expect(seen).toEqual(["GetItem"]);
				} finally {
					client.destroy();
				}
			},
		);
	}, 20_000);
});
