// Leader election over this driver: voedger's elections cases (acquire, renew, lose, release,
// cleanup during a renewal, storage failures, ...).
import { electionsTestSuite } from "@vvm/ielections/testing";
import { createSqliteTTLStorage } from "../src/sqlite-ttl-storage.ts";

electionsTestSuite("sqlite", {
	createStorage: ({ clock }) => createSqliteTTLStorage({ path: ":memory:", clock }),
});
