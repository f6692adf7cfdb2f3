import { electionsTestSuite } from "@vvm/ielections/testing";
import { createMiniTTLStorage } from "./helpers/mini-ttl-storage.ts";

// The suite's "real" time path (used by server-backed drivers such as Cassandra) against the
// in-test storage on the system clock, so that path is proven here without a server.
electionsTestSuite("in-test storage, real time", {
	time: "real",
	createStorage: ({ clock }) => createMiniTTLStorage(clock),
});
