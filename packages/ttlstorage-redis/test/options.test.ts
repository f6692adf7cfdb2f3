import type { Clock } from "@vvm/clock";
import { lateTimers, MockClock, systemClock } from "@vvm/clock";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import {
	checkRedisClient,
	checkRedisServer,
	createRedisTTLStorage,
	DEFAULT_KEY_PREFIX,
	REDIS_CLIENT_OPTIONS,
	validateRedisKeyPrefix,
	validateRedisTTLStorageOptions,
} from "../src/index.ts";
import { fakeClient, replyError } from "./fake-client.ts";

const p = utf8("p");
const c = utf8("c");
const v = utf8("v");

async function codeOf(run: () => Promise<unknown>): Promise<string> {
	try {
		await run();
		return "resolved";
	} catch (error) {
		if (TTLStorageError.is(error)) return error.code;
		return (error as Error).name;
	}
}

describe("key prefix", () => {
	it("accepts the default and ordinary prefixes", () => {
		for (const ok of [DEFAULT_KEY_PREFIX, "app1:", "a", "vvm/prod.1-x_y:", "x".repeat(64)])
			expect(() => validateRedisKeyPrefix(ok)).not.toThrow();
	});
	it("refuses empty, long, spaced, braced or non-string prefixes with a RangeError", () => {
		for (const bad of ["", "x".repeat(65), "a b", "{tag}", "é", "a\n", 7, undefined, null])
			expect(() => validateRedisKeyPrefix(bad)).toThrow(RangeError);
	});
	it("is checked by the options check, naming the rule", () => {
		expect(() => validateRedisTTLStorageOptions({ keyPrefix: "a b" })).toThrow(
			/keyPrefix must match/,
		);
	});
});

describe("client", () => {
	it("accepts an ioredis client with REDIS_CLIENT_OPTIONS (no connection is made)", () => {
		const client = new Redis({ ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
		expect(() => checkRedisClient(client)).not.toThrow();
		expect(() => createRedisTTLStorage({ client, sweepIntervalMs: 0 })).not.toThrow();
		client.disconnect();
	});
	it("refuses ioredis' defaults, naming every option that could send a write twice or late", () => {
		const client = new Redis({ lazyConnect: true });
		expect(() => checkRedisClient(client)).toThrow(
			/enableOfflineQueue must be false; autoResendUnfulfilledCommands must be false; maxRetriesPerRequest must be 0/,
		);
		client.disconnect();
	});
	it("refuses reconnectOnError, a client keyPrefix, a Cluster and non-clients", () => {
		expect(() => checkRedisClient(fakeClient({ reconnectOnError: () => 2 }))).toThrow(
			/reconnectOnError must be unset/,
		);
		expect(() => checkRedisClient(fakeClient({ keyPrefix: "x:" }))).toThrow(
			/keyPrefix must be unset/,
		);
		expect(() => checkRedisClient({ ...fakeClient(), isCluster: true })).toThrow(/not a Cluster/);
		for (const bad of [undefined, null, {}, { callBuffer: 1, options: {} }])
			expect(() => checkRedisClient(bad)).toThrow(TypeError);
		expect(() => createRedisTTLStorage({} as never)).toThrow(TypeError);
	});
});

describe("options", () => {
	it("refuses bad numbers, clocks and waitForReplicas before any I/O", () => {
		const bad: Record<string, unknown>[] = [
			{ sweepIntervalMs: -1 },
			{ sweepIntervalMs: 1.5 },
			{ sweepBatchSize: 0 },
			{ pageSize: 0 },
			{ clock: {} },
			{ waitForReplicas: { replicas: 0, timeoutMs: 10 } },
			{ waitForReplicas: { replicas: 1, timeoutMs: 0 } },
			{ waitForReplicas: 1 },
		];
		for (const options of bad) {
			const client = fakeClient();
			expect(() => createRedisTTLStorage({ client, ...options } as never)).toThrow();
			expect(client.sent).toEqual([]);
		}
		expect(() => validateRedisTTLStorageOptions(null as never)).toThrow(TypeError);
		expect(() =>
			validateRedisTTLStorageOptions({ sweepIntervalMs: 0, pageSize: 10 }),
		).not.toThrow();
	});
});

describe("unknown options", () => {
	// Found by review: a misspelt safety option from a configuration file (waitForReplica) was
	// ignored without a word, leaving every write un-WAITed.
	it("are refused before any I/O, naming the key and the known ones", () => {
		const client = fakeClient();
		const typo = { waitForReplica: { replicas: 1, timeoutMs: 100 } };
		expect(() => createRedisTTLStorage({ client, ...typo } as never)).toThrow(TypeError);
		expect(() => validateRedisTTLStorageOptions(typo as never)).toThrow(
			'unknown option "waitForReplica"; the options are client, keyPrefix, waitForReplicas, clock, sweepIntervalMs, sweepBatchSize, pageSize, logger',
		);
		expect(() =>
			validateRedisTTLStorageOptions({ keyprefix: "a:", sweepInterval: 5 } as never),
		).toThrow(/unknown options "keyprefix", "sweepInterval"; the options are/);
		expect(client.sent).toEqual([]);
	});
});

describe("the test clock", () => {
	// Found by review: the "tests only" clock took systemClock, so each client's wall clock decided
	// expiry, with no bound on the skew between two hosts (a host 25 s ahead took over a live lease).
	it("refuses systemClock and any wall clock, naming the server's clock, before any I/O", () => {
		const ahead: Clock = { ...systemClock, now: () => Date.now() + 25_000 };
		for (const clock of [systemClock, ahead, lateTimers(systemClock, () => 0)]) {
			const client = fakeClient();
			expect(() => createRedisTTLStorage({ client, clock, sweepIntervalMs: 0 })).toThrow(
				/clock is for tests only.*decided by the Redis server's clock/,
			);
			expect(() => validateRedisTTLStorageOptions({ clock })).toThrow(TypeError);
			expect(client.sent).toEqual([]);
		}
	});

	it("takes a MockClock, and lateTimers over one", async () => {
		for (const clock of [new MockClock(), lateTimers(new MockClock(), () => 5)]) {
			const s = createRedisTTLStorage({ client: fakeClient(), clock, sweepIntervalMs: 0 });
			await s.close();
		}
	});
});

describe("arguments", () => {
	it("every operation refuses bad arguments with a TypeError or RangeError before any I/O", async () => {
		const client = fakeClient();
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		const long = new Uint8Array(70_000);
		const fence = { scope: utf8("s"), epoch: -1n };
		const calls: (() => Promise<unknown>)[] = [
			() => s.insertIfNotExists(new Uint8Array(), c, v, 0),
			() => s.insertIfNotExists(p, c, v, -1),
			() => s.insertIfNotExists(p, c, long, 0),
			() => s.insertIfNotExists(p, c, v, 0, { fence }),
			() => s.compareAndSwap(p, c, v, v, 1.5),
			() => s.compareAndSwap(p, c, "v" as never, v, 0),
			() => s.compareAndDelete(p, new Uint8Array(1024), v),
			() => s.get(p, "c" as never),
			() => s.put(p, c, v, 0, { fence: { scope: new Uint8Array(), epoch: 1n } }),
			() => s.putBatch([{ pKey: p, cCols: c, value: v, ttlSeconds: 99_999_999 }]),
			() => s.putBatch("x" as never),
			() =>
				s.putBatchIf([
					{ pKey: p, cCols: c, value: v },
					{ pKey: p, cCols: c, value: v, expected: null },
				]),
			() => s.queryTTL(new Uint8Array(), c),
			() => s.raiseFence(new Uint8Array(300)),
			() => s.raiseFence(utf8("s"), 2n ** 63n),
			async () => {
				for await (const _ of s.read(p, { from: "a" as never })) break;
			},
		];
		for (const call of calls) expect(await codeOf(call)).toMatch(/^(TypeError|RangeError)$/);
		expect(client.sent).toEqual([]);
		await s.close();
	});

	it("sends nothing while the connection is not ready: UNAVAILABLE, nothing written", async () => {
		const client = fakeClient();
		client.status = "reconnecting";
		const s = createRedisTTLStorage({ client, sweepIntervalMs: 0 });
		expect(await codeOf(() => s.put(p, c, v))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(await codeOf(() => s.get(p, c))).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(client.sent).toEqual([]);
	});

	it("rejects with CLOSED after close(), sending nothing; close() is idempotent", async () => {
		const client = fakeClient();
		const s = createRedisTTLStorage({ client, clock: new MockClock(), sweepIntervalMs: 1000 });
		await s.close();
		await s.close();
		expect(await codeOf(() => s.put(p, c, v))).toBe("TTLSTORAGE_CLOSED");
		expect(await codeOf(() => s.putBatch([]))).toBe("TTLSTORAGE_CLOSED");
		expect(await codeOf(() => s.raiseFence(utf8("s")))).toBe("TTLSTORAGE_CLOSED");
		expect(client.sent).toEqual([]);
	});

	it("declares atomic batches and epoch fencing, and has putBatchIf", () => {
		const s = createRedisTTLStorage({ client: fakeClient(), sweepIntervalMs: 0 });
		expect(s.supports).toEqual({ atomicBatches: true, fencing: "epoch" });
		expect(typeof s.putBatchIf).toBe("function");
	});
});

describe("checkRedisServer", () => {
	const info = (policy: string) =>
		Buffer.from(`# Memory\r\nused_memory:1000\r\nmaxmemory:0\r\nmaxmemory_policy:${policy}\r\n`);
	const persistence = (aof: 0 | 1) =>
		Buffer.from(
			`# Persistence\r\nloading:0\r\nrdb_changes_since_last_save:3\r\naof_enabled:${aof}\r\n`,
		);
	const fsync = (value: string) => [Buffer.from("appendfsync"), Buffer.from(value)];
	/** The replies of a server with `policy`, an append-only file and `appendfsync always`. */
	const durable = (policy = "noeviction") => [info(policy), persistence(1), fsync("always")];
	const SENT = [
		{ command: "INFO", args: ["memory"] },
		{ command: "INFO", args: ["persistence"] },
		{ command: "CONFIG", args: ["GET", "appendfsync"] },
	];

	it("accepts noeviction and the volatile-* policies (every key of the driver has no expiry)", async () => {
		for (const policy of [
			"noeviction",
			"volatile-lru",
			"volatile-lfu",
			"volatile-ttl",
			"volatile-random",
		]) {
			const client = fakeClient();
			client.replies.push(...durable(policy));
			expect(await checkRedisServer(client)).toEqual({
				maxmemoryPolicy: policy,
				aofEnabled: true,
				appendfsync: "always",
			});
			expect(client.sent).toEqual(SENT);
		}
	});

	it("refuses an allkeys-* policy, naming it and the fix", async () => {
		for (const policy of ["allkeys-lru", "allkeys-lfu", "allkeys-random"]) {
			const client = fakeClient();
			client.replies.push(...durable(policy));
			const error = await checkRedisServer(client).catch((e: unknown) => e);
			expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_FAILED");
			expect((error as Error).message).toContain(`maxmemory-policy is ${policy}`);
			expect((error as Error).message).toContain("set maxmemory-policy noeviction");
		}
	});

	// Found by review: the check read the eviction policy only, so a server that persists nothing
	// (or fsyncs once a second) passed, and an acknowledged fence or lease was lost on a restart.
	it("refuses a server without an append-only file, naming the fix", async () => {
		const client = fakeClient();
		client.replies.push(info("noeviction"), persistence(0));
		const error = await checkRedisServer(client).catch((e: unknown) => e);
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_FAILED");
		expect((error as Error).message).toMatch(
			/aof_enabled:0.*set appendonly yes and appendfsync always/,
		);
		expect(client.sent).toEqual(SENT.slice(0, 2));
	});

	it("refuses appendfsync everysec and no, naming the setting and the fix", async () => {
		for (const value of ["everysec", "no"]) {
			const client = fakeClient();
			client.replies.push(info("noeviction"), persistence(1), fsync(value));
			const error = await checkRedisServer(client).catch((e: unknown) => e);
			expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_FAILED");
			expect((error as Error).message).toMatch(
				new RegExp(`appendfsync is ${value}: .*set appendfsync always$`),
			);
		}
	});

	it("CONFIG denied, renamed or disabled: appendfsync undefined (cannot be told), not refused", async () => {
		for (const refusal of [
			replyError("NOPERM this user has no permissions to run the 'config|get' command"),
			replyError("ERR unknown command 'CONFIG', with args beginning with: 'GET' 'appendfsync' "),
		]) {
			const client = fakeClient();
			client.replies.push(info("noeviction"), persistence(1), refusal);
			expect(await checkRedisServer(client)).toEqual({
				maxmemoryPolicy: "noeviction",
				aofEnabled: true,
				appendfsync: undefined,
			});
		}
		const client = fakeClient();
		client.replies.push(info("noeviction"), persistence(1), []); // a server without the setting
		expect((await checkRedisServer(client)).appendfsync).toBeUndefined();
	});

	it("a reply without the fields or INFO denied by an ACL: undefined; another failure: the mapped error", async () => {
		const client = fakeClient();
		client.replies.push(
			Buffer.from("# Memory\r\nused_memory:1000\r\n"),
			Buffer.from("# Persistence\r\nloading:0\r\n"),
			fsync("always"),
		);
		expect(await checkRedisServer(client)).toEqual({
			maxmemoryPolicy: undefined,
			aofEnabled: undefined,
			appendfsync: "always",
		});
		const denied = replyError("NOPERM this user has no permissions to run the 'info' command");
		client.replies.push(denied, denied, fsync("always"));
		expect(await checkRedisServer(client)).toEqual({
			maxmemoryPolicy: undefined,
			aofEnabled: undefined,
			appendfsync: "always",
		});
		// INFO denied does not hide a weak appendfsync that CONFIG tells.
		client.replies.push(denied, denied, fsync("everysec"));
		expect(await codeOf(() => checkRedisServer(client))).toBe("TTLSTORAGE_FAILED");
		client.replies.push(replyError("ERR something else"));
		expect(await codeOf(() => checkRedisServer(client))).toBe("TTLSTORAGE_FAILED");
		client.replies.push(new Error("Connection is closed."));
		expect(await codeOf(() => checkRedisServer(client))).toBe("TTLSTORAGE_UNAVAILABLE");
		client.replies.push(info("noeviction"), persistence(1), new Error("Connection is closed."));
		expect(await codeOf(() => checkRedisServer(client))).toBe("TTLSTORAGE_UNAVAILABLE");
	});
});
