import {
	CreateTableCommand,
	DeleteTableCommand,
	DescribeTableCommand,
	DescribeTimeToLiveCommand,
	GetItemCommand,
} from "@aws-sdk/client-dynamodb";
import { MockClock } from "@vvm/clock";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "../src/index.ts";
import { dynamoGate, newClient, uniqueTableName, useTable } from "./dynamo-local.ts";

const skip = await dynamoGate();
const { client, tableName } = useTable("driver", skip);
const run = `${process.pid}-${Date.now()}`;

describe.skipIf(skip)(
	`ttlstorage-dyn on DynamoDB Local${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		it("ensureDynamoTTLTable creates an on-demand table with binary keys and native TTL, and is safe to repeat", async () => {
			const name = uniqueTableName("ensure");
			try {
				expect(await ensureDynamoTTLTable(client, name)).toBe("created");
				expect(await ensureDynamoTTLTable(client, name)).toBe("exists");
				const { Table } = await client.send(new DescribeTableCommand({ TableName: name }));
				expect(Table?.TableStatus).toBe("ACTIVE");
				expect(Table?.BillingModeSummary?.BillingMode).toBe("PAY_PER_REQUEST");
				expect(Table?.KeySchema).toEqual([
					{ AttributeName: "pk", KeyType: "HASH" },
					{ AttributeName: "ck", KeyType: "RANGE" },
				]);
				expect(Table?.AttributeDefinitions).toEqual(
					expect.arrayContaining([
						{ AttributeName: "pk", AttributeType: "B" },
						{ AttributeName: "ck", AttributeType: "B" },
					]),
				);
				const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
				expect(ttl.TimeToLiveDescription).toMatchObject({
					TimeToLiveStatus: "ENABLED",
					AttributeName: "ttl",
				});
			} finally {
				await client.send(new DeleteTableCommand({ TableName: name }));
			}
		});

		it("ensureDynamoTTLTable run by five processes at once on a new table: all succeed, one creates it", async () => {
			const name = uniqueTableName("race");
			const clients = Array.from({ length: 5 }, () => newClient());
			try {
				const results = await Promise.all(clients.map((c) => ensureDynamoTTLTable(c, name)));
				expect(results.filter((r) => r === "created")).toHaveLength(1);
				expect(results.filter((r) => r === "exists")).toHaveLength(4);
				const ttl = await client.send(new DescribeTimeToLiveCommand({ TableName: name }));
				expect(ttl.TimeToLiveDescription).toMatchObject({
					TimeToLiveStatus: "ENABLED",
					AttributeName: "ttl",
				});
			} finally {
				await client.send(new DeleteTableCommand({ TableName: name }));
				for (const c of clients) c.destroy();
			}
		});

		it("ensureDynamoTTLTable refuses a table with another key schema", async () => {
			const name = uniqueTableName("foreign");
			await client.send(
				new CreateTableCommand({
					TableName: name,
					BillingMode: "PAY_PER_REQUEST",
					AttributeDefinitions: [{ AttributeName: "id", AttributeType: "S" }],
					KeySchema: [{ AttributeName: "id", KeyType: "HASH" }],
				}),
			);
			try {
				const error = await ensureDynamoTTLTable(client, name).catch((e: unknown) => e);
				expect(TTLStorageError.is(error)).toBe(true);
				expect((error as TTLStorageError).code).toBe("TTLSTORAGE_FAILED");
			} finally {
				await client.send(new DeleteTableCommand({ TableName: name }));
			}
		});

		it("stores ms expiry and a native TTL with grace; an expired item DynamoDB has not reaped is invisible", async () => {
			const clock = new MockClock();
			const storage = createDynamoTTLStorage({ client, tableName, clock, reapGraceSeconds: 600 });
			const pKey = utf8(`raw/${run}`);
			const start = clock.now();
			expect(await storage.insertIfNotExists(pKey, utf8("k"), utf8("v"), 5)).toBe(true);
			const raw = async () =>
				(
					await client.send(
						new GetItemCommand({
							TableName: tableName,
							Key: { pk: { B: pKey }, ck: { B: new Uint8Array([0, ...utf8("k")]) } },
							ConsistentRead: true,
						}),
					)
				).Item;
			const item = await raw();
			expect(item?.exp?.N).toBe(String(start + 5_000));
			expect(item?.ttl?.N).toBe(String(Math.ceil((start + 5_000) / 1000) + 600));
			expect(item?.v?.B).toEqual(utf8("v"));
			clock.advance(5_000);
			expect(await raw()).toBeDefined(); // still in the table...
			expect(await storage.get(pKey, utf8("k"))).toBeUndefined(); // ...but expired for every reader
			expect(await storage.insertIfNotExists(pKey, utf8("k"), utf8("w"), 5)).toBe(true);
			await storage.close();
		});

		it("the server reaps by its own clock: a client clock more than reapGraceSeconds behind loses a live record", async () => {
			// A client clock 2 h slow (here a MockClock started 2 h in the past) writes a native TTL
			// in the server's past: DynamoDB Local deletes the item about a second later, while the
			// client still sees it as live. This is why the grace exists and why tests on mock time
			// start their clock at the real time.
			const clock = new MockClock(Date.now() - 2 * 3600_000);
			const storage = createDynamoTTLStorage({ client, tableName, clock });
			const onTime = createDynamoTTLStorage({ client, tableName });
			const pKey = utf8(`reaped/${run}`);
			expect(await storage.insertIfNotExists(pKey, utf8("k"), utf8("v"), 60)).toBe(true);
			expect(await onTime.insertIfNotExists(pKey, utf8("control"), utf8("c"), 60)).toBe(true);
			// Not asserted that a get still finds it: DynamoDB Local's reaper may already have run (a
			// CI run on Node 24 read nothing right after the insert).
			// Poll the server until its reaper has run; a deadline keeps a changed server from hanging.
			const deadline = performance.now() + 20_000;
			while ((await storage.get(pKey, utf8("k"))) !== undefined && performance.now() < deadline)
				await new Promise((resolve) => setTimeout(resolve, 100));
			expect(await storage.get(pKey, utf8("k"))).toBeUndefined();
			// The same record written with a correct clock is still there.
			expect(await onTime.get(pKey, utf8("control"))).toEqual(utf8("c"));
			expect(await storage.insertIfNotExists(pKey, utf8("k"), utf8("w"), 60)).toBe(true);
			await storage.close();
			await onTime.close();
		});

		it("two clients racing on one key: exactly one insertIfNotExists and one compareAndSwap win", async () => {
			const other = newClient();
			try {
				const clock = new MockClock();
				const a = createDynamoTTLStorage({ client, tableName, clock });
				const b = createDynamoTTLStorage({ client: other, tableName, clock });
				const pKey = utf8(`race/${run}`);
				const inserts = await Promise.all(
					Array.from({ length: 20 }, (_, i) =>
						(i % 2 ? a : b).insertIfNotExists(pKey, utf8("leader"), utf8(`vvm-${i}`), 20),
					),
				);
				expect(inserts.filter(Boolean)).toHaveLength(1);
				const winner = utf8(`vvm-${inserts.indexOf(true)}`);
				const swaps = await Promise.all(
					Array.from({ length: 20 }, (_, i) =>
						(i % 2 ? a : b).compareAndSwap(pKey, utf8("leader"), winner, utf8(`next-${i}`), 20),
					),
				);
				expect(swaps.filter(Boolean)).toHaveLength(1);
				expect(await a.get(pKey, utf8("leader"))).toEqual(utf8(`next-${swaps.indexOf(true)}`));
			} finally {
				other.destroy();
			}
		});

		it("putBatch writes more than one chunk of 25 in one call", async () => {
			const storage = createDynamoTTLStorage({ client, tableName, clock: new MockClock() });
			const pKey = utf8(`batch/${run}`);
			await storage.putBatch(
				Array.from({ length: 80 }, (_, i) => ({
					pKey,
					cCols: new Uint8Array([i]),
					value: utf8(`v${i}`),
					ttlSeconds: 60,
				})),
			);
			const got: number[] = [];
			for await (const r of storage.read(pKey)) got.push(r.cCols[0] as number);
			expect(got).toEqual(Array.from({ length: 80 }, (_, i) => i));
		});
	},
);
