import type { Server } from "node:net";
import { createServer, Socket } from "node:net";
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { policies, types } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";
import { parseApplied } from "../src/statements.ts";
import {
	cassandraGate,
	firstContactPoint,
	newClient,
	useCassandraKeyspace,
} from "./cassandra-env.ts";
import { schemaRaceTests } from "./schema-race.ts";

// What only Cassandra shows; the shared suites run over this driver in packages/conformance.
const skip = await cassandraGate();
const fixture = useCassandraKeyspace("vvm_cas", skip);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
let n = 0;
const uniqueKey = (): Uint8Array => utf8(`cas-specific/${process.pid}/${Date.now()}/${++n}`);

async function rejection(p: Promise<unknown>): Promise<TTLStorageError> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e,
	);
	expect(TTLStorageError.is(error), `expected a TTLStorageError, got ${String(error)}`).toBe(true);
	return error as TTLStorageError;
}

/**
 * A TCP proxy in front of Cassandra that can swallow the server's replies, so a request reaches the
 * server (and is applied) while the client never hears back: a real ambiguous outcome.
 */
async function startProxy(target: { host: string; port: number }): Promise<{
	port: number;
	swallowReplies(on: boolean): void;
	close(): Promise<void>;
}> {
	let swallow = false;
	const sockets = new Set<Socket>();
	const server: Server = createServer((downstream) => {
		const upstream = new Socket();
		sockets.add(downstream).add(upstream);
		upstream.connect(target.port, target.host);
		downstream.on("data", (d) => upstream.write(d));
		upstream.on("data", (d) => {
			if (!swallow) downstream.write(d);
		});
		const end = (): void => {
			downstream.destroy();
			upstream.destroy();
		};
		downstream.on("error", end).on("close", end);
		upstream.on("error", end).on("close", end);
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	const address = server.address();
	if (address === null || typeof address === "string") throw new Error("proxy has no port");
	return {
		port: address.port,
		swallowReplies(on) {
			swallow = on;
		},
		close: () =>
			new Promise<void>((resolve) => {
				for (const s of sockets) s.destroy();
				server.close(() => resolve());
			}),
	};
}

describe.skipIf(skip)(`ttlstorage-cas: driver-specific${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	schemaRaceTests(() => ({ nodes: 1, pinnedClient: () => newClient() }));

	it("ensureCassandraSchema is idempotent and keeps an existing keyspace's replication", async () => {
		const { client, keyspace } = fixture();
		await ensureCassandraSchema(client, { keyspace });
		await ensureCassandraSchema(client, {
			keyspace,
			table: "second_table",
			replication: { class: "SimpleStrategy", replication_factor: 2 },
		});
		await ensureCassandraSchema(client, {
			keyspace,
			table: "second_table",
		});
		const tables = await client.execute(
			"SELECT table_name FROM system_schema.tables WHERE keyspace_name = ?",
			[keyspace],
		);
		expect(tables.rows.map((r) => r.get("table_name") as string).sort()).toEqual([
			"second_table",
			"ttl_values",
		]);
		const ks = await client.execute(
			"SELECT replication FROM system_schema.keyspaces WHERE keyspace_name = ?",
			[keyspace],
		);
		const replication = ks.rows[0]?.get("replication") as Record<string, string> | undefined;
		expect(replication?.replication_factor).toBe("1");
		const columns = await client.execute(
			"SELECT column_name, kind, type FROM system_schema.columns WHERE keyspace_name = ? AND table_name = ?",
			[keyspace, "ttl_values"],
		);
		expect(
			columns.rows.map((r) => `${r.get("column_name")}:${r.get("kind")}:${r.get("type")}`).sort(),
		).toEqual([
			"c_col:clustering:blob",
			"fence_stamp:regular:bigint",
			"p_key:partition_key:blob",
			"value:regular:blob",
		]);
		const storage = createCassandraTTLStorage({ client, keyspace, table: "second_table" });
		const p = uniqueKey();
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("v"), 0)).toBe(true);
		expect(await storage.get(p, utf8("k"))).toEqual(utf8("v"));
	});

	it("[applied] is parsed strictly from real lightweight-transaction results", async () => {
		const { client, keyspace } = fixture();
		const t = `${keyspace}.ttl_values`;
		const p = Buffer.from(uniqueKey());
		const k = Buffer.from("k");
		const lwt = `UPDATE ${t} SET value = ? WHERE p_key = ? AND c_col = ? IF value = null`;
		const first = await client.execute(lwt, [Buffer.from("a"), p, k], { prepare: true });
		expect(parseApplied(first.rows, "test")).toBe(true);
		const second = await client.execute(lwt, [Buffer.from("b"), p, k], { prepare: true });
		// A failed condition also returns the current value next to [applied].
		expect(second.rows[0]?.get("value")).toEqual(Buffer.from("a"));
		expect(parseApplied(second.rows, "test")).toBe(false);
		const plain = await client.execute(`SELECT value FROM ${t} WHERE p_key = ?`, [p], {
			prepare: true,
		});
		const error = (() => {
			try {
				parseApplied(plain.rows, "test");
			} catch (e) {
				return e;
			}
			return undefined;
		})();
		// The statement ran: whatever came back, the write may have been applied.
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
		expect(() => parseApplied([], "test")).toThrow(/no boolean \[applied\]/);
	});

	it("TTL: the server keeps TTL + 1 grace second, queryTTL reports the contract TTL, 0 is none", async () => {
		const { client, keyspace } = fixture();
		const storage = createCassandraTTLStorage({ client, keyspace });
		const p = uniqueKey();
		const serverTTL = async (cCols: string): Promise<unknown> =>
			(
				await client.execute(
					`SELECT TTL(value) AS t FROM ${keyspace}.ttl_values WHERE p_key = ? AND c_col = ?`,
					[Buffer.from(p), Buffer.from(cCols)],
					{ prepare: true },
				)
			).rows[0]?.get("t");
		expect(await storage.insertIfNotExists(p, utf8("ttl"), utf8("v"), 100)).toBe(true);
		expect(await serverTTL("ttl")).toBeGreaterThan(99);
		expect(await serverTTL("ttl")).toBeLessThanOrEqual(101);
		expect(await storage.queryTTL(p, utf8("ttl"))).toBeLessThanOrEqual(100);
		expect(await storage.queryTTL(p, utf8("ttl"))).toBeGreaterThan(98);
		await storage.put(p, utf8("none"), utf8("v"), 0);
		expect(await serverTTL("none")).toBeNull();
		expect(await storage.queryTTL(p, utf8("none"))).toBe(0);
		expect(await storage.compareAndSwap(p, utf8("ttl"), utf8("v"), utf8("w"), 0)).toBe(true);
		expect(await serverTTL("ttl")).toBeNull();
		expect(await storage.queryTTL(p, utf8("ttl"))).toBe(0);
	});

	it("a swap to a shorter TTL leaves no row behind, so the key can be taken again (voedger's INSERT row-marker bug)", async () => {
		const { client, keyspace } = fixture();
		const storage = createCassandraTTLStorage({ client, keyspace });
		const p = uniqueKey();
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("v"), 0)).toBe(true);
		expect(await storage.compareAndSwap(p, utf8("k"), utf8("v"), utf8("w"), 1)).toBe(true);
		await sleep(2_200);
		const rows = await client.execute(
			`SELECT * FROM ${keyspace}.ttl_values WHERE p_key = ?`,
			[Buffer.from(p)],
			{ prepare: true },
		);
		expect(rows.rows).toEqual([]);
		expect(await storage.insertIfNotExists(p, utf8("k"), utf8("again"), 5)).toBe(true);
		expect(await storage.get(p, utf8("k"))).toEqual(utf8("again"));
	});

	it("putBatch writes every item of a batch above Cassandra's batch size fail threshold", async () => {
		const { client, keyspace } = fixture();
		const storage = createCassandraTTLStorage({ client, keyspace });
		const p = uniqueKey();
		// 80 x 1 KiB = 80 KiB in one logged batch would exceed batch_size_fail_threshold (50 KiB);
		// each item is a lightweight transaction of its own.
		const items = Array.from({ length: 80 }, (_, i) => ({
			pKey: p,
			cCols: new Uint8Array([i]),
			value: new Uint8Array(1024).fill(i),
			ttlSeconds: i % 2 === 0 ? 60 : 0,
		}));
		items.push({
			pKey: p,
			cCols: new Uint8Array([200]),
			value: new Uint8Array(65_536),
			ttlSeconds: 0,
		});
		await storage.putBatch(items);
		const got: Array<{ cCols: Uint8Array; value: Uint8Array }> = [];
		for await (const r of storage.read(p)) got.push(r);
		expect(got.map((r) => r.cCols[0])).toEqual(items.map((it) => it.cCols[0]));
		expect(got.every((r, i) => r.value.length === items[i]?.value.length)).toBe(true);
		expect(await storage.queryTTL(p, new Uint8Array([0]))).toBeGreaterThan(50);
		expect(await storage.queryTTL(p, new Uint8Array([1]))).toBe(0);
	});

	it("read pages through a partition larger than pageSize, in cCols order", async () => {
		const { client, keyspace } = fixture();
		const storage = createCassandraTTLStorage({ client, keyspace, pageSize: 7 });
		const p = uniqueKey();
		const order = Array.from({ length: 30 }, (_, i) => (i * 7) % 30);
		for (const i of order) await storage.put(p, new Uint8Array([i]), utf8(`v${i}`));
		const all: number[] = [];
		for await (const r of storage.read(p)) all.push(r.cCols[0] as number);
		expect(all).toEqual(Array.from({ length: 30 }, (_, i) => i));
		const some: number[] = [];
		for await (const r of storage.read(p, { from: new Uint8Array([3]), to: new Uint8Array([25]) }))
			some.push(r.cCols[0] as number);
		expect(some).toEqual(Array.from({ length: 22 }, (_, i) => i + 3));
	});

	it("SERIAL reads see conditional writes (readConsistency: localSerial)", async () => {
		const { client, keyspace } = fixture();
		const writer = createCassandraTTLStorage({ client, keyspace });
		const serial = createCassandraTTLStorage({
			client,
			keyspace,
			readConsistency: types.consistencies.localSerial,
		});
		const p = uniqueKey();
		expect(await writer.insertIfNotExists(p, utf8("k"), utf8("v"), 30)).toBe(true);
		expect(await serial.get(p, utf8("k"))).toEqual(utf8("v"));
		expect(await serial.queryTTL(p, utf8("k"))).toBeGreaterThan(25);
	});

	it("a reply lost after the server applied a conditional write rejects with OUTCOME_UNKNOWN, never false", async () => {
		const { client, keyspace } = fixture();
		const proxy = await startProxy(firstContactPoint);
		// Every host the driver learns about is reached through the proxy.
		// The driver wants an instance of its AddressTranslator class, which its typings only
		// declare as an interface.
		const Translator = (
			policies.addressResolution as unknown as {
				AddressTranslator: new () => policies.addressResolution.AddressTranslator;
			}
		).AddressTranslator;
		const translator = Object.assign(new Translator(), {
			translate: (_address: string, _port: number, callback: (endpoint: string) => void) =>
				callback(`127.0.0.1:${proxy.port}`),
		});
		const viaProxy = newClient({
			contactPoints: [`127.0.0.1:${proxy.port}`],
			policies: { addressResolution: translator },
			socketOptions: { readTimeout: 1_000 },
		});
		try {
			await viaProxy.connect();
			const storage = createCassandraTTLStorage({ client: viaProxy, keyspace });
			const direct = createCassandraTTLStorage({ client, keyspace });
			const p = uniqueKey();
			// Prepare the statement while replies still flow.
			expect(await storage.insertIfNotExists(p, utf8("warm"), utf8("v"), 30)).toBe(true);
			proxy.swallowReplies(true);
			const error = await rejection(storage.insertIfNotExists(p, utf8("k"), utf8("mine"), 30));
			expect(error.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			expect(error.operation).toBe("insertIfNotExists");
			// The write did land: a caller that had taken the timeout as `false` would now hold a
			// key it believes someone else holds.
			expect(await direct.get(p, utf8("k"))).toEqual(utf8("mine"));
			const cas = await rejection(
				storage.compareAndSwap(p, utf8("k"), utf8("mine"), utf8("renewed"), 30),
			);
			expect(cas.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			const read = await rejection(storage.get(p, utf8("k")));
			expect(read.code).toBe("TTLSTORAGE_UNAVAILABLE");
		} finally {
			proxy.swallowReplies(false);
			await viaProxy.shutdown();
			await proxy.close();
		}
	});

	it("an unreachable cluster rejects with TTLSTORAGE_UNAVAILABLE", async () => {
		const closed = await startProxy(firstContactPoint);
		const port = closed.port;
		await closed.close();
		const nowhere = newClient({ contactPoints: [`127.0.0.1:${port}`] });
		try {
			const storage = createCassandraTTLStorage({ client: nowhere, keyspace: fixture().keyspace });
			const error = await rejection(
				storage.insertIfNotExists(uniqueKey(), utf8("k"), utf8("v"), 5),
			);
			expect(error.code).toBe("TTLSTORAGE_UNAVAILABLE");
		} finally {
			await nowhere.shutdown();
		}
	});

	it("close() leaves the caller's client usable", async () => {
		const { client, keyspace } = fixture();
		const storage: TTLStorage = createCassandraTTLStorage({ client, keyspace });
		await storage.close();
		const again = createCassandraTTLStorage({ client, keyspace });
		const p = uniqueKey();
		expect(await again.insertIfNotExists(p, utf8("k"), utf8("v"), 5)).toBe(true);
	});
});
