// Shared wiring of the real-server suites: the gates, one Cassandra keyspace and one DynamoDB table
// per test file (unique per run, dropped afterwards).
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { hostPort, requireServer } from "@vvm/vitest-config/servers";
import { Client } from "cassandra-driver";
import { afterAll, beforeAll } from "vitest";

const contactPoints = (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042")
	.split(",")
	.map((s) => s.trim())
	.filter((s) => s !== "");
const localDataCenter = process.env.CASSANDRA_LOCAL_DC ?? "datacenter1";
const dynamoEndpoint = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const runTag = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/** `false` when Cassandra is reachable, else the reason to skip (throws in CI). */
export function cassandraGate(): Promise<false | string> {
	const { host, port } = hostPort(contactPoints[0] ?? "127.0.0.1:9042", 9042);
	return requireServer({
		name: "Cassandra",
		host,
		port,
		enabledVar: "CASSANDRA_TESTS_ENABLED",
		startHint: "bash tooling/servers/cassandra/start.sh",
	});
}

/** `false` when DynamoDB Local is reachable, else the reason to skip (throws in CI). */
export function dynamoGate(): Promise<false | string> {
	const { host, port } = hostPort(dynamoEndpoint, 8000);
	return requireServer({
		name: "DynamoDB Local",
		host,
		port,
		enabledVar: "DYNAMODB_TESTS_ENABLED",
		startHint: "bash tooling/servers/dynamodb/start.sh",
	});
}

/** A storage factory over a keyspace created for this file (nothing happens when skipped). */
export function useCassandra(skip: false | string): () => TTLStorage {
	const keyspace = `vvm_cp_${runTag}`;
	let client: Client | undefined;
	if (!skip) {
		beforeAll(async () => {
			client = new Client({ contactPoints, localDataCenter });
			await client.connect();
			await ensureCassandraSchema(client, { keyspace });
		});
		afterAll(async () => {
			if (client === undefined) return;
			try {
				await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			} finally {
				await client.shutdown();
			}
		});
	}
	return () => {
		if (client === undefined) throw new Error("the Cassandra client is not connected");
		return createCassandraTTLStorage({ client, keyspace });
	};
}

/** A storage factory over a table created for this file (nothing happens when skipped). */
export function useDynamo(skip: false | string): () => TTLStorage {
	const client = new DynamoDBClient({
		endpoint: dynamoEndpoint,
		region: "us-east-1",
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
	});
	const tableName = `vvm-cp-${runTag}`;
	if (!skip) {
		beforeAll(async () => {
			await ensureDynamoTTLTable(client, tableName);
		});
		afterAll(async () => {
			try {
				await client.send(new DeleteTableCommand({ TableName: tableName }));
			} finally {
				client.destroy();
			}
		});
	}
	return () => createDynamoTTLStorage({ client, tableName });
}
