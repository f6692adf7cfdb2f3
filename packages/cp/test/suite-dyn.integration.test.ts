import { cpTestSuite } from "../src/testing/index.ts";
import { dynamoGate, useDynamo } from "./servers.ts";

const skip = await dynamoGate();
const createStorage = useDynamo(skip);

cpTestSuite("cp over ttlstorage-dyn (DynamoDB Local)", { skip, createStorage, timeoutMs: 180_000 });
