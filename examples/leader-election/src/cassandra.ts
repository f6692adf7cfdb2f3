// Leader election over Apache Cassandra (lightweight transactions). CASSANDRA_CONTACT_POINTS is a
// comma-separated host:port list (default 127.0.0.1:9042), CASSANDRA_LOCAL_DC the local data center.

import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { Client } from "cassandra-driver";
import { everySecond, lead } from "./campaign.ts";

const client = new Client({
	contactPoints: (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(","),
	localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1",
});
const keyspace = process.env.KEYSPACE ?? "example_leaders";
try {
	await client.connect();
	// Creates the keyspace (SimpleStrategy RF 1 unless you pass `replication`) and the table.
	await ensureCassandraSchema(client, { keyspace });
	const storage = createCassandraTTLStorage({ client, keyspace });
	await lead(storage, process.env.JOB ?? "report-generator", everySecond);
	await storage.close();
} finally {
	await client.shutdown();
}
