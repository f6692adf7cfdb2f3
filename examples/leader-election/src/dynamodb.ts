// Leader election over DynamoDB. With DYNAMODB_ENDPOINT set (e.g. http://127.0.0.1:8000 for
// DynamoDB Local) it uses that endpoint and the credentials local/local; otherwise AWS as
// configured in the environment.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
	createDynamoTTLStorage,
	DYNAMO_CLIENT_OPTIONS,
	ensureDynamoTTLTable,
} from "@vvm/ttlstorage-dyn";
import { everySecond, lead } from "./campaign.ts";

const endpoint = process.env.DYNAMODB_ENDPOINT;
// DYNAMO_CLIENT_OPTIONS: idle connections are closed before the server closes them (else a
// renewal sent on one just then fails as "outcome unknown" though it never arrived).
const client = new DynamoDBClient({
	...DYNAMO_CLIENT_OPTIONS,
	...(endpoint === undefined
		? {}
		: {
				endpoint,
				region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" },
			}),
});
const tableName = process.env.TABLE ?? "example_leaders";
try {
	await ensureDynamoTTLTable(client, tableName); // safe to repeat
	const storage = createDynamoTTLStorage({ client, tableName });
	await lead(storage, process.env.JOB ?? "report-generator", everySecond);
	await storage.close();
} finally {
	client.destroy();
}
