// Opens each driver the benchmark runs on; real servers only when reachable.
import { mkdtemp, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { Clock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { createDynamoTTLStorage, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { Client } from "cassandra-driver";
import { ClassicLevel } from "classic-level";

type LevelDb = Parameters<typeof createLevelTTLStorage>[0]["db"];

export interface OpenDriver {
	readonly name: string;
	/** A storage comparing expiry with `clock` where the driver can (not Cassandra). */
	storage(clock: Clock): TTLStorage;
	close(): Promise<void>;
}

const cassandraAt = (process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042").split(",")[0] ?? "";
const dynamoAt = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;

function reachable(host: string, port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = connect({ host, port, timeout: 1000 });
		socket.once("connect", () => {
			socket.destroy();
			resolve(true);
		});
		socket.once("error", () => resolve(false));
		socket.once("timeout", () => {
			socket.destroy();
			resolve(false);
		});
	});
}

/** The drivers named in `names` that can be opened here, in order. */
export async function openDrivers(names: readonly string[]): Promise<OpenDriver[]> {
	const out: OpenDriver[] = [];
	for (const name of names) {
		if (name === "mem") {
			out.push({
				name: "mem",
				storage: (clock) => createMemTTLStorage({ clock }),
				close: async () => {},
			});
		} else if (name === "level") {
			const dir = await mkdtemp(join(tmpdir(), "vvm-leases-bench-"));
			const opened: TTLStorage[] = [];
			out.push({
				name: "level (classic-level on disk)",
				storage: (clock) => {
					const storage = createLevelTTLStorage({
						// classic-level's own abstract-level types differ in a detail from the
						// workspace's under exactOptionalPropertyTypes; the driver accepts it (its tests do).
						db: new ClassicLevel(join(dir, String(opened.length))) as unknown as LevelDb,
						clock,
						ownsDb: true,
					});
					opened.push(storage);
					return storage;
				},
				close: async () => {
					for (const s of opened) await s.close();
					await rm(dir, { recursive: true, force: true });
				},
			});
		} else if (name === "cas") {
			const [host = "127.0.0.1", port = "9042"] = cassandraAt.split(":");
			if (!(await reachable(host, Number(port)))) {
				console.error(`cas: no Cassandra at ${cassandraAt}, skipped`);
				continue;
			}
			const client = new Client({
				contactPoints: [cassandraAt],
				localDataCenter: process.env.CASSANDRA_LOCAL_DC ?? "datacenter1",
			});
			await client.connect();
			const keyspace = `vvm_leases_bench_${run}`;
			await ensureCassandraSchema(client, { keyspace });
			out.push({
				name: "Cassandra 5.0 (LWT)",
				storage: () => createCassandraTTLStorage({ client, keyspace }),
				close: async () => {
					await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
					await client.shutdown();
				},
			});
		} else if (name === "dyn") {
			const url = new URL(dynamoAt);
			if (!(await reachable(url.hostname, Number(url.port || 8000)))) {
				console.error(`dyn: no DynamoDB Local at ${dynamoAt}, skipped`);
				continue;
			}
			const client = new DynamoDBClient({
				endpoint: dynamoAt,
				region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" },
			});
			const tableName = `vvm-leases-bench-${run}`;
			await ensureDynamoTTLTable(client, tableName);
			out.push({
				name: "DynamoDB Local",
				storage: (clock) => createDynamoTTLStorage({ client, tableName, clock }),
				close: async () => {
					await client.send(new DeleteTableCommand({ TableName: tableName }));
					client.destroy();
				},
			});
		} else throw new Error(`unknown driver ${name} (mem, level, cas, dyn)`);
	}
	return out;
}
