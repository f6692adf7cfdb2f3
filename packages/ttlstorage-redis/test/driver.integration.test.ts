import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { Redis } from "ioredis";
import { Redis as FloorRedis } from "ioredis-floor";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
	checkRedisServer,
	createRedisTTLStorage,
	MAX_REDIS_BATCH_ITEMS,
	REDIS_CLIENT_OPTIONS,
} from "../src/index.ts";
import { gate, newClient, redisUrl, useRedis } from "./redis-env.ts";

const skip = await gate();
const text = (v: Uint8Array | undefined): string | undefined =>
	v === undefined ? undefined : Buffer.from(v).toString();

async function all(storage: TTLStorage, pKey: Uint8Array): Promise<string[]> {
	const out: string[] = [];
	for await (const r of storage.read(pKey)) out.push(`${text(r.cCols)}=${text(r.value)}`);
	return out;
}

async function codeOf(run: () => Promise<unknown>): Promise<string> {
	try {
		await run();
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : `foreign: ${String(error)}`;
	}
}

describe.skipIf(skip)("the Redis driver on a real server", () => {
	const redis = useRedis("driver", skip);
	afterEach(() => {
		vi.restoreAllMocks();
	});

	it("expiry is the server's: a client clock an hour ahead writes and sees the same TTLs", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}skew:`, sweepIntervalMs: 0 });
		vi.spyOn(Date, "now").mockImplementation(
			() => performance.timeOrigin + performance.now() + 3_600_000,
		);
		const p = utf8("lease");
		expect(await s.insertIfNotExists(p, utf8("a"), utf8("x"), 20)).toBe(true);
		expect(await s.queryTTL(p, utf8("a"))).toBe(20);
		expect(await s.insertIfNotExists(p, utf8("a"), utf8("y"), 20)).toBe(false);
		await s.close();
	});

	it("the sweep deletes expired records with their range entries, never a live or renewed one", async () => {
		const { client, admin, prefix } = redis();
		const clock = new MockClock();
		const keyPrefix = `${prefix}sweep:`;
		const s = createRedisTTLStorage({
			client,
			keyPrefix,
			clock,
			sweepIntervalMs: 0,
			sweepBatchSize: 3,
		});
		const p = utf8("p");
		for (let i = 0; i < 7; i++) await s.put(p, utf8(`e${i}`), utf8("v"), 10);
		await s.put(p, utf8("forever"), utf8("v"));
		await s.put(p, utf8("later"), utf8("v"), 100);
		await s.put(p, utf8("renewed"), utf8("v"), 10);
		clock.advance(5_000);
		await s.put(p, utf8("renewed"), utf8("w"), 10);
		clock.advance(6_000);
		expect(await s.sweep()).toBe(7);
		expect(await all(s, p)).toEqual(["forever=v", "later=v", "renewed=w"]);
		// The range's sorted set holds the live records only; nothing else is left of the expired.
		expect(
			await admin.zcard(
				Buffer.concat([Buffer.from(`${keyPrefix}p`), Buffer.from([0, 1]), Buffer.from("p")]),
			),
		).toBe(3);
		expect(await admin.zcard(`${keyPrefix}x`)).toBe(2);
		expect(await s.sweep()).toBe(0);
		await s.close();
	});

	it("the sweep runs on its timer and stops on close", async () => {
		const { client, prefix } = redis();
		const clock = new MockClock();
		const s = createRedisTTLStorage({
			client,
			keyPrefix: `${prefix}timer:`,
			clock,
			sweepIntervalMs: 1_000,
		});
		await s.put(utf8("p"), utf8("a"), utf8("v"), 1);
		expect(clock.pendingTimers).toBe(1);
		await s.close();
		expect(clock.pendingTimers).toBe(0);
	});

	it("reads in pages, in byte order, within [from, to), skipping expired records", async () => {
		const { client, prefix } = redis();
		const clock = new MockClock();
		const s = createRedisTTLStorage({
			client,
			keyPrefix: `${prefix}page:`,
			clock,
			pageSize: 2,
			sweepIntervalMs: 0,
		});
		const p = utf8("p");
		const keys = [[0x00], [0x01], [0x01, 0x00], [0x7f], [0x80], [0xff], [0xff, 0xff]];
		await s.putBatch(
			keys.map((k) => ({ pKey: p, cCols: Uint8Array.from(k), value: Uint8Array.from(k) })),
		);
		await s.put(p, Uint8Array.from([0x02]), utf8("short"), 1);
		clock.advance(1_000);
		const read = async (from?: number[], to?: number[]) => {
			const out: number[][] = [];
			const range = {
				...(from ? { from: Uint8Array.from(from) } : {}),
				...(to ? { to: Uint8Array.from(to) } : {}),
			};
			for await (const r of s.read(p, range)) out.push([...r.cCols]);
			return out;
		};
		expect(await read()).toEqual(keys);
		expect(await read([0x01], [0xff])).toEqual([[0x01], [0x01, 0x00], [0x7f], [0x80]]);
		expect(await read([0x80], [0x80])).toEqual([]);
		await s.close();
	});

	it("a key of another type under the prefix fails a batch before anything of it is written", async () => {
		const { client, admin, prefix } = redis();
		const keyPrefix = `${prefix}types:`;
		const s = createRedisTTLStorage({ client, keyPrefix, sweepIntervalMs: 0 });
		await admin.set(
			Buffer.concat([Buffer.from(`${keyPrefix}p`), Buffer.from([0, 1]), Buffer.from("b")]),
			"a string",
		);
		const batch = [
			{ pKey: utf8("a"), cCols: utf8("1"), value: utf8("v") },
			{ pKey: utf8("b"), cCols: utf8("1"), value: utf8("v") },
		];
		expect(await codeOf(() => s.putBatch(batch))).toBe("TTLSTORAGE_FAILED");
		expect(await s.get(utf8("a"), utf8("1"))).toBeUndefined();
		await s.close();
	});

	it("waitForReplicas on a server without replicas: applied, but OUTCOME_UNKNOWN", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({
			client,
			keyPrefix: `${prefix}wait:`,
			sweepIntervalMs: 0,
			waitForReplicas: { replicas: 1, timeoutMs: 20 },
		});
		expect(await codeOf(() => s.put(utf8("p"), utf8("c"), utf8("v")))).toBe(
			"TTLSTORAGE_OUTCOME_UNKNOWN",
		);
		expect(text(await s.get(utf8("p"), utf8("c")))).toBe("v");
		await s.close();
	});

	it("a batch of MAX_REDIS_BATCH_ITEMS, each under its own fence, is one script: all written", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}big:`, sweepIntervalMs: 0 });
		const pKey = utf8("big");
		await s.putBatch(
			Array.from({ length: MAX_REDIS_BATCH_ITEMS }, (_, i) => ({
				pKey,
				cCols: utf8(`c${String(i).padStart(5, "0")}`),
				value: utf8(`v${i}`),
				ttlSeconds: 600,
				fence: { scope: utf8(`s${i}`), epoch: 1n },
			})),
		);
		const written = await all(s, pKey);
		expect([written.length, written[0], written.at(-1)]).toEqual([
			MAX_REDIS_BATCH_ITEMS,
			"c00000=v0",
			`c0${MAX_REDIS_BATCH_ITEMS - 1}=v${MAX_REDIS_BATCH_ITEMS - 1}`,
		]);
		await s.close();
	});

	it("checkRedisServer reads the server's eviction policy and persistence (the test server's: noeviction, appendonly yes, appendfsync always)", async () => {
		const { client, admin } = redis();
		const [, policy] = (await admin.config("GET", "maxmemory-policy")) as [string, string];
		const [, appendonly] = (await admin.config("GET", "appendonly")) as [string, string];
		const [, appendfsync] = (await admin.config("GET", "appendfsync")) as [string, string];
		expect({ policy, appendonly, appendfsync }).toEqual({
			policy: "noeviction",
			appendonly: "yes",
			appendfsync: "always",
		});
		expect(await checkRedisServer(client)).toEqual({
			maxmemoryPolicy: policy,
			aofEnabled: true,
			appendfsync,
		});
	});

	it("an unreachable server: UNAVAILABLE, nothing sent", async () => {
		const client = new Redis("redis://127.0.0.1:1", {
			...REDIS_CLIENT_OPTIONS,
			lazyConnect: true,
			retryStrategy: () => null,
		});
		client.on("error", () => {});
		await client.connect().catch(() => {});
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await codeOf(() => s.put(utf8("p"), utf8("c"), utf8("v")))).toBe(
			"TTLSTORAGE_UNAVAILABLE",
		);
		client.disconnect();
	});

	it("the lowest ioredis of the peer range (5.4.0) runs every operation", async () => {
		const { prefix } = redis();
		const client = new FloorRedis(redisUrl, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
		client.on("error", () => {});
		await client.connect();
		try {
			const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}floor:`, sweepIntervalMs: 0 });
			const p = utf8("p");
			const scope = utf8("scope");
			expect(await s.insertIfNotExists(p, utf8("a"), utf8("1"), 10)).toBe(true);
			expect(await s.compareAndSwap(p, utf8("a"), utf8("1"), utf8("2"), 10)).toBe(true);
			expect(await s.queryTTL(p, utf8("a"))).toBe(10);
			expect(await s.raiseFence(scope, 3n)).toBe(3n);
			await s.putBatch([
				{ pKey: p, cCols: utf8("b"), value: utf8("3"), fence: { scope, epoch: 3n } },
			]);
			expect(
				await s.putBatchIf([{ pKey: p, cCols: utf8("c"), value: utf8("4"), expected: null }]),
			).toBe(true);
			expect(
				await codeOf(() => s.put(p, utf8("d"), utf8("5"), 0, { fence: { scope, epoch: 2n } })),
			).toBe("TTLSTORAGE_FENCED");
			expect(await s.compareAndDelete(p, utf8("c"), utf8("4"))).toBe(true);
			expect(await all(s, p)).toEqual(["a=2", "b=3"]);
			await s.close();
		} finally {
			client.disconnect();
		}
	});

	it("a second client sees the same records (one storage per process, shared server)", async () => {
		const { client, prefix } = redis();
		const other = await newClient();
		try {
			const a = createRedisTTLStorage({ client, keyPrefix: `${prefix}two:`, sweepIntervalMs: 0 });
			const b = createRedisTTLStorage({
				client: other,
				keyPrefix: `${prefix}two:`,
				sweepIntervalMs: 0,
			});
			expect(await a.insertIfNotExists(utf8("p"), utf8("c"), utf8("a"), 10)).toBe(true);
			expect(await b.insertIfNotExists(utf8("p"), utf8("c"), utf8("b"), 10)).toBe(false);
			expect(text(await b.get(utf8("p"), utf8("c")))).toBe("a");
		} finally {
			other.disconnect();
		}
	});
});
