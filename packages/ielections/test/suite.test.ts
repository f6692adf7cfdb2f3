import { electionsTestSuite } from "@vvm/ielections/testing";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

// The shared suite against the in-test storage; every driver package runs it against its driver.
electionsTestSuite("in-test storage", {
	createStorage: ({ clock }) => createMiniTTLStorage(clock),
});
