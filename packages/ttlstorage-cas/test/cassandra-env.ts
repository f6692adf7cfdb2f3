// Shared set-up of the real-Cassandra test files: the gate, one client and one keyspace per file.
import { cassandraEnv, hostPort } from "@vvm/vitest-config/servers";
import type { ClientOptions } from "cassandra-driver";
import { Client } from "cassandra-driver";
import { afterAll, beforeAll } from "vitest";
import type { CassandraReplication } from "../src/index.ts";
import { ensureCassandraSchema } from "../src/index.ts";

export { cassandraGate } from "@vvm/vitest-config/servers";

/** Host and port of the first contact point of CASSANDRA_CONTACT_POINTS. */
export const firstContactPoint: { host: string; port: number } = hostPort(
	cassandraEnv().contactPoints[0] ?? "127.0.0.1:9042",
	9042,
);

/** A client for the configured cluster; the caller shuts it down. */
export function newClient(extra: Partial<ClientOptions> = {}): Client {
	return new Client({ ...cassandraEnv(), ...extra });
}

export interface CassandraFixture {
	/** The file's client, connected in `beforeAll`. */
	readonly client: Client;
	/** The file's keyspace (unique per run, dropped in `afterAll`), with the default table. */
	readonly keyspace: string;
}

/**
 * How long the fixture's `ensureCassandraSchema` waits for the nodes to agree on the new keyspace
 * (its own default), and the `beforeAll` bound above it (plus the connection). The hook once had
 * the preset's 60 s: in a CI run on a loaded machine node 1's push of a new RF 3 keyspace reached
 * node 2 60.4 s later (their internode connection was opened again only then), and the hook was
 * cut 0.4 s before the agreement `ensureCassandraSchema` was still rightly waiting for.
 */
const SCHEMA_AGREEMENT_MS = 120_000;
const KEYSPACE_HOOK_MS = SCHEMA_AGREEMENT_MS + 30_000;

/** Which cluster a fixture uses: default the single node, RF 1. */
export interface KeyspaceSetup {
	/** The file's client, not connected yet; default {@link newClient}. */
	readonly newClient?: () => Client;
	/** Replication of the keyspace; default `ensureCassandraSchema`'s (SimpleStrategy RF 1). */
	readonly replication?: CassandraReplication;
}

/**
 * Registers `beforeAll`/`afterAll` that connect one client, create one keyspace unique to this run
 * with the default table, and drop it again. Does nothing when `skip` is a reason.
 */
export function useCassandraKeyspace(
	prefix: string,
	skip: false | string,
	setup: KeyspaceSetup = {},
): () => CassandraFixture {
	const keyspace = `${prefix}_${process.pid.toString(36)}${Date.now().toString(36)}`;
	let client: Client | undefined;
	if (!skip) {
		beforeAll(async () => {
			client = (setup.newClient ?? newClient)();
			await client.connect();
			await ensureCassandraSchema(client, {
				keyspace,
				schemaAgreementTimeoutMs: SCHEMA_AGREEMENT_MS,
				...(setup.replication === undefined ? {} : { replication: setup.replication }),
			});
		}, KEYSPACE_HOOK_MS);
		afterAll(async () => {
			if (client === undefined) return;
			try {
				await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
			} finally {
				await client.shutdown();
			}
		});
	}
	return () => {
		if (client === undefined) throw new Error("the Cassandra client is not connected");
		return { client, keyspace };
	};
}
