import { electionsTestSuite } from "@vvm/ielections/testing";
import { createCassandraTTLStorage } from "../src/index.ts";
import { cassandraGate, useCassandraKeyspace } from "./cassandra-env.ts";

const skip = await cassandraGate();
const fixture = useCassandraKeyspace("vvm_elect", skip);

electionsTestSuite("ttlstorage-cas", {
	time: "real",
	skip,
	createStorage: () => createCassandraTTLStorage(fixture()),
});
