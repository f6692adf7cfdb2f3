// Shared wiring of the integration tests: DynamoDB Local gate, client, and a table per test file.
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { dynamoEnv } from "@vvm/vitest-config/servers";
import { afterAll, beforeAll } from "vitest";
import { DYNAMO_CLIENT_OPTIONS, ensureDynamoTTLTable } from "../src/index.ts";

export { dynamoGate } from "@vvm/vitest-config/servers";

export function newClient(): DynamoDBClient {
	return new DynamoDBClient({ ...dynamoEnv(), ...DYNAMO_CLIENT_OPTIONS });
}

/** A table name unique to this run. */
export function uniqueTableName(label: string): string {
	return `vvm-${label}-${process.pid.toString(36)}-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;
}

/**
 * Registers hooks that create a fresh table before the file's tests and delete it (and destroy
 * the client) afterwards; does nothing when the suite is skipped.
 */
export function useTable(
	label: string,
	skip: false | string,
): { client: DynamoDBClient; tableName: string } {
	const client = newClient();
	const tableName = uniqueTableName(label);
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
	return { client, tableName };
}
