// The TTL storage contract, case by case (expiry boundary, conditional writes, ranges, bad
// arguments, 20 concurrent writers of which exactly one wins, ...).
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createSqliteTTLStorage } from "../src/sqlite-ttl-storage.ts";

ttlStorageTestSuite("sqlite", {
	createStorage: ({ clock }) => createSqliteTTLStorage({ path: ":memory:", clock }),
});
