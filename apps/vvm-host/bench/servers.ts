// Where the benchmarks find the repository's real servers, and how they clean up after
// themselves there: one place for host-bench.ts and the child processes it spawns.
import type { Redis } from "ioredis";

/**
 * The PostgreSQL server: node-postgres' own variables (PGHOST, PGPORT, PGUSER, PGDATABASE; the
 * pools and pgbench read PGPASSWORD themselves), PG_PORT as a fallback for the port, else the
 * repository's server (tooling/servers/postgres: 127.0.0.1:54329, role and database vvm).
 */
export function pgConnection(): { host: string; port: number; user: string; database: string } {
	const env = process.env;
	return {
		host: env.PGHOST ?? "127.0.0.1",
		port: Number(env.PGPORT ?? env.PG_PORT ?? 54329),
		user: env.PGUSER ?? "vvm",
		database: env.PGDATABASE ?? "vvm",
	};
}

/** The repository's Redis (tooling/servers/redis), or REDIS_URL / REDIS_PORT. */
export const REDIS_URL =
	process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? 6390}`;

/** Deletes every key under `prefix` (a bench's own; SCAN, so the server is not blocked). */
export async function dropRedisPrefix(client: Redis, prefix: string): Promise<void> {
	let cursor = "0";
	do {
		const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
		if (keys.length > 0) await client.unlink(...keys);
		cursor = next;
	} while (cursor !== "0");
}
