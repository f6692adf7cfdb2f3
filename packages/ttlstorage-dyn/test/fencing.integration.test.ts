// Fenced writes on DynamoDB Local: a write that reaches the server late (held here between the
// driver and the client, as a slow link or a retried request would) never replaces a newer one.
import type { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import type { BatchItem } from "@vvm/ttlstorage";
import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { createDynamoTTLStorage } from "../src/index.ts";
import { dynamoGate, useTable } from "./dynamo-local.ts";

const skip = await dynamoGate();
const { client, tableName } = useTable("fencing", skip);
const run = `${process.pid}-${Date.now()}`;
const text = (b: Uint8Array | undefined) =>
	b === undefined ? undefined : new TextDecoder().decode(b);

/** A client whose next `count` requests of `commandName` wait for `release()`. */
function holdingClient(commandName: string, count = 1) {
	let armed = 0;
	let release!: () => void;
	const gate = new Promise<void>((r) => {
		release = r;
	});
	let reached!: () => void;
	const atServer = new Promise<void>((r) => {
		reached = r;
	});
	const wrapped = {
		send: async (command: { constructor: { name: string } }, options?: object) => {
			if (armed > 0 && command.constructor.name === commandName) {
				armed--;
				if (armed === 0) reached();
				await gate;
			}
			return (client.send as (c: unknown, o?: object) => Promise<unknown>)(command, options);
		},
	} as unknown as DynamoDBClient;
	return {
		client: wrapped,
		arm: () => {
			armed = count;
		},
		reached: atServer,
		release,
	};
}

describe.skipIf(skip)(
	`ttlstorage-dyn fenced writes on DynamoDB Local${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		it("F2: of two puts under one epoch, the later call wins although the earlier one lands last", async () => {
			const held = holdingClient("PutItemCommand");
			const slow = createDynamoTTLStorage({ client: held.client, tableName });
			const fast = createDynamoTTLStorage({ client, tableName });
			const pKey = utf8(`f2/${run}`);
			const fence = { scope: utf8(`scope/f2/${run}`), epoch: 1n };
			held.arm();
			const first = slow.put(pKey, utf8("k"), utf8("first"), 0, { fence });
			await held.reached;
			await fast.put(pKey, utf8("k"), utf8("second"), 0, { fence });
			held.release();
			await first; // superseded: resolves, has no effect
			expect(text(await fast.get(pKey, utf8("k")))).toBe("second");
		});

		it("F1: a deposed writer's put that lands after the new epoch's write has no effect", async () => {
			// The batch's two fenced items go out as two conditional PutItems: both are held.
			const held = holdingClient("PutItemCommand", 2);
			const deposed = createDynamoTTLStorage({ client: held.client, tableName });
			const next = createDynamoTTLStorage({ client, tableName });
			const pKey = utf8(`f1/${run}`);
			const scope = utf8(`scope/f1/${run}`);
			await next.raiseFence?.(scope, 1n);
			held.arm();
			const late = deposed.putBatch([
				{ pKey, cCols: utf8("a"), value: utf8("old-a"), fence: { scope, epoch: 1n } },
				{ pKey, cCols: utf8("b"), value: utf8("old-b"), fence: { scope, epoch: 1n } },
			]);
			await held.reached;
			expect(await next.raiseFence?.(scope, 2n)).toBe(2n);
			await next.put(pKey, utf8("a"), utf8("new-a"), 0, { fence: { scope, epoch: 2n } });
			held.release();
			await late;
			// "a" keeps the newer write; "b", which no newer write touched, takes the late one
			// ("ordered" fencing: the caller must not write unacknowledged data late, see the README).
			expect(text(await next.get(pKey, utf8("a")))).toBe("new-a");
			expect(text(await next.get(pKey, utf8("b")))).toBe("old-b");
		});

		it("a fenced putBatch of 250 items: superseded items are dropped, the rest written", async () => {
			const storage = createDynamoTTLStorage({ client, tableName });
			const pKey = utf8(`batch/${run}`);
			const scope = utf8(`scope/batch/${run}`);
			const newer = { scope, epoch: 5n };
			const older = { scope, epoch: 4n };
			// Every 7th key was already written by a newer epoch.
			for (let i = 0; i < 250; i += 7)
				await storage.put(pKey, utf8(`k${i}`), utf8("newer"), 0, { fence: newer });
			const items: BatchItem[] = Array.from({ length: 250 }, (_, i) => ({
				pKey,
				cCols: utf8(`k${i}`),
				value: utf8("older"),
				fence: older,
			}));
			await storage.putBatch(items);
			for (let i = 0; i < 250; i++)
				expect(text(await storage.get(pKey, utf8(`k${i}`))), `k${i}`).toBe(
					i % 7 === 0 ? "newer" : "older",
				);
		});

		it("a fenced putBatch whose put fails otherwise rejects, after the puts in flight settled", async () => {
			let puts = 0;
			let inFlight = 0;
			const failing = {
				send: async (command: { constructor: { name: string } }, options?: object) => {
					if (command.constructor.name === "PutItemCommand" && ++puts === 3)
						throw Object.assign(new Error("internal"), { name: "InternalServerError" });
					inFlight++;
					try {
						return await (client.send as (c: unknown, o?: object) => Promise<unknown>)(
							command,
							options,
						);
					} finally {
						inFlight--;
					}
				},
			} as unknown as DynamoDBClient;
			const storage = createDynamoTTLStorage({ client: failing, tableName });
			const fence = { scope: utf8(`scope/fail/${run}`), epoch: 1n };
			const items: BatchItem[] = Array.from({ length: 40 }, (_, i) => ({
				pKey: utf8(`fail/${run}`),
				cCols: utf8(`k${i}`),
				value: utf8("v"),
				fence,
			}));
			// A 500 may hide an applied put (and others of the batch landed): never "nothing written".
			await expect(storage.putBatch(items)).rejects.toMatchObject({
				code: "TTLSTORAGE_OUTCOME_UNKNOWN",
				operation: "putBatch",
			});
			// Nothing of the batch is still being written when it rejects, and it stopped early.
			expect(inFlight).toBe(0);
			expect(puts).toBeLessThan(40);
		});

		it("conditional writes under a superseded epoch fail on a record a newer epoch wrote", async () => {
			const storage = createDynamoTTLStorage({ client, tableName });
			const pKey = utf8(`cond/${run}`);
			const scope = utf8(`scope/cond/${run}`);
			await storage.put(pKey, utf8("k"), utf8("v"), 0, { fence: { scope, epoch: 3n } });
			const old = { fence: { scope, epoch: 2n } };
			expect(await storage.compareAndSwap(pKey, utf8("k"), utf8("v"), utf8("x"), 0, old)).toBe(
				false,
			);
			expect(await storage.compareAndDelete(pKey, utf8("k"), utf8("v"), old)).toBe(false);
			expect(
				await storage.compareAndSwap(pKey, utf8("k"), utf8("v"), utf8("y"), 0, {
					fence: { scope, epoch: 3n },
				}),
			).toBe(true);
			expect(text(await storage.get(pKey, utf8("k")))).toBe("y");
		});
	},
);
