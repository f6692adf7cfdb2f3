import { deposedLeaderSuite } from "../src/testing/index.ts";
import { dynamoGate, useDynamo } from "./servers.ts";

const skip = await dynamoGate();
const createStorage = useDynamo(skip);

deposedLeaderSuite("deposed leader over ttlstorage-dyn (DynamoDB Local)", {
	skip,
	createStorage,
	timeoutMs: 120_000,
});
