// Several processes creating the schema at once (issue 22, item 7): five hosts started together
// on a new keyspace must all start. Each racer is a client of its own, pinned to one node when
// there are several, so the CREATE statements meet on different coordinators.
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { expect, it } from "vitest";
import type { CassandraReplication } from "../src/index.ts";
import {
	cassandraSchemaStatements,
	createCassandraTTLStorage,
	ensureCassandraSchema,
} from "../src/index.ts";

/** How the race reaches the server: clients per coordinator, and the keyspace's replication. */
export interface SchemaRaceSetup {
	/** A new, unconnected client whose requests go to coordinator `i mod nodes`. */
	readonly pinnedClient: (i: number) => Client;
	readonly nodes: number;
	readonly replication?: CassandraReplication;
	/**
	 * Every table ID any node ever created for `keyspace.table`, where the test can see the nodes'
	 * data directories: a conflict that Cassandra has already resolved (by dropping all but one
	 * table, with whatever was written to them) leaves its losers there.
	 */
	readonly createdTableIds?: (keyspace: string, table: string) => string[];
}

const RACERS = 6;

/**
 * Registers the tests: racers create one table at once, on a new keyspace and on an existing one
 * (the CREATE TABLE statements then meet within a millisecond); all succeed, one table ID was ever
 * created, and a write through any coordinator is read through all.
 */
export function schemaRaceTests(setup: () => SchemaRaceSetup): void {
	for (const keyspaceExists of [false, true]) {
		it(`ensureCassandraSchema run by ${RACERS} clients at once on ${keyspaceExists ? "an existing keyspace without the table" : "a new keyspace"}: all succeed, one table ID was ever created, and a write through any coordinator is read through all`, async () => {
			await race(setup(), keyspaceExists);
		});
	}
}

async function race(
	{ pinnedClient, nodes, replication, createdTableIds }: SchemaRaceSetup,
	keyspaceExists: boolean,
): Promise<void> {
	const keyspace = `vvm_race_${process.pid.toString(36)}${Date.now().toString(36)}`;
	const clients = Array.from({ length: RACERS }, (_, i) => pinnedClient(i));
	try {
		await Promise.all(clients.map((c) => c.connect()));
		if (keyspaceExists) {
			// The helper's own keyspace statement, run alone before the race.
			const [createKeyspace = ""] = cassandraSchemaStatements({
				keyspace,
				...(replication === undefined ? {} : { replication }),
			});
			await clients[0]?.execute(createKeyspace);
		}
		const results = await Promise.allSettled(
			clients.map((client) =>
				ensureCassandraSchema(client, {
					keyspace,
					...(replication === undefined ? {} : { replication }),
				}),
			),
		);
		expect(results.map((r) => (r.status === "fulfilled" ? "ok" : String(r.reason)))).toEqual(
			clients.map(() => "ok"),
		);
		// One table ID on every coordinator: two IDs would mean writes through one node that the
		// others cannot see (Cassandra's schema conflict of concurrent CREATE TABLE).
		const ids = await Promise.all(
			clients.slice(0, nodes).map(async (client) => {
				const rows = await client.execute(
					"SELECT id FROM system_schema.tables WHERE keyspace_name = ? AND table_name = ?",
					[keyspace, "ttl_values"],
				);
				return rows.rows.map((r) => String(r.get("id")));
			}),
		);
		expect(new Set(ids.flat()).size, JSON.stringify(ids)).toBe(1);
		expect(ids.every((list) => list.length === 1)).toBe(true);
		// Each coordinator that created a table of its own before it heard of the others' made
		// a table ID of its own; Cassandra keeps one and drops the rest, with their writes.
		if (createdTableIds !== undefined) {
			expect(createdTableIds(keyspace, "ttl_values")).toEqual([...new Set(ids.flat())]);
		}
		// Every racer writes through its coordinator; every coordinator reads them all.
		const storages = clients.map((client) => createCassandraTTLStorage({ client, keyspace }));
		// One partition per racer: Paxos rounds on one partition would contend with each other.
		const pKey = (i: number): Uint8Array => utf8(`race/${i}`);
		await Promise.all(
			storages.map((s, i) => s.insertIfNotExists(pKey(i), utf8("k"), utf8(`v${i}`), 60)),
		);
		for (const s of storages.slice(0, nodes)) {
			const seen: string[] = [];
			for (let i = 0; i < RACERS; i++) {
				const v = await s.get(pKey(i), utf8("k"));
				seen.push(v === undefined ? "missing" : fromUtf8(v));
			}
			expect(seen).toEqual(clients.map((_, i) => `v${i}`));
		}
	} finally {
		await clients[0]?.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch(() => {});
		await Promise.all(clients.map((c) => c.shutdown()));
	}
}
