import { electionsTestSuite } from "@vvm/ielections/testing";
import { createDynamoTTLStorage } from "../src/index.ts";
import { dynamoGate, useTable } from "./dynamo-local.ts";

const skip = await dynamoGate();
const { client, tableName } = useTable("elections", skip);

electionsTestSuite("ttlstorage-dyn (DynamoDB Local)", {
	time: "mock",
	skip,
	createStorage: ({ clock }) => createDynamoTTLStorage({ client, tableName, clock }),
});
