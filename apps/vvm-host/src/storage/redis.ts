// --storage redis: one Redis server (7 or later; not a Cluster). Without --redis-url, ioredis'
// default, redis://127.0.0.1:6379 database 0.
import { DEFAULT_KEY_PREFIX, validateRedisKeyPrefix } from "@vvm/ttlstorage-redis";
import { ConfigError } from "../options.ts";
import type { StorageEntry } from "./entry.ts";
import {
	load,
	message,
	STARTUP_REQUEST_TIMEOUT_MS,
	StorageOpenError,
	untilStopped,
} from "./entry.ts";
import { maskUserinfo } from "./mask-url.ts";

interface RedisSettings {
	readonly url: string | undefined;
	readonly keyPrefix: string;
}

/**
 * A command without an answer by then fails: a write as `TTLSTORAGE_OUTCOME_UNKNOWN` (sent once,
 * never again), a read as `TTLSTORAGE_UNAVAILABLE`, instead of hanging a lease renewal.
 */
const COMMAND_TIMEOUT_MS = 5_000;

/** A URL with its password (and user) replaced, for messages. */

const redisUrl = (raw: string, source: string): string => {
	let url: URL | undefined;
	try {
		url = new URL(raw);
	} catch {}
	const bad = (why: string): ConfigError =>
		new ConfigError(
			`${source} must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0 (${why}), got "${maskUserinfo(raw)}"`,
		);
	if (url === undefined || (url.protocol !== "redis:" && url.protocol !== "rediss:"))
		throw bad("scheme");
	if (url.hostname === "") throw bad("no host");
	if (!/^\/?(\d{1,5})?$/.test(url.pathname)) throw bad("the path is a database number");
	if (url.search !== "" || url.hash !== "") throw bad("no query or fragment");
	// ioredis percent-decodes the user and password when it is built, outside any handler: a `%`
	// that starts no escape ended the host with "URI malformed" (exit 1). Checked here instead.
	for (const [part, text] of [
		["user", url.username],
		["password", url.password],
	] as const) {
		try {
			decodeURIComponent(text);
		} catch {
			throw bad(`the ${part} is not valid percent-encoding: write % as %25`);
		}
	}
	return raw;
};

/** Where the client connects, for the logs (never the user or password). */
function where(s: RedisSettings): string {
	const u = new URL(s.url ?? "redis://127.0.0.1:6379");
	const db = u.pathname.replace(/^\//, "") || "0";
	const tls = u.protocol === "rediss:" ? " (TLS)" : "";
	return `${u.hostname}:${u.port || "6379"}${tls} db ${db} key prefix "${s.keyPrefix}"`;
}

/** What the server says of its persistence, for the logs; `undefined` when it refuses `CONFIG`. */
async function persistence(client: {
	call(...args: string[]): Promise<unknown>;
}): Promise<string | undefined> {
	const reply = await client.call("CONFIG", "GET", "append*").catch(() => undefined);
	if (!Array.isArray(reply)) return undefined;
	const get = (name: string): unknown => reply[reply.indexOf(name) + 1];
	const aof = get("appendonly");
	const fsync = get("appendfsync");
	if (typeof aof !== "string" || typeof fsync !== "string") return undefined;
	return aof === "yes" ? `appendonly yes, appendfsync ${fsync}` : "appendonly no";
}

/** The Redis storage: `--redis-url`, `--redis-key-prefix`. */
export const redisStorage: StorageEntry = {
	kind: "redis",
	summary: "Redis 7, one server",
	// One connection runs the scripts in the order sent: a create need not wait for its
	// predecessor's answer (+28 % with 16 clients at 8).
	defaultPipelineDepth: 8,
	options: [
		{
			key: "url",
			flag: "redis-url",
			env: ["VVM_REDIS_URL"],
			def: undefined,
			parse: redisUrl,
			help: "redis: server URL, redis://[[user]:password@]host[:port][/db] or rediss:// (TLS), e.g. redis://127.0.0.1:6390/0 (default: redis://127.0.0.1:6379/0)",
		},
		{
			key: "keyPrefix",
			flag: "redis-key-prefix",
			env: ["VVM_REDIS_KEY_PREFIX"],
			def: DEFAULT_KEY_PREFIX,
			parse: (raw: string): string => raw,
			help: "redis: prefix of every key of the host's records (1 to 64 of A-Z a-z 0-9 _ . : / -); hosts of one cluster share it, other applications use another",
		},
	],
	check(settings, name) {
		try {
			validateRedisKeyPrefix(settings.keyPrefix);
		} catch (error) {
			const rule =
				error instanceof Error ? error.message.replace(/^\[[^\]]*\] keyPrefix /, "") : "";
			throw new ConfigError(`${name("keyPrefix")} ${rule}`);
		}
	},
	async open(settings, signal, logger) {
		const s = settings as unknown as RedisSettings;
		const [ioredis, { checkRedisServer, createRedisTTLStorage, REDIS_CLIENT_OPTIONS }] =
			await Promise.all([
				load("ioredis", "redis storage", () => import("ioredis")),
				load("@vvm/ttlstorage-redis", "redis storage", () => import("@vvm/ttlstorage-redis")),
			]);
		const at = where(s);
		signal?.throwIfAborted();
		const options = {
			...REDIS_CLIENT_OPTIONS, // no offline queue, no resends: a write is sent once or not at all
			commandTimeout: COMMAND_TIMEOUT_MS,
			connectTimeout: STARTUP_REQUEST_TIMEOUT_MS,
			lazyConnect: true,
		};
		const client =
			s.url === undefined ? new ioredis.Redis(options) : new ioredis.Redis(s.url, options);
		// ioredis reports a failed connect only as "Connection is closed."; the cause comes here. Later
		// errors (a dropped connection, reconnected by ioredis) reach the driver's callers as errors.
		let failure: Error | undefined;
		const onError = (error: Error): void => {
			failure ??= error;
		};
		client.on("error", onError);
		let durability: string | undefined;
		try {
			await untilStopped(signal, client.connect(), async () => client.disconnect());
			// A SELECT or AUTH refused during the handshake leaves the client "ready" on database 0.
			if (failure !== undefined) throw failure;
			durability = await untilStopped(signal, persistence(client), async () => client.disconnect());
			// A server that evicts keys without an expiry (allkeys-*) could drop a fence or a lease.
			const { maxmemoryPolicy } = await untilStopped(signal, checkRedisServer(client), async () =>
				client.disconnect(),
			);
			durability = `${durability === undefined ? "" : `${durability}, `}maxmemory-policy ${maxmemoryPolicy ?? "unknown (INFO denied or unnamed: check it is not allkeys-*)"}`;
		} catch (error) {
			client.disconnect();
			if (signal?.aborted) throw signal.reason;
			const cause = failure ?? error;
			throw new StorageOpenError(`redis storage: cannot use ${at}: ${message(cause)}`, {
				cause,
			});
		}
		client.off("error", onError);
		// Without a listener ioredis prints every connection error; the driver's callers see them.
		client.on("error", () => {});
		const driver = createRedisTTLStorage({
			client,
			keyPrefix: s.keyPrefix,
			...(logger === undefined ? {} : { logger }),
		});
		return {
			driver,
			location: `${at}${durability === undefined ? "" : ` (${durability})`}`,
			close: async () => {
				await driver.close();
				client.disconnect();
			},
		};
	},
};
