// Benchmark of the DynamoDB driver against DynamoDB Local (bash tooling/servers/dynamodb/start.sh):
// ops/s and p50/p99 latency of insertIfNotExists, compareAndSwap and get, sequential and with 16
// operations in flight, on a fresh table that is deleted afterwards.
// Run: pnpm --filter @vvm/ttlstorage-dyn bench   (DYNAMODB_ENDPOINT, BENCH_OPS to change defaults)
import { availableParallelism } from "node:os";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { benchTTLStorage, formatBenchTable } from "@vvm/ttlstorage/testing";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "../src/index.ts";

const endpoint = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const operations = Number(process.env.BENCH_OPS ?? 1000);
const client = new DynamoDBClient({
	endpoint,
	region: "us-east-1",
	credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
const tableName = `vvm-bench-${process.pid}-${Date.now().toString(36)}`;
await ensureDynamoTTLTable(client, tableName);
const storage = createDynamoTTLStorage({ client, tableName });
try {
	const results = await benchTTLStorage(storage, {
		operations,
		log: (line) => console.error(line),
	});
	console.log(
		`\n@vvm/ttlstorage-dyn on DynamoDB Local (${endpoint}), ${availableParallelism()} cores, Node ${process.version}\n`,
	);
	console.log(formatBenchTable(results));
} finally {
	await storage.close();
	await client.send(new DeleteTableCommand({ TableName: tableName }));
	client.destroy();
}
