// A create and a read through the host's HTTP API (API v2) on every storage driver: mem and level
// always, real Cassandra, DynamoDB Local, PostgreSQL and Redis when reachable (required in CI or with
// CASSANDRA_TESTS_ENABLED / DYNAMODB_TESTS_ENABLED / PG_TESTS_ENABLED / REDIS_TESTS_ENABLED). On DynamoDB, two hosts split the partitions
// (static placement) and a request sent to the wrong one gets 421 naming the other.
import { execFileSync } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
	hostPort,
	postgresEnv,
	postgresGate,
	redisEnv,
	redisGate,
	requireServer,
} from "@vvm/vitest-config/servers";
import { Redis } from "ioredis";
import { afterAll, describe, expect, it } from "vitest";
import { openStorage } from "../src/storage/index.ts";
import type { HostProcess } from "./support/host-process.ts";
import { APP_DIR, killHard, spawnHost } from "./support/host-process.ts";

const RUN = `${process.pid}_${Date.now().toString(36)}`;
const DYN = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const CAS = process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042";
const dynAt = hostPort(DYN, 8000);
const casAt = hostPort(CAS.split(",")[0] ?? CAS, 9042);
const skipDyn = await requireServer({
	name: "DynamoDB Local",
	...dynAt,
	enabledVar: "DYNAMODB_TESTS_ENABLED",
	startHint: "bash tooling/servers/dynamodb/start.sh",
});
const skipCas = await requireServer({
	name: "Cassandra",
	...casAt,
	enabledVar: "CASSANDRA_TESTS_ENABLED",
	startHint: "bash tooling/servers/cassandra/start.sh",
});
const skipPg = await postgresGate();
const pgAt = postgresEnv();
const PG_URL = `postgres://${pgAt.user}@${pgAt.host}:${pgAt.port}/${pgAt.database}`;
const skipRedis = await redisGate();
const REDIS_URL = redisEnv().url;
const REDIS_PREFIX = `vvm_cph_${RUN}:`;
const TABLE = `vvm_cph_${RUN}`;
/** The two-host case's own table: the cluster of TABLE stored --num-vvm 1, this one runs with 2. */
const TABLE_SPLIT = `vvm_cph_split_${RUN}`;
const KEYSPACE = `vvm_cph_${RUN}`;
const CUSTOMER = "app1pkg.Customer";

const hosts: HostProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
	for (const h of hosts) killHard(h);
	for (const d of dirs) await rm(d, { recursive: true, force: true });
	if (!skipDyn) {
		const client = new DynamoDBClient({
			endpoint: DYN,
			region: "us-east-1",
			credentials: { accessKeyId: "local", secretAccessKey: "local" },
		});
		await client.send(new DeleteTableCommand({ TableName: TABLE })).catch(() => {});
		await client.send(new DeleteTableCommand({ TableName: TABLE_SPLIT })).catch(() => {});
		client.destroy();
	}
	if (!skipPg) {
		const script = `import pg from "pg";
			const pool = new pg.Pool({ connectionString: ${JSON.stringify(PG_URL)} });
			await pool.query("DROP SCHEMA IF EXISTS ${KEYSPACE} CASCADE").catch(() => {});
			await pool.end();`;
		execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: APP_DIR });
	}
	if (!skipRedis) {
		const client = new Redis(REDIS_URL, { lazyConnect: true });
		await client.connect();
		let cursor = "0";
		do {
			// Keys hold binary bytes: scanned and deleted as Buffers.
			const [next, keys] = await client.scanBuffer(
				cursor,
				"MATCH",
				`${REDIS_PREFIX}*`,
				"COUNT",
				1000,
			);
			if (keys.length > 0) await client.del(...keys);
			cursor = next.toString();
		} while (cursor !== "0");
		client.disconnect();
	}
	if (!skipCas) {
		// In a child process: vitest cannot load the driver's CommonJS "long" (see cas-address-map.test.ts).
		const script = `import cassandra from "cassandra-driver";
			const c = new cassandra.Client({ contactPoints: ${JSON.stringify(CAS.split(","))}, localDataCenter: "datacenter1" });
			await c.execute("DROP KEYSPACE IF EXISTS ${KEYSPACE}").catch(() => {});
			await c.shutdown();`;
		execFileSync(process.execPath, ["--input-type=module", "-e", script], { cwd: APP_DIR });
	}
}, 60_000);

interface Started {
	readonly base: string;
	readonly address: string;
	readonly host: HostProcess;
}

let count = 0;
/** Starts a host process (from the sources) and waits until its partitions are served. */
async function start(argv: string[]): Promise<Started> {
	const host = spawnHost(`host-${++count}`, [
		...argv,
		"--http-port",
		"0",
		"--work-interval-ms",
		"0",
		"--acquire-retry-ms",
		"100",
	]);
	hosts.push(host);
	await host.waitFor((l) => l.event === "services-started", 40_000);
	const listening = await host.waitFor((l) => l.event === "listening");
	return {
		base: `http://127.0.0.1:${listening.port as number}/api/v2/apps/vvm/demo/workspaces`,
		address: listening.address as string,
		host,
	};
}

async function stop(h: Started): Promise<number | null> {
	h.host.child.kill("SIGTERM");
	return (await h.host.exited).code;
}

/** POST until the partition is ready (a fresh partition answers 503 while it actualizes). */
async function send(url: string, body: unknown, method = "POST"): Promise<Response> {
	for (;;) {
		const res = await fetch(url, { method, body: JSON.stringify(body), redirect: "manual" });
		if (res.status !== 503) return res;
		await new Promise((r) => setTimeout(r, 50));
	}
}

async function createAndRead(argv: string[]): Promise<void> {
	const h = await start(argv);
	const ws = `${h.base}/1001`;
	const created = await send(`${ws}/docs/${CUSTOMER}`, { name: "Ada", email: "ada@example.com" });
	expect(created.status).toBe(201);
	const { CurrentWLogOffset, NewIDs } = (await created.json()) as {
		CurrentWLogOffset: number;
		NewIDs: Record<string, number>;
	};
	expect(CurrentWLogOffset).toBe(1);
	expect(NewIDs).toEqual({ "1": 322685000131072 });
	expect(created.headers.get("vvm-fencing-token")).toMatch(/^[1-9][0-9]*$/);
	const read = await fetch(`${ws}/docs/${CUSTOMER}/${NewIDs["1"]}`);
	expect(read.status).toBe(200);
	expect(await read.json()).toEqual({
		"sys.ID": 322685000131072,
		"sys.QName": CUSTOMER,
		name: "Ada",
		email: "ada@example.com",
	});
	const wlog = await fetch(`${ws}/wlog?offset=1&count=10`);
	expect(((await wlog.json()) as { results: unknown[] }).results).toHaveLength(1);
	expect(await stop(h)).toBe(0);
}

describe("create and read through the HTTP API", () => {
	it("on mem storage", { timeout: 30_000 }, async () => {
		await createAndRead(["--storage", "mem", "--partitions", "4"]);
	});

	it("on level storage, trust level 2 (atomic batches), across a restart", {
		timeout: 30_000,
	}, async () => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-host-cph-"));
		dirs.push(dir);
		const argv = ["--storage", "level", "--data-dir", dir, "--sequences-trust-level", "2"];
		await createAndRead(argv);
		// The restarted host continues the numbering of the durable PLog and WLog.
		const again = await start(argv);
		const res = await send(`${again.base}/1001/docs/${CUSTOMER}`, { name: "Bob" });
		expect(await res.json()).toEqual({ CurrentWLogOffset: 2, NewIDs: { "1": 322685000131073 } });
		expect(await stop(again)).toBe(0);
	});

	describe.skipIf(skipCas)("on Cassandra", () => {
		const argv = ["--storage", "cas", "--cas-contact-points", CAS, "--cas-keyspace", KEYSPACE];

		it("create and read", { timeout: 60_000 }, async () => {
			await createAndRead(argv);
		});

		it("the start-up line gives the keyspace's replication (one node: RF 1 is all it can hold, no warning)", {
			timeout: 60_000,
		}, async () => {
			const h = await start(argv);
			const open = await h.host.waitFor((l) => l.event === "storage-open");
			expect(open.location).toBe(`${CAS} keyspace ${KEYSPACE} (SimpleStrategy RF 1)`);
			expect(await stop(h)).toBe(0);
		});
	});

	describe.skipIf(skipPg)("on PostgreSQL", () => {
		it("create and read, across a restart", { timeout: 60_000 }, async () => {
			const argv = ["--storage", "pg", "--pg-url", PG_URL, "--pg-schema", KEYSPACE];
			await createAndRead(argv);
			const again = await start(argv);
			const res = await send(`${again.base}/1001/docs/${CUSTOMER}`, { name: "Bob" });
			expect(await res.json()).toEqual({ CurrentWLogOffset: 2, NewIDs: { "1": 322685000131073 } });
			expect(await stop(again)).toBe(0);
		});
	});

	describe.skipIf(skipRedis)("on Redis", () => {
		it("opens with the server's persistence in its location; a database it lacks is refused", {
			timeout: 30_000,
		}, async () => {
			const at = new URL(REDIS_URL);
			const opened = await openStorage({
				kind: "redis",
				settings: { url: REDIS_URL, keyPrefix: REDIS_PREFIX },
			});
			try {
				// tooling/servers/redis runs with appendonly yes, appendfsync always, and Redis'
				// default maxmemory-policy (checkRedisServer refuses an allkeys-* one).
				expect(opened.location).toBe(
					`${at.hostname}:${at.port} db ${at.pathname.slice(1) || "0"} key prefix "${REDIS_PREFIX}" (appendonly yes, appendfsync always, maxmemory-policy noeviction)`,
				);
			} finally {
				await opened.close();
			}
			// Redis answers the SELECT with an error and would leave the client on database 0.
			const wrongDb = new URL(REDIS_URL);
			wrongDb.pathname = "/9999";
			await expect(
				openStorage({ kind: "redis", settings: { url: wrongDb.href, keyPrefix: REDIS_PREFIX } }),
			).rejects.toThrow(
				`redis storage: cannot use ${at.hostname}:${at.port} db 9999 key prefix "${REDIS_PREFIX}": ERR DB index is out of range`,
			);
		});

		it("create and read, across a restart", { timeout: 60_000 }, async () => {
			const argv = [
				"--storage",
				"redis",
				"--redis-url",
				REDIS_URL,
				"--redis-key-prefix",
				REDIS_PREFIX,
			];
			await createAndRead(argv);
			// The restarted host continues the numbering of the PLog and WLog it finds in Redis.
			const again = await start(argv);
			const res = await send(`${again.base}/1001/docs/${CUSTOMER}`, { name: "Bob" });
			expect(await res.json()).toEqual({ CurrentWLogOffset: 2, NewIDs: { "1": 322685000131073 } });
			expect(await stop(again)).toBe(0);
		});
	});

	describe.skipIf(skipDyn)("on DynamoDB Local", () => {
		it("create and read", { timeout: 60_000 }, async () => {
			await createAndRead(["--storage", "dyn", "--dyn-endpoint", DYN, "--dyn-table", TABLE]);
		});

		it("two hosts split the partitions; the wrong one answers 421 naming the holder", {
			timeout: 60_000,
		}, async () => {
			const argv = [
				"--storage",
				"dyn",
				"--dyn-endpoint",
				DYN,
				"--dyn-table",
				TABLE_SPLIT,
				"--num-vvm",
				"2",
			];
			const shared = [...argv, "--partitions", "4"];
			const a = await start(shared);
			const b = await start(shared);
			const slotOf = (h: Started) =>
				h.host.lines.find((l) => l.event === "acquired")?.slot as number;
			expect(new Set([slotOf(a), slotOf(b)])).toEqual(new Set([1, 2]));
			const [one, two] = slotOf(a) === 1 ? [a, b] : [b, a];
			// wsid 2001 → partition 1 → slot 2; ask slot 1's host first.
			let wrong: Response;
			for (;;) {
				wrong = await send(`${one.base}/2001/docs/${CUSTOMER}`, { name: "Eve" });
				if (wrong.status !== 503) break; // the holder record is read within a second
			}
			expect(wrong.status).toBe(421);
			const body = (await wrong.json()) as { holder: string; partition: number; location: string };
			expect(body).toMatchObject({ holder: two.address, partition: 1 });
			const right = await send(body.location, { name: "Eve" });
			expect(right.status).toBe(201);
			expect(await right.json()).toMatchObject({ CurrentWLogOffset: 1 });
			expect(await stop(one)).toBe(0);
			expect(await stop(two)).toBe(0);
		});
	});
});
