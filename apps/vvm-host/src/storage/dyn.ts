// --storage dyn: Amazon DynamoDB (or DynamoDB Local with --dyn-endpoint).
import { validateDynamoTableName } from "@vvm/ttlstorage-dyn/names";
import { ConfigError, nonEmpty } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import { load, message, STARTUP_REQUEST_TIMEOUT_MS, StorageOpenError } from "./entry.ts";

interface DynSettings {
	readonly endpoint: string | undefined;
	readonly table: string;
	readonly region: string;
}

const url = (raw: string, source: string): string => {
	try {
		const u = new URL(raw);
		if (u.protocol !== "http:" && u.protocol !== "https:") throw new Error("protocol");
	} catch {
		throw new ConfigError(
			`${source} must be an http(s) URL such as http://127.0.0.1:8000, got "${raw}"`,
		);
	}
	return raw;
};

/** The DynamoDB storage: `--dyn-endpoint`, `--dyn-table`, `--dyn-region`. */
export const dynStorage: StorageEntry = {
	kind: "dyn",
	summary: "DynamoDB",
	options: [
		{
			key: "endpoint",
			flag: "dyn-endpoint",
			env: ["DYNAMODB_ENDPOINT"],
			def: undefined,
			parse: url,
			help: "dyn: endpoint URL, e.g. http://127.0.0.1:8000 for DynamoDB Local (default: AWS)",
		},
		{
			key: "table",
			flag: "dyn-table",
			env: ["VVM_DYN_TABLE"],
			def: "vvm_ttl",
			parse: nonEmpty,
			help: "dyn: table (created if missing)",
		},
		{
			key: "region",
			flag: "dyn-region",
			env: ["VVM_DYN_REGION", "AWS_REGION"],
			def: "us-east-1",
			parse: nonEmpty,
			help: "dyn: AWS region",
		},
	],
	check(settings, name) {
		try {
			validateDynamoTableName(settings.table);
		} catch (error) {
			const rule = error instanceof Error ? error.message.replace(/^.*tableName /, "") : "";
			throw new ConfigError(`${name("table")} ${rule}`);
		}
	},
	async open(settings, signal) {
		const s = settings as unknown as DynSettings;
		const [
			{ DynamoDBClient },
			{ createDynamoTTLStorage, DYNAMO_CLIENT_OPTIONS, ensureDynamoTTLTable },
		] = await Promise.all([
			load("@aws-sdk/client-dynamodb", "dyn storage", () => import("@aws-sdk/client-dynamodb")),
			load("@vvm/ttlstorage-dyn", "dyn storage", () => import("@vvm/ttlstorage-dyn")),
		]);
		const local = s.endpoint !== undefined && process.env.AWS_ACCESS_KEY_ID === undefined;
		const client = new DynamoDBClient({
			region: s.region,
			...(s.endpoint === undefined ? {} : { endpoint: s.endpoint }),
			// DynamoDB Local accepts any credentials; real AWS uses the default provider chain.
			...(local ? { credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
			// Idle connections closed before the server closes them: else a write sent on one just
			// as it closes is reset and reported OUTCOME_UNKNOWN though it never arrived.
			...DYNAMO_CLIENT_OPTIONS,
		});
		const where = `${s.endpoint ?? `AWS ${s.region}`} table ${s.table}`;
		try {
			await ensureDynamoTTLTable(client, s.table, {
				requestTimeoutMs: STARTUP_REQUEST_TIMEOUT_MS,
				...(signal === undefined ? {} : { signal }),
			});
		} catch (error) {
			client.destroy();
			if (signal?.aborted) throw signal.reason;
			throw new StorageOpenError(`dyn storage: cannot use ${where}: ${message(error)}`, {
				cause: error,
			});
		}
		const driver = createDynamoTTLStorage({ client, tableName: s.table });
		return {
			driver,
			location: where,
			close: async () => {
				await driver.close();
				client.destroy();
			},
		};
	},
};
