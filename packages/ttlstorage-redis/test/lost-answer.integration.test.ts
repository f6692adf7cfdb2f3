// A write whose answer is lost: the server holds it (CLIENT PAUSE WRITE), the client gives up
// (commandTimeout) or its connection breaks. The driver must say OUTCOME_UNKNOWN (it may have
// been applied), never UNAVAILABLE, and must not send it again.
import type { Bytes } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type { Redis } from "ioredis";
import { describe, expect, it } from "vitest";
import type { RedisArg, RedisClient, RedisTTLStorage } from "../src/index.ts";
import { createRedisTTLStorage } from "../src/index.ts";
import { gate, newClient, useRedis } from "./redis-env.ts";

const skip = await gate();
const text = (v: Uint8Array | undefined): string | undefined =>
	v === undefined ? undefined : Buffer.from(v).toString();

async function codeOf(run: Promise<unknown>): Promise<string> {
	try {
		await run;
		return "resolved";
	} catch (error) {
		return TTLStorageError.is(error) ? error.code : `foreign: ${String(error)}`;
	}
}

/** The client, counting the commands the driver sends through it. */
function counting(client: Redis): { client: RedisClient; sent: string[] } {
	const sent: string[] = [];
	return {
		sent,
		client: {
			get status() {
				return client.status;
			},
			options: client.options,
			callBuffer(command: string, ...args: RedisArg[]) {
				sent.push(command);
				return client.callBuffer(command, ...args);
			},
		},
	};
}

describe.skipIf(skip)("a lost answer on a real server", () => {
	const redis = useRedis("lost", skip);
	const p = utf8("p");

	const writes: [string, (s: RedisTTLStorage, c: Bytes) => Promise<unknown>][] = [
		["put", (s, c) => s.put(p, c, utf8("late"))],
		["insertIfNotExists", (s, c) => s.insertIfNotExists(p, c, utf8("late"), 0)],
		["compareAndSwap", (s, c) => s.compareAndSwap(p, c, utf8("v0"), utf8("late"), 0)],
		["putBatch", (s, c) => s.putBatch([{ pKey: p, cCols: c, value: utf8("late") }])],
		[
			"fenced put",
			(s, c) => s.put(p, c, utf8("late"), 0, { fence: { scope: utf8("s"), epoch: 1n } }),
		],
	];

	for (const [name, write] of writes) {
		it(`${name} past commandTimeout: OUTCOME_UNKNOWN, sent once, applied when the server goes on`, {
			timeout: 20_000,
		}, async () => {
			const { admin, prefix } = redis();
			// Long enough for the ordinary commands on a loaded machine; the held write outlives it.
			const raw = await newClient({ commandTimeout: 500 });
			try {
				const { client, sent } = counting(raw);
				const keyPrefix = `${prefix}timeout:`;
				const s = createRedisTTLStorage({ client, keyPrefix, sweepIntervalMs: 0 });
				// Reads over another connection (the held write blocks its own connection).
				const viewer = createRedisTTLStorage({ client: admin, keyPrefix, sweepIntervalMs: 0 });
				const c = utf8(name);
				const before = name === "insertIfNotExists" ? undefined : "v0";
				if (before !== undefined) await viewer.put(p, c, utf8(before));
				// Both scripts in the server's cache first: a pause holds an EVALSHA of an unknown
				// script as a write, whatever its flags (the read below must not be held).
				await viewer.put(p, utf8("warm"), utf8("w"));
				await viewer.get(p, c);
				sent.length = 0;
				await admin.call("CLIENT", "PAUSE", "10000", "WRITE");
				try {
					expect(await codeOf(write(s, c))).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
					// Held, not applied (reads still run during a write pause).
					expect(text(await viewer.get(p, c))).toBe(before);
				} finally {
					await admin.call("CLIENT", "UNPAUSE");
				}
				// Same connection, so ordered after the held write: it has run by now.
				expect(text(await s.get(p, c))).toBe("late");
				// The write once, the read once: nothing sent again.
				expect(sent).toEqual(["EVALSHA", "EVALSHA"]);
			} finally {
				raw.disconnect();
			}
		});
	}

	it("a connection broken with a write in flight: OUTCOME_UNKNOWN; the client reconnects and nothing is resent", {
		timeout: 20_000,
	}, async () => {
		const { admin, prefix } = redis();
		const raw = await newClient({ retryStrategy: () => 10 });
		try {
			const { client, sent } = counting(raw);
			const keyPrefix = `${prefix}broken:`;
			const s = createRedisTTLStorage({ client, keyPrefix, sweepIntervalMs: 0 });
			const c = utf8("c");
			await s.put(p, c, utf8("v0"));
			await admin.call("CLIENT", "PAUSE", "10000", "WRITE");
			let code: string;
			try {
				const pending = codeOf(s.put(p, c, utf8("late")));
				raw.stream.destroy();
				code = await pending;
				// While it reconnects the driver sends nothing: UNAVAILABLE.
				expect(await codeOf(s.get(p, c))).toBe("TTLSTORAGE_UNAVAILABLE");
				await new Promise<void>((resolve) => raw.once("ready", () => resolve()));
			} finally {
				await admin.call("CLIENT", "UNPAUSE");
			}
			expect(code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			// Anything ioredis resent on the new connection would be ahead of this PING.
			await raw.ping();
			const viewer = createRedisTTLStorage({ client: admin, keyPrefix, sweepIntervalMs: 0 });
			await viewer.put(p, c, utf8("after"));
			await raw.ping();
			expect(text(await s.get(p, c))).toBe("after");
			expect(sent).toEqual(["EVALSHA", "EVALSHA", "EVALSHA"]);
		} finally {
			raw.disconnect();
		}
	});

	// Here, not in driver.integration.test.ts: SCRIPT FLUSH empties the shared server's script cache,
	// and the tests above count what the driver sends and hold warmed scripts under a pause. Test
	// files run side by side, a file's tests one at a time; a flush from another file once made
	// the last read above go out again as EVAL (NOSCRIPT) and failed its count.
	it("after SCRIPT FLUSH (a restarted server) every operation loads its script again", async () => {
		const { client, admin, prefix } = redis();
		const s = createRedisTTLStorage({ client, keyPrefix: `${prefix}flush:`, sweepIntervalMs: 0 });
		await s.put(utf8("p"), utf8("c"), utf8("v1"));
		await admin.script("FLUSH");
		expect(await s.compareAndSwap(utf8("p"), utf8("c"), utf8("v1"), utf8("v2"), 0)).toBe(true);
		expect(text(await s.get(utf8("p"), utf8("c")))).toBe("v2");
		await s.close();
	});
});
