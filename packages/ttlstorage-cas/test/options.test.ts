import { TTLStorageError } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { errors, types } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import {
	cassandraSchemaStatements,
	createCassandraTTLStorage,
	ensureCassandraSchema,
	validateCassandraIdentifier,
} from "../src/index.ts";
import { cassandraStatements, remainingFromServer, serverTTL } from "../src/statements.ts";

/** A stand-in client that records every call, to prove nothing reaches the server. */
function recordingClient(): { client: Client; calls: string[] } {
	const calls: string[] = [];
	const client = {
		execute: async (cql: string) => {
			calls.push(cql);
			return { rows: [] };
		},
		batch: async () => {
			calls.push("batch");
		},
	} as unknown as Client;
	return { client, calls };
}

const badNames = [
	"",
	"Upper",
	"1abc",
	"_x",
	"with-dash",
	"a.b",
	"a b",
	`a${"b".repeat(48)}`,
	"sel;ect",
];

describe("bad identifiers and options are rejected before any I/O", () => {
	it("keyspace and table names", async () => {
		const { client, calls } = recordingClient();
		for (const name of badNames) {
			expect(() => createCassandraTTLStorage({ client, keyspace: name }), name).toThrow(RangeError);
			expect(
				() => createCassandraTTLStorage({ client, keyspace: "ok", table: name }),
				name,
			).toThrow(RangeError);
			await expect(ensureCassandraSchema(client, { keyspace: name }), name).rejects.toThrow(
				RangeError,
			);
			await expect(
				ensureCassandraSchema(client, { keyspace: "ok", table: name }),
				name,
			).rejects.toThrow(RangeError);
		}
		expect(() => validateCassandraIdentifier("keyspace", 42)).toThrow(/keyspace must match/);
		expect(calls).toEqual([]);
	});

	it("accepts lower-case names up to 48 characters", () => {
		const { client } = recordingClient();
		for (const name of ["a", "sysvvm", "ttl_values", `a${"b".repeat(47)}`, "a1_2"]) {
			expect(() => validateCassandraIdentifier("table", name)).not.toThrow();
			expect(() =>
				createCassandraTTLStorage({ client, keyspace: name, table: name }),
			).not.toThrow();
		}
	});

	it("consistency levels, page size, batch size, client", async () => {
		const { client, calls } = recordingClient();
		const ks = { client, keyspace: "ok" };
		const c = types.consistencies;
		expect(() => createCassandraTTLStorage({ ...ks, consistency: 99 })).toThrow(RangeError);
		expect(() => createCassandraTTLStorage({ ...ks, readConsistency: -1 })).toThrow(RangeError);
		expect(() => createCassandraTTLStorage({ ...ks, readConsistency: c.serial })).not.toThrow();
		expect(() => createCassandraTTLStorage({ ...ks, pageSize: 0 })).toThrow(RangeError);
		expect(() => createCassandraTTLStorage({ ...ks, maxBatchBytes: 1.5 })).toThrow(RangeError);
		for (const maxClockSkewMs of [-1, 0.5, 1001, Number.NaN])
			expect(() => createCassandraTTLStorage({ ...ks, maxClockSkewMs })).toThrow(RangeError);
		expect(() => createCassandraTTLStorage({ ...ks, maxClockSkewMs: 1000 })).not.toThrow();
		expect(() =>
			createCassandraTTLStorage({ client: {} as unknown as Client, keyspace: "ok" }),
		).toThrow(TypeError);
		await expect(
			ensureCassandraSchema(client, { keyspace: "ok", replication: {} }),
		).rejects.toThrow(RangeError);
		await expect(
			ensureCassandraSchema(client, {
				keyspace: "ok",
				replication: { class: "SimpleStrategy", replication_factor: -1 },
			}),
		).rejects.toThrow(RangeError);
		expect(calls).toEqual([]);
	});

	it("consistency levels: only quorum or stronger, serial levels only where they belong", () => {
		const { client, calls } = recordingClient();
		const c = types.consistencies;
		const make = (o: Record<string, number>) => () =>
			createCassandraTTLStorage({ client, keyspace: "ok", ...o });
		const weak = [c.any, c.one, c.two, c.three, c.localOne];
		for (const level of weak) {
			expect(make({ consistency: level }), `consistency ${level}`).toThrow(RangeError);
			expect(make({ readConsistency: level }), `readConsistency ${level}`).toThrow(RangeError);
			expect(make({ serialConsistency: level }), `serialConsistency ${level}`).toThrow(RangeError);
		}
		// A serial level is not a commit consistency (Cassandra refuses it there), and a quorum
		// level is not a Paxos level.
		expect(make({ consistency: c.serial })).toThrow(RangeError);
		expect(make({ consistency: c.localSerial })).toThrow(RangeError);
		expect(make({ serialConsistency: c.quorum })).toThrow(RangeError);
		expect(make({ consistency: c.one })).toThrow(
			/consistency must be one of cassandra-driver's types\.consistencies quorum, localQuorum, eachQuorum, all, got one \(1\)/,
		);
		for (const level of [c.quorum, c.localQuorum, c.eachQuorum, c.all]) {
			expect(make({ consistency: level })).not.toThrow();
			expect(make({ readConsistency: level })).not.toThrow();
		}
		for (const level of [c.serial, c.localSerial]) {
			expect(make({ serialConsistency: level })).not.toThrow();
			expect(make({ readConsistency: level })).not.toThrow();
		}
		// A weak read level is refused even when it would only be the default's override.
		expect(make({ consistency: c.localQuorum, readConsistency: c.localOne })).toThrow(
			/readConsistency .* got localOne/,
		);
		expect(calls).toEqual([]);
	});

	it("contract argument errors never reach the client", async () => {
		const { client, calls } = recordingClient();
		const storage = createCassandraTTLStorage({ client, keyspace: "ok" });
		const k = new Uint8Array([1]);
		await expect(storage.insertIfNotExists(new Uint8Array(), k, k, 1)).rejects.toThrow(RangeError);
		await expect(storage.compareAndSwap(k, k, k, k, -1)).rejects.toThrow(RangeError);
		await expect(storage.put(k, k, new Uint8Array(70_000))).rejects.toThrow(RangeError);
		expect(calls).toEqual([]);
	});
});

describe("CQL", () => {
	it("schema statements quote the replication map", () => {
		expect(
			cassandraSchemaStatements({
				keyspace: "sysvvm",
				replication: { class: "NetworkTopologyStrategy", "dc'1": 3 },
			}),
		).toEqual([
			"CREATE KEYSPACE IF NOT EXISTS sysvvm WITH replication = {'class': 'NetworkTopologyStrategy', 'dc''1': 3}",
			"CREATE TABLE IF NOT EXISTS sysvvm.ttl_values (p_key blob, c_col blob, value blob, fence_stamp bigint, PRIMARY KEY ((p_key), c_col)) WITH ID = '6a1e19bf-e321-5726-8cc9-5cea6e8f9a38'",
			"ALTER TABLE sysvvm.ttl_values ADD IF NOT EXISTS fence_stamp bigint",
		]);
		expect(cassandraSchemaStatements({ keyspace: "ks", table: "t" })[0]).toBe(
			"CREATE KEYSPACE IF NOT EXISTS ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
		);
	});

	it("the table ID is the version-5 UUID of keyspace.table in our namespace: the same for every caller and every version", () => {
		// Computed independently (Python's uuid.uuid5 with the namespace in schema.ts). A change
		// would let hosts of two versions started together create two tables again.
		const id = (keyspace: string, table?: string): string | undefined =>
			/WITH ID = '([0-9a-f-]{36})'$/.exec(
				cassandraSchemaStatements({ keyspace, ...(table === undefined ? {} : { table }) })[1] ?? "",
			)?.[1];
		expect(id("sysvvm")).toBe("6a1e19bf-e321-5726-8cc9-5cea6e8f9a38");
		expect(id("ks", "t")).toBe("64e15074-0365-5666-b245-f43d8f0631eb");
		expect(id("sysvvm", "ttl_values")).toBe(id("sysvvm"));
		expect(new Set([id("a", "bc"), id("ab", "c"), id("a", "b"), id("b", "a")]).size).toBe(4);
	});

	it("conditional writes are UPDATE ... IF, TTL is a bind marker", () => {
		const s = cassandraStatements("ks", "t");
		const set =
			"UPDATE ks.t USING TTL ? SET value = ?, fence_stamp = ? WHERE p_key = ? AND c_col = ?";
		expect(s.insertIfNotExists).toBe(`${set} IF value = null`);
		expect(s.compareAndSwap).toBe(`${set} IF value = ?`);
		expect(s.compareAndSwapFenced).toBe(`${set} IF value = ? AND fence_stamp < ?`);
		expect(s.compareAndSwapUnstamped).toBe(`${set} IF value = ? AND fence_stamp = null`);
		expect(s.compareAndDelete).toBe("DELETE FROM ks.t WHERE p_key = ? AND c_col = ? IF value = ?");
		expect(s.compareAndDeleteFenced).toBe(
			"DELETE FROM ks.t WHERE p_key = ? AND c_col = ? IF value = ? AND fence_stamp < ?",
		);
		expect(s.compareAndDeleteUnstamped).toBe(
			"DELETE FROM ks.t WHERE p_key = ? AND c_col = ? IF value = ? AND fence_stamp = null",
		);
		expect(s.put).toBe("UPDATE ks.t USING TTL ? SET value = ? WHERE p_key = ? AND c_col = ?");
		expect(s.putIfChanged).toBe(`${set} IF value != ?`);
		// Fenced puts: every write of a record is a lightweight transaction (issue 32).
		expect(s.putFenced).toBe(`${set} IF fence_stamp < ?`);
		expect(s.putUnstamped).toBe(`${set} IF fence_stamp = null`);
		expect(s.read.fromTo).toBe(
			"SELECT c_col, value FROM ks.t WHERE p_key = ? AND c_col >= ? AND c_col < ?",
		);
	});

	it("TTL grace second: written as T + 1, reported back as T; 0 means none", () => {
		expect(serverTTL(0)).toBe(0);
		expect(serverTTL(20)).toBe(21);
		expect(remainingFromServer(null)).toBe(0);
		expect(remainingFromServer(21)).toBe(20);
		expect(remainingFromServer(1)).toBe(1);
		expect(() => remainingFromServer(-3)).toThrow(/unexpected TTL/);
	});
});

describe("execution options", () => {
	it("conditional writes are prepared, not idempotent, at the configured (serial) consistency", async () => {
		const seen: Array<{ cql: string; params: unknown[]; options: Record<string, unknown> }> = [];
		const client = {
			execute: async (cql: string, params: unknown[], options: Record<string, unknown>) => {
				seen.push({ cql, params, options });
				return { rows: cql.includes(" IF ") ? [{ "[applied]": true }] : [] };
			},
		} as unknown as Client;
		const c = types.consistencies;
		const storage = createCassandraTTLStorage({
			client,
			keyspace: "ks",
			consistency: c.quorum,
			serialConsistency: c.serial,
		});
		const k = new Uint8Array([1]);
		expect(await storage.insertIfNotExists(k, k, k, 20)).toBe(true);
		expect(await storage.compareAndSwap(k, k, k, k, 0)).toBe(true);
		expect(await storage.compareAndDelete(k, k, k)).toBe(true);
		await storage.get(k, k);
		expect(seen).toHaveLength(4);
		for (const call of seen.slice(0, 3)) {
			expect(call.options).toMatchObject({
				prepare: true,
				isIdempotent: false,
				consistency: c.quorum,
				serialConsistency: c.serial,
			});
		}
		expect(seen[0]?.params[0]).toBe(21);
		expect(seen[1]?.params[0]).toBe(0);
		expect(seen[3]?.options).toMatchObject({
			prepare: true,
			isIdempotent: true,
			consistency: c.quorum,
		});
		expect(seen[3]?.options.serialConsistency).toBeUndefined();
	});

	it("defaults to QUORUM and SERIAL, and a result without [applied] is an unknown outcome", async () => {
		const seen: Array<Record<string, unknown>> = [];
		const client = {
			execute: async (_cql: string, _params: unknown[], options: Record<string, unknown>) => {
				seen.push(options);
				return { rows: [] };
			},
		} as unknown as Client;
		const storage = createCassandraTTLStorage({ client, keyspace: "ks" });
		const k = new Uint8Array([1]);
		// The statement ran: whatever came back, the write may have been applied.
		await expect(storage.insertIfNotExists(k, k, k, 5)).rejects.toMatchObject({
			code: "TTLSTORAGE_OUTCOME_UNKNOWN",
		});
		expect(seen[0]).toMatchObject({
			consistency: types.consistencies.quorum,
			serialConsistency: types.consistencies.serial,
		});
		await storage.get(k, k);
		expect(seen[1]).toMatchObject({ consistency: types.consistencies.quorum, isIdempotent: true });
	});
});

describe("unfenced puts are lightweight transactions", () => {
	/** A client answering each conditional statement from `applied` in turn. */
	function lwtClient(applied: Array<boolean | Error>) {
		const seen: Array<{ cql: string; params: unknown[]; options: Record<string, unknown> }> = [];
		const client = {
			execute: async (cql: string, params: unknown[], options: Record<string, unknown>) => {
				seen.push({ cql, params, options });
				const next = applied.shift();
				if (next instanceof Error) throw next;
				return { rows: [{ "[applied]": next ?? true }] };
			},
			batch: async () => {
				throw new Error("no batch expected");
			},
		} as unknown as Client;
		return { client, seen };
	}
	const k = new Uint8Array([1]);
	const v = new Uint8Array([2]);

	it("put: IF value != v, else IF value = v (renews the TTL), not idempotent, at SERIAL", async () => {
		const { client, seen } = lwtClient([false, true]);
		const storage = createCassandraTTLStorage({ client, keyspace: "ks" });
		await storage.put(k, k, v, 20);
		expect(seen.map((c) => c.cql)).toEqual([
			"UPDATE ks.ttl_values USING TTL ? SET value = ?, fence_stamp = ? WHERE p_key = ? AND c_col = ? IF value != ?",
			"UPDATE ks.ttl_values USING TTL ? SET value = ?, fence_stamp = ? WHERE p_key = ? AND c_col = ? IF value = ?",
		]);
		for (const call of seen) {
			expect(call.params[0]).toBe(21);
			// An unfenced write stores stamp 0: any fenced write may replace it.
			expect(String(call.params[2])).toBe("0");
			expect(call.options).toMatchObject({
				prepare: true,
				isIdempotent: false,
				serialConsistency: types.consistencies.serial,
			});
		}
	});

	it("gives up with UNAVAILABLE (nothing written) only after rounds that all applied nothing", async () => {
		const { client, seen } = lwtClient(Array.from({ length: 64 }, () => false));
		const storage = createCassandraTTLStorage({ client, keyspace: "ks" });
		await expect(storage.put(k, k, v)).rejects.toMatchObject({ code: "TTLSTORAGE_UNAVAILABLE" });
		expect(seen).toHaveLength(64);
	});

	it("putBatch: an item that fails after another was written is OUTCOME_UNKNOWN, never UNAVAILABLE", async () => {
		const unavailable = new errors.NoHostAvailableError({});
		const { client } = lwtClient([true, unavailable]);
		const storage = createCassandraTTLStorage({ client, keyspace: "ks" });
		await expect(
			storage.putBatch([
				{ pKey: k, cCols: k, value: v },
				{ pKey: k, cCols: k, value: k }, // same record: after the first
			]),
		).rejects.toMatchObject({ code: "TTLSTORAGE_OUTCOME_UNKNOWN" });
		// The same error before anything was written: nothing was written.
		const alone = createCassandraTTLStorage({
			client: lwtClient([unavailable]).client,
			keyspace: "ks",
		});
		await expect(alone.putBatch([{ pKey: k, cCols: k, value: v }])).rejects.toMatchObject({
			code: "TTLSTORAGE_UNAVAILABLE",
		});
	});
});

describe("fenced writes are lightweight transactions on the stored stamp", () => {
	const ks = "ks";
	const k = new Uint8Array([1]);
	const v = new Uint8Array([2]);
	const scope = new Uint8Array([9]);
	const fence = { scope, epoch: 1n };
	/**
	 * A client whose fence record (`c_col` empty) takes every write, and which answers the record's
	 * conditional statements from `answers` in turn: `[applied]`, and the stored `fence_stamp`
	 * (`null`: a row without it; `undefined`: no row).
	 */
	function fencedClient(answers: Array<{ applied: boolean; stamp?: bigint | null }>) {
		const seen: Array<{ cql: string; params: unknown[] }> = [];
		const client = {
			execute: async (cql: string, params: unknown[]) => {
				const cCols = params.find((p) => p instanceof Uint8Array && p.length === 0);
				if (cql.startsWith("SELECT")) return { rows: [] }; // the fence record: missing
				if (cCols !== undefined) return { rows: [{ "[applied]": true }] }; // the fence record
				seen.push({ cql, params });
				const next = answers.shift();
				if (next === undefined) throw new Error(`unexpected statement ${cql}`);
				const row: Record<string, unknown> = { "[applied]": next.applied };
				if (next.stamp !== undefined)
					row.fence_stamp = next.stamp === null ? null : types.Long.fromString(String(next.stamp));
				return { rows: [row] };
			},
		} as unknown as Client;
		return { client, seen };
	}
	const conditions = (seen: ReadonlyArray<{ cql: string }>): string[] =>
		seen.map((c) => c.cql.slice(c.cql.indexOf(" IF ") + 4));
	const stampOf = (call: { params: unknown[] } | undefined): bigint =>
		BigInt(String(call?.params[2]));

	it("put: IF fence_stamp < s applies over a lower stamp, in one round", async () => {
		const { client, seen } = fencedClient([{ applied: true }]);
		await createCassandraTTLStorage({ client, keyspace: ks }).put(k, k, v, 0, { fence });
		expect(conditions(seen)).toEqual(["fence_stamp < ?"]);
		// The stamp is stored and compared: the same value twice.
		expect(String(seen[0]?.params[5])).toBe(String(stampOf(seen[0])));
		expect(stampOf(seen[0]) > 0n).toBe(true);
	});

	it("put: a missing record or one without a stamp takes IF fence_stamp = null", async () => {
		const { client, seen } = fencedClient([{ applied: false }, { applied: true }]);
		await createCassandraTTLStorage({ client, keyspace: ks }).put(k, k, v, 0, { fence });
		expect(conditions(seen)).toEqual(["fence_stamp < ?", "fence_stamp = null"]);
	});

	it("put: a stored stamp at or above its own supersedes it: resolves, nothing more is sent", async () => {
		const { client, seen } = fencedClient([{ applied: false, stamp: 2n ** 62n }]);
		await createCassandraTTLStorage({ client, keyspace: ks }).put(k, k, v, 0, { fence });
		expect(conditions(seen)).toEqual(["fence_stamp < ?"]);
	});

	it("put: a lower stamp written between the two rounds sends the first statement again", async () => {
		const { client, seen } = fencedClient([
			{ applied: false, stamp: null },
			{ applied: false, stamp: 5n },
			{ applied: true },
		]);
		await createCassandraTTLStorage({ client, keyspace: ks }).put(k, k, v, 0, { fence });
		expect(conditions(seen)).toEqual(["fence_stamp < ?", "fence_stamp = null", "fence_stamp < ?"]);
	});

	it("compareAndSwap: false when the round saw a stamp (value differs, or superseded); the unstamped round for a record without one", async () => {
		const superseded = fencedClient([{ applied: false, stamp: 7n }]);
		await expect(
			createCassandraTTLStorage({ client: superseded.client, keyspace: ks }).compareAndSwap(
				k,
				k,
				v,
				k,
				0,
				{ fence },
			),
		).resolves.toBe(false);
		expect(conditions(superseded.seen)).toEqual(["value = ? AND fence_stamp < ?"]);
		const legacy = fencedClient([{ applied: false, stamp: null }, { applied: true }]);
		await expect(
			createCassandraTTLStorage({ client: legacy.client, keyspace: ks }).compareAndSwap(
				k,
				k,
				v,
				k,
				0,
				{ fence },
			),
		).resolves.toBe(true);
		expect(conditions(legacy.seen)).toEqual([
			"value = ? AND fence_stamp < ?",
			"value = ? AND fence_stamp = null",
		]);
		const missing = fencedClient([{ applied: false }, { applied: false }]);
		await expect(
			createCassandraTTLStorage({ client: missing.client, keyspace: ks }).compareAndSwap(
				k,
				k,
				v,
				k,
				0,
				{ fence },
			),
		).resolves.toBe(false);
	});

	it("putBatch: every item a lightweight transaction, stamps in item order, no logged batch", async () => {
		const { client, seen } = fencedClient([
			{ applied: true },
			{ applied: true },
			{ applied: true },
		]);
		await createCassandraTTLStorage({ client, keyspace: ks }).putBatch([
			{ pKey: k, cCols: k, value: v, fence },
			{ pKey: k, cCols: v, value: v },
			{ pKey: k, cCols: k, value: k, fence },
		]);
		expect(seen).toHaveLength(3);
		const fenced = seen.filter((c) => c.cql.endsWith("fence_stamp < ?"));
		expect(fenced).toHaveLength(2);
		// The record's later item carries the higher stamp and is sent after the earlier one.
		expect(stampOf(fenced[1]) > stampOf(fenced[0])).toBe(true);
		expect(fenced[1]?.params[1]).toEqual(Buffer.from(k));
	});
});

describe("ensureCassandraSchema waits for schema agreement", () => {
	/**
	 * A client of three nodes, the third down: after each DDL statement, node 2 reports an old
	 * schema version for `lagFor` checks. The down node's old version must not be waited for.
	 */
	function laggingClient(lagFor: number): { client: Client; ddl: string[]; checks: () => number } {
		const ddl: string[] = [];
		let checks = 0;
		let lagLeft = 0;
		const host = (address: string, up: boolean) => ({ address, isUp: () => up });
		const hosts = [host("n1", true), host("n2", true), host("n3", false)];
		const client = {
			getState: () => ({ getConnectedHosts: () => hosts }),
			execute: async (cql: string, _params?: unknown, options?: { host?: { address: string } }) => {
				if (cql.includes("system_views.settings")) {
					return { first: () => ({ get: () => "batch" }) };
				}
				if (!cql.startsWith("SELECT schema_version")) {
					ddl.push(cql);
					lagLeft = lagFor;
					return { rows: [] };
				}
				const address = options?.host?.address;
				if (address === "n3") throw new Error("a down node was asked");
				let version = `v${ddl.length}`;
				if (address === "n2") {
					checks++;
					if (lagLeft > 0) {
						lagLeft--;
						version = "old";
					}
				}
				return { first: () => ({ get: () => version }) };
			},
		} as unknown as Client;
		return { client, ddl, checks: () => checks };
	}

	it("goes on after each statement only once every connected node that is up reports one version", async () => {
		const { client, ddl, checks } = laggingClient(2);
		await ensureCassandraSchema(client, { keyspace: "ks" });
		expect(ddl).toHaveLength(3);
		// Per statement: two checks with node 2 behind, then the one where it has caught up.
		expect(checks()).toBe(9);
	});

	it("rejects with TTLSTORAGE_UNAVAILABLE, naming the versions, when the nodes still disagree at the deadline", async () => {
		const { client, ddl } = laggingClient(Number.POSITIVE_INFINITY);
		const error = await ensureCassandraSchema(client, {
			keyspace: "ks",
			schemaAgreementTimeoutMs: 30,
		}).catch((e: unknown) => e);
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_UNAVAILABLE");
		expect(String(error)).toMatch(
			/different schema versions 30 ms after `CREATE KEYSPACE.*\(n1 v1, n2 old;/,
		);
		expect(ddl).toHaveLength(1);
	});

	it("a bad schemaAgreementTimeoutMs is a RangeError before any I/O", async () => {
		const { client, calls } = recordingClient();
		for (const bad of [0, -1, 1.5, Number.NaN, "100" as unknown as number]) {
			await expect(
				ensureCassandraSchema(client, { keyspace: "ks", schemaAgreementTimeoutMs: bad }),
				String(bad),
			).rejects.toThrow(/schemaAgreementTimeoutMs must be a positive integer/);
		}
		expect(calls).toEqual([]);
	});
});

describe("unknown options are refused before any I/O", () => {
	it("a misspelt option is a TypeError naming it and the known ones", () => {
		// Found by review: `readConsistancy` was ignored, so reads ran at QUORUM, not SERIAL.
		const { client, calls } = recordingClient();
		expect(() =>
			createCassandraTTLStorage({
				client,
				keyspace: "ks",
				readConsistancy: types.consistencies.serial,
			} as never),
		).toThrow(
			/unknown option "readConsistancy"; the options are client, keyspace, table, consistency, serialConsistency, readConsistency, pageSize, maxBatchBytes, maxClockSkewMs/,
		);
		expect(calls).toEqual([]);
	});

	it("`clock` is refused: expiry follows the server's clock, never a client's", () => {
		// Found by review: callers written for the other drivers pass { clock } (a MockClock the
		// driver ignored), believing they control expiry.
		const { client } = recordingClient();
		const clock = { now: () => 0, setTimer: () => ({ cancel() {} }) };
		expect(() => createCassandraTTLStorage({ client, keyspace: "ks", clock } as never)).toThrow(
			/clock has no effect on this driver/,
		);
	});
});

describe("ensureCassandraSchema refuses a commit log that is not synced before the answer", () => {
	/** Three nodes, the third down; `modes` is what each reports for commitlog_sync. */
	function nodes(modes: Record<string, string>): { client: Client; calls: string[] } {
		const calls: string[] = [];
		const host = (address: string, up: boolean) => ({ address, isUp: () => up });
		const hosts = [host("n1", true), host("n2", true), host("n3", false)];
		const client = {
			getState: () => ({ getConnectedHosts: () => hosts }),
			execute: async (cql: string, _params?: unknown, options?: { host?: { address: string } }) => {
				calls.push(`${options?.host?.address ?? "any"} ${cql}`);
				if (cql.includes("system_views.settings")) {
					const mode = modes[options?.host?.address ?? ""];
					if (options?.host?.address === "n3") throw new Error("a down node was asked");
					return { first: () => (mode === undefined ? null : { get: () => mode }) };
				}
				return { rows: [], first: () => ({ get: () => "v1" }) };
			},
		} as unknown as Client;
		return { client, calls };
	}

	it("periodic on any connected node: TTLSTORAGE_FAILED naming the node, the setting and the fix; nothing created", async () => {
		const { client, calls } = nodes({ n1: "batch", n2: "periodic" });
		const error = await ensureCassandraSchema(client, { keyspace: "ks" }).catch((e: unknown) => e);
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_FAILED");
		expect(String(error)).toMatch(
			/commitlog_sync is periodic on n2 \(periodic\).*commitlog_sync: batch.*allowPeriodicCommitlog: true/,
		);
		expect(calls.filter((c) => c.includes("CREATE"))).toEqual([]);
	});

	it("batch or group everywhere: creates the schema; allowPeriodicCommitlog skips the check", async () => {
		const durable = nodes({ n1: "batch", n2: "group" });
		await ensureCassandraSchema(durable.client, { keyspace: "ks" });
		expect(durable.calls.filter((c) => c.includes("CREATE"))).toHaveLength(2);
		const periodic = nodes({ n1: "periodic", n2: "periodic" });
		await ensureCassandraSchema(periodic.client, { keyspace: "ks", allowPeriodicCommitlog: true });
		expect(periodic.calls.some((c) => c.includes("system_views"))).toBe(false);
	});

	it("a setting it cannot read is refused too; a bad allowPeriodicCommitlog is a TypeError before any I/O", async () => {
		const unread = nodes({ n1: "batch" }); // n2 reports no row
		const error = await ensureCassandraSchema(unread.client, { keyspace: "ks" }).catch(
			(e: unknown) => e,
		);
		expect(TTLStorageError.is(error) && error.code).toBe("TTLSTORAGE_FAILED");
		const { client, calls } = recordingClient();
		await expect(
			ensureCassandraSchema(client, { keyspace: "ks", allowPeriodicCommitlog: "yes" as never }),
		).rejects.toThrow("allowPeriodicCommitlog must be a boolean");
		expect(calls).toEqual([]);
	});
});
