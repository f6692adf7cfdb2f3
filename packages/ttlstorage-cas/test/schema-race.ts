// Several processes creating the schema at once (issue 22, item 7): five hosts started together
// on a new keyspace must all start. Each racer is a client of its own, pinned to one node when
// there are several, so the CREATE statements meet on different coordinators.
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { expect, it } from "vitest";
import type { CassandraReplication } from "../src/index.ts";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";

/** How the race reaches the server: clients per coordinator, and the keyspace's replication. */
export interface SchemaRaceSetup {
	/** A new, unconnected client whose requests go to coordinator `i mod nodes`. */
	readonly pinnedClient: (i: number) => Client;
	readonly nodes: number;
	readonly replication?: CassandraReplication;
}

const RACERS = 6;

/** Registers the test: racers create one new keyspace and table at once, all succeed, one table. */
export function schemaRaceTests(setup: () => SchemaRaceSetup): void {
	it(`ensureCassandraSchema run by ${RACERS} clients at once on a new keyspace: all succeed, every coordinator sees one table, and a write through any is read through all`, async () => {
		const { pinnedClient, nodes, replication } = setup();
		const keyspace = `vvm_race_${process.pid.toString(36)}${Date.now().toString(36)}`;
		const clients = Array.from({ length: RACERS }, (_, i) => pinnedClient(i));
		try {
			await Promise.all(clients.map((c) => c.connect()));
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
	});
}
