// Name rules only: no cassandra-driver import, so a host can validate its configuration through
// the subpath `@vvm/ttlstorage-cas/names` before loading the client or doing any I/O.

/** Keyspace and table names this package accepts: unquoted, lower-case CQL identifiers. */
const IDENTIFIER = /^[a-z][a-z0-9_]{0,47}$/;

/**
 * Throws a `RangeError` unless `name` is a keyspace or table name this package accepts:
 * `^[a-z][a-z0-9_]{0,47}$` (unquoted CQL identifiers are case-insensitive, so upper case is refused
 * rather than silently folded; 48 characters is Cassandra's keyspace name limit).
 *
 * @example
 * ```ts
 * validateCassandraIdentifier("keyspace", "sysvvm"); // ok
 * validateCassandraIdentifier("table", "Values");   // RangeError
 * ```
 */
export function validateCassandraIdentifier(what: "keyspace" | "table", name: unknown): void {
	if (typeof name !== "string" || !IDENTIFIER.test(name)) {
		throw new RangeError(
			`[@vvm/ttlstorage-cas] ${what} must match ${IDENTIFIER.source} (lower-case letter first, then lower-case letters, digits or _; at most 48), got ${JSON.stringify(name)}`,
		);
	}
}
