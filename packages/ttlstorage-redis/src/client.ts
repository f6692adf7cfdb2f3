// What the driver needs of an ioredis client, typed by the members it uses (no runtime import of
// ioredis: the caller constructs the client, so there is one copy and the caller controls it).

/** An argument of a Redis command as ioredis sends it. */
export type RedisArg = string | Buffer | number;

/**
 * The members of an ioredis `Redis` client (5.4 or later, 6) that the driver uses. Any
 * `new Redis(url, REDIS_CLIENT_OPTIONS)` fits.
 */
export interface RedisClient {
	/** ioredis' connection state; the driver sends only while it is `"ready"`. */
	readonly status: string;
	/** The client's options, checked by the driver (see {@link REDIS_CLIENT_OPTIONS}). */
	readonly options: object;
	/** `true` on an ioredis `Cluster` (refused). */
	readonly isCluster?: boolean;
	/** Sends one command; bulk replies come back as `Buffer`s. */
	callBuffer(command: string, ...args: RedisArg[]): Promise<unknown>;
}

/**
 * The ioredis options the driver requires, so that the client never sends a command twice and
 * never sends one the caller no longer waits for:
 * - `enableOfflineQueue: false`: a command issued while the connection is down fails at once
 *   (`TTLSTORAGE_UNAVAILABLE`, nothing sent) instead of waiting in a queue and being sent later;
 * - `autoResendUnfulfilledCommands: false`: commands in flight when a connection broke are not
 *   sent again on the next connection;
 * - `maxRetriesPerRequest: 0`: with the resend off, ioredis rejects the commands in flight at
 *   the first close (with it above 0 they would wait for later closes, and hang in between);
 *   they reject as `TTLSTORAGE_OUTCOME_UNKNOWN` (writes) or `TTLSTORAGE_UNAVAILABLE` (reads).
 *
 * No `reconnectOnError` (it can resend the command that failed) and no client `keyPrefix` (use
 * the storage's `keyPrefix`). Spread it into your client's options.
 *
 * @example
 * ```ts
 * const client = new Redis(process.env.REDIS_URL, { ...REDIS_CLIENT_OPTIONS, commandTimeout: 2_000 });
 * ```
 */
export const REDIS_CLIENT_OPTIONS: Readonly<{
	enableOfflineQueue: false;
	autoResendUnfulfilledCommands: false;
	maxRetriesPerRequest: 0;
}> = Object.freeze({
	enableOfflineQueue: false,
	autoResendUnfulfilledCommands: false,
	maxRetriesPerRequest: 0,
});

/**
 * Throws a `TypeError` unless `client` is an ioredis `Redis` client configured with
 * {@link REDIS_CLIENT_OPTIONS}, naming every option that differs. No I/O.
 *
 * @example
 * ```ts
 * checkRedisClient(new Redis({ lazyConnect: true })); // TypeError: enableOfflineQueue must be false, …
 * ```
 */
export function checkRedisClient(client: unknown): asserts client is RedisClient {
	const c = client as Partial<RedisClient> | null | undefined;
	if (
		typeof c !== "object" ||
		c === null ||
		typeof c.callBuffer !== "function" ||
		typeof c.options !== "object"
	)
		throw new TypeError("[@vvm/ttlstorage-redis] client must be an ioredis Redis client");
	if (c.isCluster === true)
		throw new TypeError(
			"[@vvm/ttlstorage-redis] client must be a Redis client, not a Cluster (one Lua script touches keys of many slots)",
		);
	const o = c.options as Record<string, unknown>;
	const wrong: string[] = [];
	if (o.enableOfflineQueue !== false) wrong.push("enableOfflineQueue must be false");
	if (o.autoResendUnfulfilledCommands !== false)
		wrong.push("autoResendUnfulfilledCommands must be false");
	if (o.maxRetriesPerRequest !== 0) wrong.push("maxRetriesPerRequest must be 0");
	if (o.reconnectOnError !== undefined && o.reconnectOnError !== null)
		wrong.push("reconnectOnError must be unset (it can send a failed command again)");
	if (o.keyPrefix !== undefined && o.keyPrefix !== "")
		wrong.push("keyPrefix must be unset (use the storage's keyPrefix)");
	if (wrong.length > 0)
		throw new TypeError(
			`[@vvm/ttlstorage-redis] the client may send a write twice or late: ${wrong.join("; ")} (spread REDIS_CLIENT_OPTIONS into its options)`,
		);
}
