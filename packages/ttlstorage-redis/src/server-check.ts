// What the server must not do to the driver's keys, checked once before use: evict them.
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
}

/**
 * Reads the server's `maxmemory-policy` (`INFO memory`, which managed services allow where they
 * refuse `CONFIG`) and throws `TTLSTORAGE_FAILED` when it is an `allkeys-*` policy: under memory
 * pressure such a server deletes keys that carry no expiry, which is every key of this driver (it
 * expires records itself). A fence that vanishes reads as epoch 0, so a deposed leader's write
 * lands; a lease record that vanishes lets a second leader in; a record of a batch can go alone.
 * `noeviction` (Redis' default) and the `volatile-*` policies (which evict only keys with an
 * expiry) are accepted. One command; a user that may not run `INFO` (`NOPERM`) gets
 * `maxmemoryPolicy: undefined` (the policy is then the operator's to check); any other failure
 * of it is mapped like a read's.
 *
 * The policy can be changed while the storage runs (`CONFIG SET`): keep it out of reach.
 *
 * @example
 * ```ts
 * await client.connect();
 * const { maxmemoryPolicy } = await checkRedisServer(client); // throws on allkeys-lru
 * const storage = createRedisTTLStorage({ client });
 * ```
 */
export async function checkRedisServer(client: RedisClient): Promise<RedisServerCheck> {
	let reply: unknown;
	try {
		reply = await client.callBuffer("INFO", "memory");
	} catch (error) {
		// An ACL that denies INFO (it is in @dangerous): the policy cannot be told from here.
		if (error instanceof Error && /^NOPERM/.test(error.message))
			return { maxmemoryPolicy: undefined };
		throw mapRedisError(error, { operation: "checkRedisServer", phase: "read" });
	}
	const text = Buffer.isBuffer(reply) ? reply.toString("latin1") : String(reply ?? "");
	const policy = /^maxmemory_policy:([^\r\n]*)/m.exec(text)?.[1]?.trim();
	if (policy?.startsWith("allkeys-") === true) {
		throw new TTLStorageError(
			"TTLSTORAGE_FAILED",
			`the server's maxmemory-policy is ${policy}: under memory pressure it deletes keys without an expiry, which every key of this driver is (fences, leases, records), and a deposed leader's write would land; set maxmemory-policy noeviction (or a volatile-* policy)`,
			{ driver: DRIVER_NAME, operation: "checkRedisServer" },
		);
	}
	return { maxmemoryPolicy: policy === "" ? undefined : policy };
}
