// A request delivered after its timeout: the proxy holds every byte until the client gave up,
// then delivers it, and the write lands. The driver must have said OUTCOME_UNKNOWN (it may have
// been applied), never UNAVAILABLE ("nothing was written").
import type { TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ProxiedStorage } from "../src/servers.ts";
import {
	cassandraGate,
	dynamoGate,
	postgresGate,
	proxiedCassandra,
	proxiedDynamo,
	proxiedPostgres,
	proxiedRedis,
	redisGate,
} from "../src/servers.ts";

const servers = [
	{ name: "pg", gate: postgresGate, open: proxiedPostgres },
	{ name: "cas", gate: cassandraGate, open: proxiedCassandra },
	{ name: "dyn", gate: dynamoGate, open: proxiedDynamo },
	{ name: "redis", gate: redisGate, open: (seed: number) => proxiedRedis(seed) },
];

const text = (v: Uint8Array | undefined): string | undefined =>
	v === undefined ? undefined : new TextDecoder().decode(v);

/** The code the write rejected with (or "resolved"). */
async function codeOf(write: Promise<unknown>): Promise<string> {
	try {
		await write;
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : `foreign: ${String(error)}`;
	}
}

/** Reads `cCols` until it holds `want` (the late write landed) or 10 s passed. */
async function eventually(
	storage: TTLStorage,
	pKey: Uint8Array,
	cCols: Uint8Array,
	want: string,
): Promise<string | undefined> {
	let last: string | undefined;
	for (let i = 0; i < 100; i++) {
		try {
			last = text(await storage.get(pKey, cCols));
			if (last === want) return last;
		} catch {
			// reconnecting
		}
		await new Promise((r) => setTimeout(r, 100));
	}
	return last;
}

for (const server of servers) {
	const skip = await server.gate();
	describe.skipIf(skip)(`${server.name}: a request delivered after its timeout`, () => {
		let s: ProxiedStorage;
		const pKey = utf8(`late/${server.name}/${Date.now()}`);
		const scope = utf8(`late/${server.name}/${Date.now()}/fence`);
		beforeAll(async () => {
			s = await server.open(31);
			// Connections up, every statement prepared (so the held request is the write itself),
			// the record the swap expects in place.
			await s.storage.put(pKey, utf8("cas"), utf8("v0"));
			await s.storage.insertIfNotExists(pKey, utf8("warm"), utf8("w0"), 0);
			await s.storage.compareAndSwap(pKey, utf8("warm"), utf8("w0"), utf8("w1"), 0);
			await s.storage.putBatch([{ pKey, cCols: utf8("warm"), value: utf8("w2") }]);
			// The fence raised and a fenced write done: the held one needs no raise of its own.
			await s.storage.raiseFence?.(scope, 1n);
			await s.storage.put(pKey, utf8("warm"), utf8("w3"), 0, { fence: { scope, epoch: 1n } });
		});
		afterAll(async () => {
			await s?.close();
		});

		const cases: {
			label: string;
			key: string;
			value: string;
			write: (st: TTLStorage, cCols: Uint8Array) => Promise<unknown>;
			/** Right before the hold (Cassandra: a fresh stamp reservation, so the put is sent at once). */
			before?: (st: TTLStorage) => Promise<unknown>;
		}[] = [
			{
				label: "put",
				key: "put",
				value: "late-put",
				write: (st, c) => st.put(pKey, c, utf8("late-put")),
			},
			{
				label: "insertIfNotExists",
				key: "ins",
				value: "late-ins",
				write: (st, c) => st.insertIfNotExists(pKey, c, utf8("late-ins"), 0),
			},
			{
				label: "putBatch",
				key: "batch",
				value: "late-batch",
				write: (st, c) => st.putBatch([{ pKey, cCols: c, value: utf8("late-batch") }]),
			},
			{
				label: "fenced put",
				key: "fenced",
				value: "late-fenced",
				write: (st, c) => st.put(pKey, c, utf8("late-fenced"), 0, { fence: { scope, epoch: 1n } }),
				// The record exists, written by an earlier fenced put: Cassandra's fenced put is a
				// lightweight transaction whose first round (`IF fence_stamp < ?`) is the held request,
				// and it applies only over a stored stamp (a missing record takes a second round).
				before: async (st) => {
					await st.put(pKey, utf8("warm"), utf8("w4"), 0, { fence: { scope, epoch: 1n } });
					await st.put(pKey, utf8("fenced"), utf8("f0"), 0, { fence: { scope, epoch: 1n } });
				},
			},
			{
				label: "compareAndSwap",
				key: "cas",
				value: "late-cas",
				write: (st, c) => st.compareAndSwap(pKey, c, utf8("v0"), utf8("late-cas"), 0),
			},
		];
		for (const c of cases) {
			it(`${c.label}: OUTCOME_UNKNOWN, and the write lands afterwards`, {
				timeout: 30_000,
			}, async () => {
				const cCols = utf8(c.key);
				await c.before?.(s.storage);
				s.proxy.setMode({ kind: "hold" });
				const code = await codeOf(c.write(s.storage, cCols));
				s.proxy.setMode({ kind: "pass" });
				const landed = await eventually(s.storage, pKey, cCols, c.value);
				// The write did land: "nothing was written" would have been false.
				expect({ landed, code }).toEqual({ landed: c.value, code });
				expect(code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			});
		}
	});
}
