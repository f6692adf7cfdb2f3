import type { Socket } from "node:net";
import { createServer } from "node:net";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { TTLStorageError } from "@vvm/ttlstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureDynamoTTLTable } from "../src/index.ts";

// An endpoint that accepts connections and never answers: a hung proxy or load balancer.
const sockets: Socket[] = [];
const blackHole = createServer((socket) => sockets.push(socket));
let client: DynamoDBClient;

beforeAll(async () => {
	await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", () => r()));
	const { port } = blackHole.address() as { port: number };
	client = new DynamoDBClient({
		region: "us-east-1",
		endpoint: `http://127.0.0.1:${port}`,
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
		maxAttempts: 1,
	});
});

afterAll(() => {
	client.destroy();
	for (const s of sockets) s.destroy();
	blackHole.close();
});

describe("ensureDynamoTTLTable against an endpoint that never answers", () => {
	it("fails with TTLSTORAGE_UNAVAILABLE after its request timeout instead of hanging", async () => {
		const error = await ensureDynamoTTLTable(client, "tbl", { requestTimeoutMs: 200 }).catch(
			(e: unknown) => e,
		);
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_UNAVAILABLE");
	});

	it("stops at once with the signal's reason", async () => {
		const ac = new AbortController();
		const pending = ensureDynamoTTLTable(client, "tbl", { signal: ac.signal, requestTimeoutMs: 0 });
		setTimeout(() => ac.abort(new Error("stop requested")), 50);
		await expect(pending).rejects.toThrow("stop requested");
	});

	it("rejects a bad request timeout before any request", async () => {
		await expect(ensureDynamoTTLTable(client, "tbl", { requestTimeoutMs: -1 })).rejects.toThrow(
			RangeError,
		);
	});
});
