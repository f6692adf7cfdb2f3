// Leader election over DynamoDB. With DYNAMODB_ENDPOINT set (e.g. http://127.0.0.1:8000 for
// DynamoDB Local) it uses that endpoint and the credentials local/local; otherwise AWS as
// configured in the environment.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { everySecond, lead } from "./campaign.ts";

const endpoint = process.env.DYNAMODB_ENDPOINT;
const client = new DynamoDBClient(
	endpoint === undefined
		? {}
		: {
				endpoint,
				region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" },
			},
);
const tableName = process.env.TABLE ?? "example_leaders";
try {
	await ensureDynamoTTLTable(client, tableName); // safe to repeat
	const storage = createDynamoTTLStorage({ client, tableName });
	await lead(storage, process.env.JOB ?? "report-generator", everySecond);
	await storage.close();
} finally {
	client.destroy();
}
