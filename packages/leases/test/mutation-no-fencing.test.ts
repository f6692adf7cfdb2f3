// The suite must catch a storage whose conditional writes are not conditional (voedger's DynamoDB
// "CAS" was a read and a plain write): two active actors then both "win".
import type { TTLStorage } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { leasesCases, wrapStorage } from "../src/testing/index.ts";

function unfenced(storage: TTLStorage): TTLStorage {
	return wrapStorage(storage, {
		insertIfNotExists: async (p, c, v, t) => {
			await storage.put(p, c, v, t);
			return true;
		},
		compareAndSwap: async (p, c, _o, n, t) => {
			await storage.put(p, c, n, t);
			return true;
		},
	});
}

const cases = leasesCases({
	createStorage: ({ clock }) => unfenced(createMemTTLStorage({ clock })),
});

describe("mutation: conditional writes that are not conditional", () => {
	it("is caught by TwoActorsForcedActiveOneWriteWins", async () => {
		const c = cases.find((x) => x.name === "TwoActorsForcedActiveOneWriteWins");
		const error = await c?.run().then(
			() => undefined,
			(e: unknown) => e,
		);
		// A safety assertion failed, not the harness (a liveness wait or a crash).
		expect((error as Error | undefined)?.name).toBe("AssertionError");
	});
});
