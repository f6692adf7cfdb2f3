import { deposedLeaderSuite } from "../src/testing/index.ts";
import { cassandraGate, useCassandra } from "./servers.ts";

const skip = await cassandraGate();
const createStorage = useCassandra(skip);

deposedLeaderSuite("deposed leader over ttlstorage-cas (real Cassandra)", {
	skip,
	createStorage,
	timeoutMs: 120_000,
});
