import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import type { policies } from "cassandra-driver";
import type { HostConfig } from "./config.ts";

/** An opened storage driver plus whatever the host created for it (client, database). */
export interface OpenedStorage {
	readonly driver: TTLStorage;
	/** Human-readable location, for the logs. */
	readonly location: string;
	/** Closes the driver and the client or database the host created. */
	close(): Promise<void>;
}

/** Opening the storage failed: the CLI prints the message and exits with code 1. */
class StorageOpenError extends Error {
	override readonly name: string = "StorageOpenError";
	readonly code = "HOST_STORAGE_OPEN" as const;
}

async function load<T>(specifier: string, what: string, loader: () => Promise<T>): Promise<T> {
	try {
		return await loader();
	} catch (error) {
		throw new StorageOpenError(
			`${what}: cannot load ${specifier} (${error instanceof Error ? error.message : String(error)})`,
			{ cause: error },
		);
	}
}

const message = (error: unknown): string => {
	if (!(error instanceof Error)) return String(error);
	const cause = error.cause instanceof Error ? ` (${error.cause.message})` : "";
	return `${error.message}${cause}`;
};

/** Options of {@link openStorage}. */
export interface OpenStorageOptions {
	/**
	 * A stop request (SIGTERM during start-up): every network step of opening gives up at once,
	 * closes what it created and rejects with `signal.reason`.
	 */
	readonly signal?: AbortSignal;
}

/** Time one start-up request (a DynamoDB table check) may take before it fails. */
const STARTUP_REQUEST_TIMEOUT_MS = 5_000;

/** `work`, unless `signal` aborts first: then `undo` runs and the abort reason is thrown. */
async function untilStopped<T>(
	signal: AbortSignal | undefined,
	work: Promise<T>,
	undo: () => Promise<void>,
): Promise<T> {
	if (signal === undefined) return work;
	signal.throwIfAborted();
	let onAbort: () => void = () => {};
	const stopped = new Promise<never>((_, reject) => {
		onAbort = () => reject(signal.reason);
		signal.addEventListener("abort", onAbort, { once: true });
	});
	try {
		return await Promise.race([work, stopped]);
	} catch (error) {
		if (signal.aborted) {
			work.catch(() => {}); // settles after the undo; its outcome no longer matters
			await undo().catch(() => {});
		}
		throw error;
	} finally {
		signal.removeEventListener("abort", onAbort);
	}
}

/**
 * `--cas-address-map` (`HostConfig.casAddressMap`) as the driver's address translator: the nodes the cluster reports (in its
 * peers table, `host:port`) are reached at the mapped address instead (NAT, or one proxy per node
 * as in the chaos test); unmapped ones as reported.
 */
export function addressTranslation(
	resolution: typeof policies.addressResolution,
	map: Readonly<Record<string, string>>,
): { policies?: { addressResolution: policies.addressResolution.AddressTranslator } } {
	if (Object.keys(map).length === 0) return {};
	// The driver checks `instanceof AddressTranslator`, a class its typings declare as an interface.
	const Translator = (
		resolution as unknown as {
			AddressTranslator: new () => policies.addressResolution.AddressTranslator;
		}
	).AddressTranslator;
	const translator = new Translator();
	translator.translate = (
		address: string,
		port: number,
		callback: (endpoint: string) => void,
	): void => {
		const reported = `${address}:${port}`;
		callback(map[reported] ?? reported);
	};
	return { policies: { addressResolution: translator } };
}

/**
 * Opens the configured driver. Drivers and their clients are imported lazily, one per storage
 * kind, so the host starts fast and a missing driver fails with a clear message. A stop request
 * (`options.signal`) is honoured at every network step.
 */
export async function openStorage(
	config: HostConfig,
	options: OpenStorageOptions = {},
): Promise<OpenedStorage> {
	const { signal } = options;
	switch (config.storage) {
		case "mem": {
			const { createMemTTLStorage } = await load(
				"@vvm/ttlstorage-mem",
				"mem storage",
				() => import("@vvm/ttlstorage-mem"),
			);
			const driver = createMemTTLStorage();
			return { driver, location: "memory of this process", close: () => driver.close() };
		}
		case "level": {
			const [{ ClassicLevel }, { createLevelTTLStorage }] = await Promise.all([
				load("classic-level", "level storage", () => import("classic-level")),
				load("@vvm/ttlstorage-level", "level storage", () => import("@vvm/ttlstorage-level")),
			]);
			const dir = resolve(config.dataDir);
			const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
				keyEncoding: "view",
				valueEncoding: "view",
			});
			try {
				await mkdir(dir, { recursive: true });
				await db.open();
			} catch (error) {
				await db.close().catch(() => {});
				throw new StorageOpenError(
					`level storage: cannot open ${dir}: ${message(error)}; is another vvm-host using this --data-dir?`,
					{ cause: error },
				);
			}
			const driver = createLevelTTLStorage({ db, ownsDb: true });
			return {
				driver,
				location: dir,
				close: async () => {
					await driver.close();
					if (db.status !== "closed") await db.close();
				},
			};
		}
		case "dyn": {
			const [{ DynamoDBClient }, { createDynamoTTLStorage, ensureDynamoTTLTable }] =
				await Promise.all([
					load("@aws-sdk/client-dynamodb", "dyn storage", () => import("@aws-sdk/client-dynamodb")),
					load("@vvm/ttlstorage-dyn", "dyn storage", () => import("@vvm/ttlstorage-dyn")),
				]);
			const local = config.dynEndpoint !== undefined && process.env.AWS_ACCESS_KEY_ID === undefined;
			const client = new DynamoDBClient({
				region: config.dynRegion,
				...(config.dynEndpoint === undefined ? {} : { endpoint: config.dynEndpoint }),
				// DynamoDB Local accepts any credentials; real AWS uses the default provider chain.
				...(local ? { credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}),
			});
			const where = `${config.dynEndpoint ?? `AWS ${config.dynRegion}`} table ${config.dynTable}`;
			try {
				await ensureDynamoTTLTable(client, config.dynTable, {
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
			const driver = createDynamoTTLStorage({ client, tableName: config.dynTable });
			return {
				driver,
				location: where,
				close: async () => {
					await driver.close();
					client.destroy();
				},
			};
		}
		case "cas": {
			const [cassandra, { createCassandraTTLStorage, ensureCassandraSchema }] = await Promise.all([
				load("cassandra-driver", "cas storage", () => import("cassandra-driver")),
				load("@vvm/ttlstorage-cas", "cas storage", () => import("@vvm/ttlstorage-cas")),
			]);
			const casDriver = cassandra.Client
				? cassandra
				: (cassandra as unknown as { default: typeof cassandra }).default;
			const Client = casDriver.Client;
			const client = new Client({
				contactPoints: [...config.casContactPoints],
				localDataCenter: config.casLocalDc,
				...addressTranslation(casDriver.policies.addressResolution, config.casAddressMap),
			});
			const where = `${config.casContactPoints.join(",")} keyspace ${config.casKeyspace}`;
			try {
				await untilStopped(
					signal,
					(async () => {
						await client.connect();
						await ensureCassandraSchema(client, { keyspace: config.casKeyspace });
					})(),
					() => client.shutdown(),
				);
			} catch (error) {
				await client.shutdown().catch(() => {});
				if (signal?.aborted) throw signal.reason;
				throw new StorageOpenError(`cas storage: cannot use ${where}: ${message(error)}`, {
					cause: error,
				});
			}
			const driver = createCassandraTTLStorage({ client, keyspace: config.casKeyspace });
			return {
				driver,
				location: where,
				close: async () => {
					await driver.close();
					await client.shutdown();
				},
			};
		}
	}
}
