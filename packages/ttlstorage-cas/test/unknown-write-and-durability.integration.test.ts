// Found by review, on the real Cassandra: (1) a write answered OUTCOME_UNKNOWN still lands after
// the re-read the README prescribed ("Re-read (at SERIAL if you must be sure) before deciding") said
// it had not, and replaces a write made after that re-read: no re-read settles it before the
// coordinator drops the request (native_transport_timeout), so the error now says so;
// (2) ensureCassandraSchema never checked commitlog_sync, on which acknowledged leases depend.
import { utf8 } from "@vvm/ttlstorage";
import { policies, types } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage, ensureCassandraSchema } from "../src/index.ts";
import {
	cassandraGate,
	firstContactPoint,
	newClient,
	useCassandraKeyspace,
} from "./cassandra-env.ts";
import { startCqlLateProxy } from "./cql-late-proxy.ts";

const skip = await cassandraGate();
const fixture = useCassandraKeyspace("unknownwrite", skip);
const text = (b: Uint8Array | undefined) =>
	b === undefined ? "absent" : new TextDecoder().decode(b);

describe.skipIf(skip !== false)("an OUTCOME_UNKNOWN write and the re-read", () => {
	it("a put answered OUTCOME_UNKNOWN lands after a SERIAL re-read said absent, over the caller's next write; the error says until when", async () => {
		const { client, keyspace } = fixture();
		const proxy = await startCqlLateProxy(firstContactPoint);
		const Translator = (
			policies.addressResolution as unknown as {
				AddressTranslator: new () => policies.addressResolution.AddressTranslator;
			}
		).AddressTranslator;
		const translator = Object.assign(new Translator(), {
			translate: (_a: string, _p: number, cb: (endpoint: string) => void) =>
				cb(`127.0.0.1:${proxy.port}`),
		});
		// An ordinary client (default policies) behind a slow link: 400 ms client timeout.
		const viaProxy = newClient({
			contactPoints: [`127.0.0.1:${proxy.port}`],
			protocolOptions: { maxVersion: 4 },
			socketOptions: { readTimeout: 400 },
			policies: { addressResolution: translator },
		});
		try {
			await viaProxy.connect();
			const slow = createCassandraTTLStorage({ client: viaProxy, keyspace });
			const serial = createCassandraTTLStorage({
				client,
				keyspace,
				readConsistency: types.consistencies.serial,
			});
			const pKey = utf8("late-after-reread");
			await slow.put(pKey, utf8("warm"), utf8("x")); // prepare while answers flow
			const cCols = utf8(`k-${Date.now()}`);
			const { held, answered } = proxy.arm();
			const first = slow.put(pKey, cCols, utf8("v1")).then(
				() => undefined,
				(e: unknown) => e as { code?: string; message?: string },
			);
			await held;
			const error = await first;
			expect(error?.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			expect(error?.message).toMatch(/native_transport_timeout.*even at SERIAL.*safe to land late/);
			// A linearizable (SERIAL) re-read: not applied, so the caller writes what it means now.
			expect(text(await serial.get(pKey, cCols))).toBe("absent");
			await serial.put(pKey, cCols, utf8("v2"));
			// The request of the "unknown" put reaches the coordinator now (a slow link, a queue).
			proxy.deliver();
			await answered;
			// The re-read settled nothing: the old put replaced the caller's later write.
			expect(text(await serial.get(pKey, cCols))).toBe("v1");
		} finally {
			await viaProxy.shutdown();
			await proxy.close();
		}
	}, 60_000);
});

describe.skipIf(skip !== false)("ensureCassandraSchema and commitlog_sync", () => {
	it("reads commitlog_sync from the server: the test server's batch passes without opt-in (a periodic node is refused: options.test.ts, with nodes of both kinds)", async () => {
		const { client } = fixture();
		const rs = await client.execute(
			"SELECT value FROM system_views.settings WHERE name = 'commitlog_sync'",
		);
		// tooling/servers/cassandra/cassandra.yaml and the cluster's template: batch.
		expect(String(rs.rows[0]?.get("value"))).toBe("batch");
		const keyspace = `unknownwrite_new_${process.pid.toString(36)}${Date.now().toString(36)}`;
		try {
			await ensureCassandraSchema(client, { keyspace });
			const ks = await client.execute(
				"SELECT keyspace_name FROM system_schema.keyspaces WHERE keyspace_name = ?",
				[keyspace],
			);
			expect(ks.rows).toHaveLength(1);
		} finally {
			await client.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`);
		}
	}, 120_000);
});
