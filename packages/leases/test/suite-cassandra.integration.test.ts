import { leasesTestSuite } from "../src/testing/index.ts";
import { cassandraGate, useCassandra } from "./helpers/servers.ts";

const skip = await cassandraGate();
const storage = useCassandra(skip);

// Cassandra enforces TTL on its own clock: the suite runs its real-time cases (3 s leases).
leasesTestSuite("ttlstorage-cas (Cassandra)", {
	time: "real",
	skip,
	createStorage: () => storage(),
});
