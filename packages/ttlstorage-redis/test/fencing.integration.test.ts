import type { Bytes } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import type { RedisArg, RedisClient } from "../src/index.ts";
import { createRedisTTLStorage } from "../src/index.ts";
import { gate, useRedis } from "./redis-env.ts";

const skip = await gate();
const text = (v: Uint8Array | undefined): string | undefined =>
	v === undefined ? undefined : Buffer.from(v).toString();

async function codeOf(run: () => Promise<unknown>): Promise<string> {
	try {
		await run();
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : `foreign: ${String(error)}`;
	}
}

/**
 * The client with its next command held in the process until `release()`: the driver has built
 * it (its stamp taken), but it reaches the server only then, as over a slow link.
 */
function holdNext(client: RedisClient): { client: RedisClient; release(): void } {
	let release = (): void => {};
	let armed = true;
	const held = new Promise<void>((resolve) => {
		release = resolve;
	});
	return {
		release,
		client: {
			get status() {
				return client.status;
			},
			options: client.options,
			async callBuffer(command: string, ...args: RedisArg[]) {
				if (armed) {
					armed = false;
					await held;
				}
				return client.callBuffer(command, ...args);
			},
		},
	};
}

describe.skipIf(skip)("epoch fencing on a real server", () => {
	const redis = useRedis("fencing", skip);
	const p = utf8("p");

	it("below a raised epoch every write is refused with FENCED and writes nothing", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}f1:`, sweepIntervalMs: 0 });
		const scope = utf8("scope");
		const old = { fence: { scope, epoch: 4n } };
		await s.put(p, utf8("a"), utf8("v0"));
		expect(await s.raiseFence(scope, 5n)).toBe(5n);
		const writes: [string, () => Promise<unknown>][] = [
			["put", () => s.put(p, utf8("a"), utf8("x"), 0, old)],
			["insertIfNotExists", () => s.insertIfNotExists(p, utf8("b"), utf8("x"), 0, old)],
			["compareAndSwap", () => s.compareAndSwap(p, utf8("a"), utf8("v0"), utf8("x"), 0, old)],
			["compareAndDelete", () => s.compareAndDelete(p, utf8("a"), utf8("v0"), old)],
			[
				"putBatch",
				() =>
					s.putBatch([
						{ pKey: p, cCols: utf8("c"), value: utf8("x") },
						{ pKey: p, cCols: utf8("d"), value: utf8("x"), ...old },
					]),
			],
			[
				"putBatchIf",
				() =>
					s.putBatchIf([{ pKey: p, cCols: utf8("e"), value: utf8("x"), expected: null, ...old }]),
			],
			["raiseFence", () => s.raiseFence(scope, 4n)],
		];
		for (const [name, write] of writes)
			expect([name, await codeOf(write)]).toEqual([name, "TTLSTORAGE_FENCED"]);
		const left: string[] = [];
		for await (const r of s.read(p)) left.push(`${text(r.cCols)}=${text(r.value)}`);
		expect(left).toEqual(["a=v0"]);
		// At the raised epoch (and above) writes go through; raising to it again is allowed.
		await s.put(p, utf8("a"), utf8("v5"), 0, { fence: { scope, epoch: 5n } });
		expect(await s.raiseFence(scope, 5n)).toBe(5n);
		expect(await s.raiseFence(scope)).toBe(6n);
	});

	it("one superseded scope refuses a batch over several scopes as a whole", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}f2:`, sweepIntervalMs: 0 });
		const [a, b] = [utf8("a"), utf8("b")];
		await s.raiseFence(a, 1n);
		await s.raiseFence(b, 9n);
		const batch = [
			{ pKey: p, cCols: utf8("1"), value: utf8("x"), fence: { scope: a, epoch: 1n } },
			{ pKey: p, cCols: utf8("2"), value: utf8("x"), fence: { scope: b, epoch: 8n } },
		];
		expect(await codeOf(() => s.putBatch(batch))).toBe("TTLSTORAGE_FENCED");
		expect(await s.get(p, utf8("1"))).toBeUndefined();
		// A scope never raised is at 0: any epoch passes.
		await s.put(p, utf8("3"), utf8("x"), 0, { fence: { scope: utf8("never"), epoch: 0n } });
	});

	it("epochs above 2^53 compare exactly (two 32-bit halves in Lua)", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}f3:`, sweepIntervalMs: 0 });
		const scope = utf8("big");
		const e = 2n ** 62n + 1n;
		expect(await s.raiseFence(scope, e)).toBe(e);
		expect(
			await codeOf(() => s.put(p, utf8("a"), utf8("x"), 0, { fence: { scope, epoch: e - 1n } })),
		).toBe("TTLSTORAGE_FENCED");
		await s.put(p, utf8("a"), utf8("y"), 0, { fence: { scope, epoch: e } });
		expect(await s.raiseFence(scope)).toBe(e + 1n);
		expect(await s.raiseFence(utf8("low"), 2n ** 32n - 1n)).toBe(2n ** 32n - 1n);
		expect(await s.raiseFence(utf8("low"))).toBe(2n ** 32n);
		expect(
			await codeOf(() =>
				s.raiseFence(utf8("max"), 2n ** 63n - 1n).then(() => s.raiseFence(utf8("max"))),
			),
		).toBe("TTLSTORAGE_FAILED");
	});

	it("concurrent raises without an epoch each get their own", async () => {
		const { client, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}f4:`, sweepIntervalMs: 0 });
		const got = await Promise.all(Array.from({ length: 20 }, () => s.raiseFence(utf8("s"))));
		expect([...got].sort((x, y) => Number(x - y))).toEqual(
			Array.from({ length: 20 }, (_, i) => BigInt(i + 1)),
		);
	});

	it("F2: of two fenced writes under one epoch, the later call wins though the earlier lands later", async () => {
		const { client, prefix } = redis();
		const keyPrefix = `${prefix}f5:`;
		const direct = createRedisTTLStorage({ client, keyPrefix, sweepIntervalMs: 0 });
		const scope = utf8("scope");
		const fence = { fence: { scope, epoch: 7n } };
		await direct.raiseFence(scope, 7n);
		await direct.put(p, utf8("swap"), utf8("v0"), 0, fence);
		const cases: [string, (s: typeof direct) => Promise<unknown>, Bytes, string][] = [
			["put", (s) => s.put(p, utf8("put"), utf8("early"), 0, fence), utf8("put"), "late-called"],
			[
				"compareAndSwap",
				(s) => s.compareAndSwap(p, utf8("swap"), utf8("v0"), utf8("early"), 0, fence),
				utf8("swap"),
				"late-called",
			],
		];
		for (const [name, early, cCols, later] of cases) {
			const slow = holdNext(client);
			const held = createRedisTTLStorage({ client: slow.client, keyPrefix, sweepIntervalMs: 0 });
			const first = early(held); // called first: its stamp is the lower one
			if (name === "put") await direct.put(p, cCols, utf8(later), 0, fence);
			else
				expect(await direct.compareAndSwap(p, cCols, utf8("v0"), utf8(later), 0, fence)).toBe(true);
			slow.release();
			const result = await first;
			expect([name, result ?? "resolved", text(await direct.get(p, cCols))]).toEqual([
				name,
				name === "put" ? "resolved" : false,
				later,
			]);
		}
	});
});
