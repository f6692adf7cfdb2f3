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

/**
 * `host:port` as a URL's authority takes it: an IPv6 literal in brackets (`[::1]:8080`), any other
 * host as it is.
 *
 * @example
 * ```ts
 * authority("::1", 8080); // "[::1]:8080"
 * authority("127.0.0.1", 8080); // "127.0.0.1:8080"
 * ```
 */
export function authority(host: string, port: number): string {
	return isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`;
}

/** A host name label or IPv4 address: letters, digits, `.`, `-`, `_`. */
const NAME = /^[A-Za-z0-9._-]+$/;

/**
 * `--address`: `host:port` as a URL's authority takes it (a name or IPv4 address, or an IPv6
 * literal in brackets), port `1..65535`; another host builds `Location` from it (a 421).
 *
 * @example
 * ```ts
 * parseHostPort("[fd00::5]:8080", "--address"); // "[fd00::5]:8080"
 * ```
 */
export function parseHostPort(raw: string, source: string): string {
	const text = raw.trim();
	const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
	const v6 = match?.[1];
	const name = match?.[2];
	const port = Number(match?.[3]);
	const hostOk = v6 !== undefined ? isIP(v6) === 6 : name !== undefined && NAME.test(name);
	if (match === null || !hostOk || !(port >= 1 && port <= 65_535))
		throw new ConfigError(
			`${source} must be host:port (a name or IPv4 address, or an IPv6 address in brackets: [fd00::5]:8080), port 1..65535, without a scheme or path, got "${raw}"`,
		);
	return text;
}

/**
 * `--http-host`: an address or name to listen on; an IPv6 literal may be given in brackets
 * (`[::1]`), which are dropped (listen takes it bare).
 */
export function parseListenHost(raw: string, source: string): string {
	const text = raw.trim();
	if (text === "") throw new ConfigError(`${source} must not be empty`);
	const bracketed = /^\[(.*)\]$/.exec(text)?.[1];
	if (bracketed !== undefined) {
		if (isIP(bracketed) !== 6)
			throw new ConfigError(`${source}: only an IPv6 address goes in brackets, got "${raw}"`);
		return bracketed;
	}
	return text;
}
