// The published Cassandra driver against the published suites (real time: the server enforces the
// TTL), with the cassandra-driver version the rehearsal installed.
import { electionsTestSuite } from "@vvm/ielections/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { Client } from "cassandra-driver";
import { afterAll, beforeAll } from "vitest";

const client = new Client({
	contactPoints: (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(","),
	localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1",
});
const keyspace = `vvm_compat_${process.pid}_${Date.now().toString(36)}`;
beforeAll(async () => {
	await client.connect();
	await ensureCassandraSchema(client, { keyspace });
});
afterAll(async () => {
	await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
	await client.shutdown();
});
ttlStorageTestSuite("compat: ttlstorage-cas", {
	time: "real",
	supports: { atomicBatches: false, fencing: "ordered" },
	createStorage: () => createCassandraTTLStorage({ client, keyspace }),
});
electionsTestSuite("compat: ttlstorage-cas", {
	time: "real",
	createStorage: () => createCassandraTTLStorage({ client, keyspace }),
});
