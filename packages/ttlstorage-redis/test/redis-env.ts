// Shared set-up of the real-Redis test files: the gate, a client per file with the driver's
// options, and a key prefix per file whose keys are deleted afterwards. The server is REDIS_URL,
// else redis://127.0.0.1:<REDIS_PORT, default 6390> (tooling/servers/redis).
import { randomBytes } from "node:crypto";
import { redisEnv, redisGate } from "@vvm/vitest-config/servers";
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";
import { REDIS_CLIENT_OPTIONS } from "../src/index.ts";

/** `false` when Redis is reachable, else the reason to skip; throws in CI instead of skipping. */
export const gate: () => Promise<false | string> = redisGate;

/** The URL of the tests' server. */
export const redisUrl: string = redisEnv().url;

/** A connected client with the driver's options (and `extra`); the caller disconnects it. */
export async function newClient(
	extra: { commandTimeout?: number; retryStrategy?: (times: number) => number | null } = {},
): Promise<Redis> {
	const client = new Redis(redisUrl, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true, ...extra });
	client.on("error", () => {}); // a broken connection is reconnected; operations report it
	await client.connect();
	return client;
}

/** A key prefix no other file or run uses. */
function uniquePrefix(name: string): string {
	return `vvm_test_${name}_${process.pid.toString(36)}${Date.now().toString(36)}_${randomBytes(3).toString("hex")}:`;
}

/**
 * Deletes every key under `prefix`. The driver's keys hold binary bytes: scanned and deleted as
 * buffers (as strings, a key with bytes that are not UTF-8 would be deleted under another name).
 */
async function dropPrefix(client: Redis, prefix: string): Promise<void> {
	let cursor = "0";
	do {
		const [next, keys] = await client.scanBuffer(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
		cursor = String(next);
		if (keys.length > 0) await client.del(...keys);
	} while (cursor !== "0");
}

/** The file's client (`admin`: a plain one for set-up and inspection) and its key prefix. */
export interface RedisFixture {
	readonly client: Redis;
	readonly admin: Redis;
	readonly prefix: string;
}

/** Registers `beforeAll`/`afterAll` around the file: clients up, the prefix's keys dropped after. */
export function useRedis(name: string, skip: false | string): () => RedisFixture {
	const prefix = uniquePrefix(name);
	let fixture: RedisFixture | undefined;
	if (!skip) {
		beforeAll(async () => {
			fixture = { client: await newClient(), admin: await newClient(), prefix };
		});
		afterAll(async () => {
			if (fixture === undefined) return;
			try {
				await dropPrefix(fixture.admin, prefix);
			} finally {
				fixture.client.disconnect();
				fixture.admin.disconnect();
			}
		});
	}
	return () => {
		if (fixture === undefined) throw new Error("the Redis clients are not open");
		return fixture;
	};
}
