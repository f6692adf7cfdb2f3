import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { deposedLeaderSuite } from "../src/testing/index.ts";

// The mem driver with per-record ("ordered") fencing behaves like DynamoDB and Cassandra: the
// weaker guarantee cp must be safe under, run on every `pnpm test` without a server.
deposedLeaderSuite("deposed leader over ttlstorage-mem (fencing: ordered)", {
	createStorage: () => createMemTTLStorage({ fencing: "ordered" }),
});
