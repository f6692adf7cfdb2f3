// Name rules only, no I/O and no client import: a host validates its configuration with them
// before it connects.

/** Key prefixes this package accepts: printable ASCII without spaces, braces or quotes. */
const KEY_PREFIX = /^[A-Za-z0-9_.:/-]{1,64}$/;

/** The key prefix of a storage that is given none. */
export const DEFAULT_KEY_PREFIX = "vvm:";

/**
 * Throws a `RangeError` unless `prefix` is a key prefix this package accepts: 1 to 64 of ASCII
 * letters, digits, `_`, `.`, `:`, `/` and `-`. Every key of a storage starts with it, so two
 * storages (two applications, two test runs) on one Redis database never meet when their prefixes
 * differ and neither is a prefix of the other; no `{`/`}` (Redis Cluster hash tags) and no spaces.
 *
 * @example
 * ```ts
 * validateRedisKeyPrefix("vvm:"); // ok
 * validateRedisKeyPrefix("a b");  // RangeError
 * ```
 */
export function validateRedisKeyPrefix(prefix: unknown): asserts prefix is string {
	if (typeof prefix !== "string" || !KEY_PREFIX.test(prefix)) {
		throw new RangeError(
			`[@vvm/ttlstorage-redis] keyPrefix must match ${KEY_PREFIX.source} (1 to 64 ASCII letters, digits, _, ., :, / or -), got ${JSON.stringify(prefix)}`,
		);
	}
}
