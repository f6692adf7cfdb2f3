// Which `Host` a host without authentication answers to (`--allowed-hosts`). A web page can rebind
// its own name to 127.0.0.1 (DNS rebinding): its requests are then same-origin to the browser, and
// only the name in `Host` gives them away. An IP address, `localhost` or a name under `.localhost`
// cannot be rebound by another site, so those always pass; other names only when listed.
import { isIP } from "node:net";
import { ConfigError } from "../options.ts";

/** The names `--allowed-hosts` lists; `"*"`: any (the check is off). */
export type AllowedHosts = "*" | readonly string[];

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * `--allowed-hosts`: `*`, or a comma-separated list of host names (no port, no scheme), each a name
 * (`vvm.example.com`) or a domain with every name under it (`.example.com`).
 *
 * @example
 * ```ts
 * parseAllowedHosts("vvm.example.com,.internal", "--allowed-hosts"); // ["vvm.example.com", ".internal"]
 * ```
 */
export function parseAllowedHosts(raw: string, source: string): AllowedHosts {
	const text = raw.trim();
	if (text === "*") return "*";
	const names: string[] = [];
	for (const part of text.split(",")) {
		const entry = part.trim().toLowerCase();
		const name = entry.startsWith(".") ? entry.slice(1) : entry;
		if (entry === "*")
			throw new ConfigError(`${source}: "*" (any name) stands alone, got "${raw}"`);
		if (name === "" || name.length > 253 || !name.split(".").every((l) => LABEL.test(l)))
			throw new ConfigError(
				`${source} must be "*" or a comma-separated list of host names (no port or scheme; ".example.com" for every name under it), got "${part.trim()}" in "${raw}"`,
			);
		names.push(entry);
	}
	return names;
}

/**
 * The name in a `Host` header (lowercase, without port or trailing dot), or `undefined` for an IP
 * address, `localhost`, a name under `.localhost`, or no header: what no other site can rebind.
 */
function rebindableName(host: string | undefined): string | undefined {
	if (host === undefined || host === "") return undefined;
	let name = host.trim().toLowerCase();
	if (name.startsWith("[")) return undefined; // an IPv6 literal, [::1]:8080
	const colon = name.lastIndexOf(":");
	if (colon !== -1) name = name.slice(0, colon);
	if (name.endsWith(".")) name = name.slice(0, -1);
	if (isIP(name) !== 0 || name === "localhost" || name.endsWith(".localhost")) return undefined;
	return name;
}

/**
 * The name of a request's `Host` that `allowed` does not cover (the request is refused), or
 * `undefined` when it may be served.
 *
 * @example
 * ```ts
 * refusedHostName("evil.example:8080", []); // "evil.example"
 * refusedHostName("127.0.0.1:8080", []); // undefined
 * ```
 */
export function refusedHostName(
	host: string | undefined,
	allowed: AllowedHosts,
): string | undefined {
	if (allowed === "*") return undefined;
	const name = rebindableName(host);
	if (name === undefined) return undefined;
	for (const entry of allowed)
		if (entry.startsWith(".") ? name === entry.slice(1) || name.endsWith(entry) : name === entry)
			return undefined;
	return name;
}
