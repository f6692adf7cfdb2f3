import type { DynamoDBClient, KeySchemaElement } from "@aws-sdk/client-dynamodb";
import {
	CreateTableCommand,
	DescribeTableCommand,
	DescribeTimeToLiveCommand,
	UpdateTimeToLiveCommand,
	waitUntilTableExists,
} from "@aws-sdk/client-dynamodb";
import { TTLStorageError } from "@vvm/ttlstorage";
import { toStorageError } from "./error-mapping.ts";
import { ATTR } from "./item.ts";
import { validateDynamoTableName } from "./names.ts";

function isNamed(error: unknown, name: string): boolean {
	return typeof error === "object" && error !== null && (error as { name?: unknown }).name === name;
}

function checkKeySchema(tableName: string, schema: readonly KeySchemaElement[] | undefined): void {
	const hash = schema?.find((k) => k.KeyType === "HASH")?.AttributeName;
	const range = schema?.find((k) => k.KeyType === "RANGE")?.AttributeName;
	if (hash !== ATTR.pk || range !== ATTR.ck) {
		throw new TTLStorageError(
			"TTLSTORAGE_FAILED",
			`table ${tableName} exists with key (${hash}, ${range}); expected (${ATTR.pk}, ${ATTR.ck})`,
			{ driver: "dyn", operation: "ensureDynamoTTLTable" },
		);
	}
}

/** Options of {@link ensureDynamoTTLTable}. */
export interface EnsureDynamoTTLTableOptions {
	/** Stops the check (and the wait for the table) at once; it rejects with `signal.reason`. */
	readonly signal?: AbortSignal;
	/**
	 * Timeout of each request in ms, so an endpoint that accepts connections but never answers
	 * fails instead of hanging (`TTLSTORAGE_UNAVAILABLE`); 0 = none. Default 5000.
	 */
	readonly requestTimeoutMs?: number;
}

/**
 * Creates the table of a DynamoDB TTL storage unless it exists: on-demand billing, binary
 * partition key `pk` and sort key `ck`, and native TTL enabled on the seconds attribute `ttl` (so
 * DynamoDB eventually reaps dead items; the driver never relies on it). Safe to call when the table
 * exists: it then checks the key schema and enables TTL if needed. Waits until the table is active.
 *
 * Safe to run from several processes at once on a new table (all resolve; one says `"created"`).
 * Every request has a timeout (`requestTimeoutMs`) and `signal` stops it all.
 *
 * @returns `"created"` or `"exists"`.
 * @example
 * ```ts
 * const client = new DynamoDBClient({ region: "eu-west-1", ...DYNAMO_CLIENT_OPTIONS });
 * await ensureDynamoTTLTable(client, "sysvvm");
 * const storage = createDynamoTTLStorage({ client, tableName: "sysvvm" });
 * ```
 */
export async function ensureDynamoTTLTable(
	client: DynamoDBClient,
	tableName: string,
	options: EnsureDynamoTTLTableOptions = {},
): Promise<"created" | "exists"> {
	validateDynamoTableName(tableName);
	const { signal, requestTimeoutMs = 5_000 } = options;
	if (!Number.isSafeInteger(requestTimeoutMs) || requestTimeoutMs < 0) {
		throw new RangeError(
			`[@vvm/ttlstorage-dyn] requestTimeoutMs must be an integer >= 0, got ${String(requestTimeoutMs)}`,
		);
	}
	signal?.throwIfAborted();
	const request = (): { abortSignal?: AbortSignal } => {
		const signals = [
			...(requestTimeoutMs > 0 ? [AbortSignal.timeout(requestTimeoutMs)] : []),
			...(signal === undefined ? [] : [signal]),
		];
		return signals.length === 0 ? {} : { abortSignal: AbortSignal.any(signals) };
	};
	const operation = "ensureDynamoTTLTable";
	let result: "created" | "exists" = "created";
	try {
		try {
			await client.send(
				new CreateTableCommand({
					TableName: tableName,
					BillingMode: "PAY_PER_REQUEST",
					AttributeDefinitions: [
						{ AttributeName: ATTR.pk, AttributeType: "B" },
						{ AttributeName: ATTR.ck, AttributeType: "B" },
					],
					KeySchema: [
						{ AttributeName: ATTR.pk, KeyType: "HASH" },
						{ AttributeName: ATTR.ck, KeyType: "RANGE" },
					],
				}),
				request(),
			);
		} catch (error) {
			if (!isNamed(error, "ResourceInUseException")) throw error;
			result = "exists";
		}
		await waitUntilTableExists(
			{
				client,
				maxWaitTime: 120,
				minDelay: 1,
				maxDelay: 5,
				...(signal === undefined ? {} : { abortSignal: signal }),
			},
			{ TableName: tableName },
		);
		if (result === "exists") {
			const described = await client.send(
				new DescribeTableCommand({ TableName: tableName }),
				request(),
			);
			checkKeySchema(tableName, described.Table?.KeySchema);
		}
		const ttlStatus = async () => {
			const ttl = await client.send(
				new DescribeTimeToLiveCommand({ TableName: tableName }),
				request(),
			);
			const status = ttl.TimeToLiveDescription?.TimeToLiveStatus;
			const attribute = ttl.TimeToLiveDescription?.AttributeName;
			if (status !== "ENABLED" && status !== "ENABLING") return false;
			if (attribute !== undefined && attribute !== ATTR.ttl) {
				throw new TTLStorageError(
					"TTLSTORAGE_FAILED",
					`table ${tableName} has native TTL on attribute ${attribute}; expected ${ATTR.ttl}`,
					{ driver: "dyn", operation },
				);
			}
			return true;
		};
		if (!(await ttlStatus())) {
			try {
				await client.send(
					new UpdateTimeToLiveCommand({
						TableName: tableName,
						TimeToLiveSpecification: { AttributeName: ATTR.ttl, Enabled: true },
					}),
					request(),
				);
			} catch (error) {
				// Another process enabling it at the same moment ("TimeToLive is already enabled",
				// or modified too often): fine if it is now on, on our attribute.
				if (!isNamed(error, "ValidationException") || !(await ttlStatus())) throw error;
			}
		}
		return result;
	} catch (error) {
		if (signal?.aborted) throw signal.reason;
		// Mapped as a read: creating the table and enabling TTL are idempotent (a lost answer to
		// CreateTable is found as "exists" by the next call), so calling it again is always safe.
		throw toStorageError(error, operation, "read");
	}
}
