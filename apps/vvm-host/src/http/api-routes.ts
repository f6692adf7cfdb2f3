// The API v2 routes of the command processor, parsed from method and URL alone (no I/O), so a bad
// request is refused, naming the field, before anything else happens. The name rule and the read
// limit are @vvm/cp's own.
import { isQName, MAX_READ_LIMIT } from "@vvm/cp";

/** The one application this host serves: `/api/v2/apps/vvm/demo/…` (`@vvm/cp`'s `demoApp`). */
const HOST_APP: { readonly owner: string; readonly app: string } = Object.freeze({
	owner: "vvm",
	app: "demo",
});

/** A parsed API v2 request. */
export type ApiRoute =
	| { readonly kind: "create"; readonly wsid: number; readonly table: string }
	| { readonly kind: "update"; readonly wsid: number; readonly table: string; readonly id: number }
	| { readonly kind: "read"; readonly wsid: number; readonly table: string; readonly id: number }
	| { readonly kind: "command"; readonly wsid: number; readonly command: string }
	| {
			readonly kind: "wlog";
			readonly wsid: number;
			readonly offset: number;
			readonly count: number;
	  };

/** Why a request was refused before routing: `status` 400, 404 or 405, `field` names the culprit. */
export interface ApiRouteError {
	readonly kind: "error";
	readonly status: 400 | 404 | 405;
	readonly message: string;
	readonly field?: string;
	/** 405: the methods the path accepts. */
	readonly allow?: readonly string[];
}

/** WLog entries of a read without `count`. */
const DEFAULT_WLOG_COUNT = 100;

const PREFIX = "/api/v2/apps/";
const DIGITS = /^[0-9]{1,16}$/;

const bad = (field: string, message: string): ApiRouteError => ({
	kind: "error",
	status: 400,
	field,
	message: `${field}: ${message}`,
});

function positiveInt(raw: string, field: string): number | ApiRouteError {
	const n = DIGITS.test(raw) ? Number(raw) : Number.NaN;
	if (!Number.isSafeInteger(n) || n < 1) return bad(field, `must be an integer >= 1, got "${raw}"`);
	return n;
}

function qname(raw: string, field: string): string | ApiRouteError {
	return isQName(raw) ? raw : bad(field, `must be a qualified name pkg.Name, got "${raw}"`);
}

const notFoundOf = (pathname: string): ApiRouteError => ({
	kind: "error",
	status: 404,
	message: `no route ${pathname}`,
});

/** The paths {@link parseApiRoute} handles: everything under it (one prefix route). */
export const API_PREFIX = "/api/v2/";

/**
 * Parses an API v2 request of the command processor:
 *
 * - `POST …/workspaces/{wsid}/docs/{pkg}.{table}`: create;
 * - `PATCH` / `GET …/docs/{pkg}.{table}/{id}`: update / read;
 * - `POST …/commands/{pkg}.{command}`: a command (`sys.CUD` or the application's);
 * - `GET …/workspaces/{wsid}/wlog?offset=&count=`: the WLog from `offset` (default 1).
 *
 * @example
 * ```ts
 * parseApiRoute("GET", "/api/v2/apps/vvm/demo/workspaces/1001/docs/app1pkg.Customer/322685000131072");
 * // { kind: "read", wsid: 1001, table: "app1pkg.Customer", id: 322685000131072 }
 * ```
 */
export function parseApiRoute(
	method: string,
	pathname: string,
	search: URLSearchParams = new URLSearchParams(),
): ApiRoute | ApiRouteError {
	if (!pathname.startsWith(PREFIX)) return notFoundOf(pathname);
	const parts = pathname.slice(PREFIX.length).split("/");
	try {
		// Decoded in place, and only where there is something to decode (a create's path has not).
		for (let i = 0; i < parts.length; i++)
			if ((parts[i] as string).includes("%")) parts[i] = decodeURIComponent(parts[i] as string);
	} catch {
		return bad("path", "is not valid percent-encoding");
	}
	const [owner, app, workspaces, rawWsid, section, name, rawId] = parts;
	const more = parts.length > 7;
	if (
		owner === undefined ||
		app === undefined ||
		workspaces !== "workspaces" ||
		rawWsid === undefined
	)
		return notFoundOf(pathname);
	if (owner !== HOST_APP.owner || app !== HOST_APP.app)
		return {
			kind: "error",
			status: 404,
			field: "app",
			message: `app: this host serves ${HOST_APP.owner}/${HOST_APP.app}, not ${owner}/${app}`,
		};
	const wsid = positiveInt(rawWsid, "wsid");
	if (typeof wsid !== "number") return wsid;
	const allowed = (allow: readonly string[]): ApiRouteError | undefined =>
		allow.includes(method)
			? undefined
			: {
					kind: "error",
					status: 405,
					allow,
					message: `method ${method} not allowed on ${pathname}`,
				};
	if (more) return notFoundOf(pathname);
	if (section === "wlog" && name === undefined) {
		const refused = allowed(["GET"]);
		if (refused !== undefined) return refused;
		const offset = positiveInt(search.get("offset") ?? "1", "offset");
		if (typeof offset !== "number") return offset;
		const count = positiveInt(search.get("count") ?? String(DEFAULT_WLOG_COUNT), "count");
		if (typeof count !== "number") return count;
		if (count > MAX_READ_LIMIT)
			return bad("count", `must be at most ${MAX_READ_LIMIT}, got ${count}`);
		return { kind: "wlog", wsid, offset, count };
	}
	if (section === "commands" && name !== undefined && rawId === undefined) {
		const refused = allowed(["POST"]);
		if (refused !== undefined) return refused;
		const command = qname(name, "command");
		return typeof command === "string" ? { kind: "command", wsid, command } : command;
	}
	if (section === "docs" && name !== undefined) {
		const refused = allowed(rawId === undefined ? ["POST"] : ["GET", "PATCH"]);
		if (refused !== undefined) return refused;
		const table = qname(name, "table");
		if (typeof table !== "string") return table;
		if (rawId === undefined) return { kind: "create", wsid, table };
		const id = positiveInt(rawId, "id");
		if (typeof id !== "number") return id;
		return method === "GET"
			? { kind: "read", wsid, table, id }
			: { kind: "update", wsid, table, id };
	}
	return notFoundOf(pathname);
}
