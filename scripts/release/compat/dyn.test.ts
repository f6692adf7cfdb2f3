// The published DynamoDB driver against the published suites, on DynamoDB Local, with the
// @aws-sdk/client-dynamodb version the rehearsal installed.
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { electionsTestSuite } from "@vvm/ielections/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { afterAll, beforeAll } from "vitest";

const client = new DynamoDBClient({
	endpoint: process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000",
	region: "us-east-1",
	credentials: { accessKeyId: "local", secretAccessKey: "local" },
});
const tableName = `vvm-compat-${process.pid}-${Date.now().toString(36)}`;
beforeAll(async () => {
	await ensureDynamoTTLTable(client, tableName);
});
afterAll(async () => {
	await client.send(new DeleteTableCommand({ TableName: tableName }));
	client.destroy();
});
ttlStorageTestSuite("compat: ttlstorage-dyn", {
	supports: { atomicBatches: false, fencing: "ordered" },
	createStorage: ({ clock }) => createDynamoTTLStorage({ client, tableName, clock }),
});
electionsTestSuite("compat: ttlstorage-dyn", {
	createStorage: ({ clock }) => createDynamoTTLStorage({ client, tableName, clock }),
});
