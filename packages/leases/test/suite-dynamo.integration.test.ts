import { leasesTestSuite } from "../src/testing/index.ts";
import { dynamoGate, useDynamo } from "./helpers/servers.ts";

const skip = await dynamoGate();
const storage = useDynamo(skip);

// The driver compares expiry with the suite's MockClock, so every case runs on mock time.
leasesTestSuite("ttlstorage-dyn (DynamoDB Local)", {
	skip,
	createStorage: ({ clock }) => storage(clock),
	randomizedIntervals: 40,
});
