// The published Redis driver against the published suites, on the real server, with the ioredis
// version the rehearsal installed: on the suites' mock clock, and on the server's clock (TIME).
import { electionsTestSuite } from "@vvm/ielections/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import { Redis } from "ioredis";
import { afterAll, beforeAll } from "vitest";

const url = process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? 6390}`;
const client = new Redis(url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
client.on("error", () => {}); // a broken connection is reconnected; commands in flight answer unknown
const prefix = `vvm_compat_${process.pid}_${Date.now().toString(36)}:`;
beforeAll(async () => {
	await client.connect();
});
afterAll(async () => {
	// The driver's keys hold binary bytes: scanned and deleted as buffers.
	let cursor = "0";
	do {
		const [next, keys] = await client.scanBuffer(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
		cursor = String(next);
		if (keys.length > 0) await client.del(...keys);
	} while (cursor !== "0");
	client.disconnect();
});
ttlStorageTestSuite("compat: ttlstorage-redis", {
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	createStorage: ({ clock }) => createRedisTTLStorage({ client, keyPrefix: prefix, clock }),
});
ttlStorageTestSuite("compat: ttlstorage-redis (server clock)", {
	time: "real",
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	createStorage: () =>
		createRedisTTLStorage({ client, keyPrefix: `${prefix}real:`, sweepIntervalMs: 1_000 }),
});
electionsTestSuite("compat: ttlstorage-redis", {
	createStorage: ({ clock }) => createRedisTTLStorage({ client, keyPrefix: prefix, clock }),
});
