// The real servers of the integration files: gates (skip with a reason locally, fail in CI) and a
// fresh keyspace or table per file, removed afterwards.
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Clock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { hostPort, requireServer } from "@vvm/vitest-config/servers";
import { Client } from "cassandra-driver";
import { afterAll, beforeAll } from "vitest";

const contactPoint =
	(process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(",")[0]?.trim() ??
	"127.0.0.1:9042";
const dynamoEndpoint = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const unique = `${process.pid.toString(36)}${Date.now().toString(36)}`;

function gate(
	name: string,
	endpoint: string,
	defaultPort: number,
	enabledVar: string,
	script: string,
): Promise<false | string> {
	const { host, port } = hostPort(endpoint, defaultPort);
	return requireServer({
		name,
		host,
		port,
		enabledVar,
		startHint: `bash tooling/servers/${script}`,
	});
}

/** `false` when Cassandra is reachable, else the reason to skip (throws in CI). */
export const cassandraGate = (): Promise<false | string> =>
	gate("Cassandra", contactPoint, 9042, "CASSANDRA_TESTS_ENABLED", "cassandra/start.sh");

/** `false` when DynamoDB Local is reachable, else the reason to skip (throws in CI). */
export const dynamoGate = (): Promise<false | string> =>
	gate("DynamoDB Local", dynamoEndpoint, 8000, "DYNAMODB_TESTS_ENABLED", "dynamodb/start.sh");

/** One client and one keyspace for the file; `storage()` is a driver over it. */
export function useCassandra(skip: false | string): () => TTLStorage {
	const keyspace = `vvm_leases_${unique}`;
	const client = new Client({
		contactPoints: [contactPoint],
		localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1",
	});
	if (!skip) {
		beforeAll(async () => {
			await client.connect();
			await ensureCassandraSchema(client, { keyspace });
		});
		afterAll(async () => {
			try {
				await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			} finally {
				await client.shutdown();
			}
		});
	}
	return () => createCassandraTTLStorage({ client, keyspace });
}

/** One client and one table for the file; `storage(clock)` is a driver over it. */
export function useDynamo(skip: false | string): (clock: Clock) => TTLStorage {
	const tableName = `vvm-leases-${unique}`;
	const client = new DynamoDBClient({
		endpoint: dynamoEndpoint,
		region: "us-east-1",
		credentials: { accessKeyId: "local", secretAccessKey: "local" },
	});
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
	return (clock) => createDynamoTTLStorage({ client, tableName, clock });
}
