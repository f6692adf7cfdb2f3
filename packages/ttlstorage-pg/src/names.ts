// Name rules only, no I/O: a host validates its configuration before it connects.

/** Schema and table names this package accepts: unquoted, lower-case SQL identifiers. */
const IDENTIFIER = /^[a-z][a-z0-9_]{0,47}$/;

/**
 * Throws a `RangeError` unless `name` is a schema or table name this package accepts:
 * `^[a-z][a-z0-9_]{0,47}$`, and for a schema not `pg_…` (reserved by PostgreSQL). Unquoted SQL
 * identifiers are folded to lower case, so upper case is refused rather than silently folded; 48
 * characters leaves room for the names derived from the table (`<table>_fences`,
 * `<table>_expire_at`) within PostgreSQL's 63.
 *
 * @example
 * ```ts
 * validatePgIdentifier("schema", "vvm"); // ok
 * validatePgIdentifier("table", "Values"); // RangeError
 * ```
 */
export function validatePgIdentifier(what: "schema" | "table", name: unknown): void {
	if (typeof name !== "string" || !IDENTIFIER.test(name)) {
		throw new RangeError(
			`[@vvm/ttlstorage-pg] ${what} must match ${IDENTIFIER.source} (lower-case letter first, then lower-case letters, digits or _; at most 48), got ${JSON.stringify(name)}`,
		);
	}
	if (what === "schema" && name.startsWith("pg_")) {
		throw new RangeError(
			`[@vvm/ttlstorage-pg] schema names starting with "pg_" are reserved by PostgreSQL, got ${JSON.stringify(name)}`,
		);
	}
}
