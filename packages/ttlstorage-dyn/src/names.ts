// Name rules only: no AWS SDK import, so a host can validate its configuration through the
// subpath `@vvm/ttlstorage-dyn/names` before loading the client or doing any I/O.

/** DynamoDB's table name rule: 3 to 255 of letters, digits, `_`, `-` and `.`. */
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/;

/**
 * Throws a `RangeError` unless `name` is a DynamoDB table name: 3 to 255 characters, each a
 * letter, digit, `_`, `-` or `.` (DynamoDB's own rule, checked here before any request).
 *
 * @example
 * ```ts
 * validateDynamoTableName("vvm_ttl"); // ok
 * validateDynamoTableName("a b");     // RangeError
 * ```
 */
export function validateDynamoTableName(name: unknown): asserts name is string {
	if (typeof name !== "string" || !TABLE_NAME.test(name)) {
		throw new RangeError(
			`[@vvm/ttlstorage-dyn] tableName must match ${TABLE_NAME.source} (3 to 255 letters, digits, _, - or .), got ${JSON.stringify(name)}`,
		);
	}
}
