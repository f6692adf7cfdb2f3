import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createDynamoTTLStorage } from "../src/index.ts";
import { dynamoGate, useTable } from "./dynamo-local.ts";

const skip = await dynamoGate();
const { client, tableName } = useTable("conformance", skip);

ttlStorageTestSuite("ttlstorage-dyn (DynamoDB Local)", {
	time: "mock",
	skip,
	supports: { atomicBatches: false, fencing: "ordered" },
	createStorage: ({ clock }) => createDynamoTTLStorage({ client, tableName, clock }),
});
