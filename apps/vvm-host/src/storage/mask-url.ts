// A connection URL as an error message may show it: whatever stands between the scheme's `//`
// and the last `@` (user and password, which may themselves hold `/`, `:` or `@`) is hidden.

/**
 * `raw` with its user information hidden (`redis://***@10.0.0.5:6379/0`).
 *
 * @example
 * ```ts
 * maskUserinfo("redis://:se/cret@10.0.0.5:6379/0"); // "redis://***@10.0.0.5:6379/0"
 * ```
 */
export function maskUserinfo(raw: string): string {
	const at = raw.lastIndexOf("@");
	if (at < 0) return raw;
	const slashes = raw.indexOf("//");
	const from = slashes >= 0 && slashes < at ? slashes + 2 : 0;
	return `${raw.slice(0, from)}***${raw.slice(at)}`;
}
