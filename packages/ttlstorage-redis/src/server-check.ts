// What the server must not do to the driver's keys, checked once before use: evict them, or lose
// acknowledged writes of them on a restart or a power cut.
import { TTLStorageError } from "@vvm/ttlstorage";
import type { RedisClient } from "./client.ts";
import { DRIVER_NAME, mapRedisError } from "./errors.ts";

/** What {@link checkRedisServer} found. */
export interface RedisServerCheck {
	/**
	 * The server's `maxmemory-policy`; `undefined` when it cannot be told: `INFO memory` does not
	 * name it, or the user may not run `INFO` (`NOPERM`: ACLs such as `+@all -@dangerous`).
	 */
	readonly maxmemoryPolicy: string | undefined;
	/**
	 * Whether the server keeps an append-only file (`aof_enabled` of `INFO persistence`);
	 * `undefined` when it cannot be told (`INFO` denied, or the field unnamed).
	 */
	readonly aofEnabled: boolean | undefined;
	/**
	 * The server's `appendfsync` (`CONFIG GET appendfsync`): `"always"` passes; `undefined` when it
	 * cannot be told: `CONFIG` is denied (`NOPERM`), renamed or disabled (managed services), or
	 * refused otherwise.
	 */
	readonly appendfsync: string | undefined;
}

const CHECK = "checkRedisServer";

const text = (reply: unknown): string =>
	Buffer.isBuffer(reply) ? reply.toString("latin1") : String(reply ?? "");

/** An error reply of the server (ioredis' `ReplyError`), not a lost connection. */
const isReply = (error: unknown): error is Error =>
	error instanceof Error && error.name === "ReplyError";

/** `INFO section`'s text; `undefined` when an ACL denies `INFO` (it is in `@dangerous`). */
async function info(client: RedisClient, section: string): Promise<string | undefined> {
	try {
		return text(await client.callBuffer("INFO", section));
	} catch (error) {
		if (error instanceof Error && /^NOPERM/.test(error.message)) return undefined;
		throw mapRedisError(error, { operation: CHECK, phase: "read" });
	}
}

/** `CONFIG GET name`'s value; `undefined` when the server refuses `CONFIG` or does not name it. */
async function config(client: RedisClient, name: string): Promise<string | undefined> {
	let reply: unknown;
	try {
		reply = await client.callBuffer("CONFIG", "GET", name);
	} catch (error) {
		// Denied by an ACL (NOPERM), renamed or disabled (ERR unknown command), or refused in
		// another way: the setting cannot be told from here. A lost connection is not a refusal.
		if (isReply(error)) return undefined;
		throw mapRedisError(error, { operation: CHECK, phase: "read" });
	}
	if (!Array.isArray(reply)) return undefined;
	const at = reply.findIndex((item) => text(item) === name);
	return at < 0 || at + 1 >= reply.length ? undefined : text(reply[at + 1]);
}

function refuse(message: string): TTLStorageError {
	return new TTLStorageError("TTLSTORAGE_FAILED", message, {
		driver: DRIVER_NAME,
		operation: CHECK,
	});
}

/**
 * Checks, before a storage is opened, the two server settings under which the driver's fences and
 * leases cannot keep their promises, and throws `TTLSTORAGE_FAILED` naming the setting and the
 * fix when one is known to be wrong:
 *
 * - **eviction** (`INFO memory`, which managed services allow where they refuse `CONFIG`): an
 *   `allkeys-*` `maxmemory-policy` deletes, under memory pressure, keys that carry no expiry, which
 *   is every key of this driver (it expires records itself). A fence that vanishes reads as epoch
 *   0, so a deposed leader's write lands; a lease record that vanishes lets a second leader in; a
 *   record of a batch can go alone. `noeviction` (Redis' default) and the `volatile-*` policies
 *   (which evict only keys with an expiry) are accepted;
 * - **persistence** (`INFO persistence`, then `CONFIG GET appendfsync`): without an append-only
 *   file (`aof_enabled:0`: RDB snapshots or nothing) a restart loses every write since the last
 *   snapshot; with `appendfsync everysec` or `no` a crash of the machine or a power cut loses the
 *   last second or more of acknowledged writes. Either way an acknowledged fence raise or lease can
 *   vanish. Only `appendonly yes` with `appendfsync always` passes.
 *
 * What cannot be told is reported, not refused: a user that may not run `INFO` (`NOPERM`) gets
 * `maxmemoryPolicy` and `aofEnabled` `undefined`; a server that refuses `CONFIG` (denied,
 * renamed or disabled, as managed services do) gets `appendfsync: undefined`. Those settings are
 * then the operator's to check. Any other failure (a lost connection) is mapped like a read's.
 *
 * Both settings can be changed while the storage runs (`CONFIG SET`): keep `CONFIG` out of reach.
 *
 * @example
 * ```ts
 * await client.connect();
 * const check = await checkRedisServer(client); // throws on allkeys-lru, appendonly no, everysec
 * const storage = createRedisTTLStorage({ client });
 * ```
 */
export async function checkRedisServer(client: RedisClient): Promise<RedisServerCheck> {
	const memory = await info(client, "memory");
	const policy =
		memory === undefined ? undefined : /^maxmemory_policy:([^\r\n]*)/m.exec(memory)?.[1]?.trim();
	if (policy?.startsWith("allkeys-") === true) {
		throw refuse(
			`the server's maxmemory-policy is ${policy}: under memory pressure it deletes keys without an expiry, which every key of this driver is (fences, leases, records), and a deposed leader's write would land; set maxmemory-policy noeviction (or a volatile-* policy)`,
		);
	}
	const persistence = await info(client, "persistence");
	const aof =
		persistence === undefined
			? undefined
			: /^aof_enabled:([^\r\n]*)/m.exec(persistence)?.[1]?.trim();
	const aofEnabled = aof === "1" ? true : aof === "0" ? false : undefined;
	if (aofEnabled === false) {
		throw refuse(
			"the server keeps no append-only file (aof_enabled:0, appendonly no): a restart loses every write since the last RDB snapshot, so an acknowledged fence raise or lease can vanish and a deposed leader's write land; set appendonly yes and appendfsync always",
		);
	}
	const appendfsync = await config(client, "appendfsync");
	if (appendfsync !== undefined && appendfsync !== "always") {
		throw refuse(
			`the server's appendfsync is ${appendfsync}: a crash of its machine or a power cut loses the last second or more of acknowledged writes, so an acknowledged fence raise or lease can vanish and a deposed leader's write land; set appendfsync always`,
		);
	}
	return {
		maxmemoryPolicy: policy === "" ? undefined : policy,
		aofEnabled,
		appendfsync,
	};
}
