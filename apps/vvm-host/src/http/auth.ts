// Who may call the host: `Authorization: Bearer <token>`, a static token from a file or a JWT
// verified with a public key or a JWKS file (jose). A token names the workspaces it may use and
// whether it may call the operator routes. Off unless configured; then every route but the
// probes (/healthz, /readyz) and the API's description (/openapi.json) needs a token. Tokens are compared in constant time and never logged.
import { createHash, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import type { IncomingMessage } from "node:http";
import { createSecureContext } from "node:tls";
import type { JSONWebKeySet, JWK, JWTPayload } from "jose";
import { createLocalJWKSet, importJWK, importSPKI, jwtVerify } from "jose";
import { parseApiRoute } from "./api-routes.ts";
import type { ApiErrorReply } from "./errors.ts";
import type { AllowedHosts } from "./host-names.ts";
import { refusedHostName } from "./host-names.ts";
import type { RouteRequest, RouteTable, TlsFiles } from "./router.ts";

/** What a token may do: the workspaces it may read and write (`"*"`: all), and operator routes. */
interface Grant {
	/** A name for logs (never the token). */
	readonly name: string;
	readonly workspaces: ReadonlySet<number> | "*";
	readonly operator: boolean;
}

/** The host's authentication settings (`--auth-*`), checked by {@link checkAuthSettings}. */
export interface AuthSettings {
	/** A JSON file of static tokens: `{ "tokens": [{ "name", "token", "workspaces", "operator" }] }`. */
	readonly tokensFile?: string;
	/** A JWKS file (`{ "keys": [...] }`) that verifies JWTs. */
	readonly jwksFile?: string;
	/** A PEM public key (SPKI) that verifies JWTs; its algorithm is `jwtAlgorithm`. */
	readonly jwtPublicKeyFile?: string;
	/** The algorithm of `jwtPublicKeyFile` (default `ES256`). */
	readonly jwtAlgorithm?: string;
	/** Required `iss` of a JWT, when set. */
	readonly jwtIssuer?: string;
	/** Required `aud` of a JWT, when set. */
	readonly jwtAudience?: string;
}

/** The claims a JWT carries beyond the registered ones. */
export const JWT_CLAIMS = {
	/** An array of workspace IDs, or `"*"`. */
	workspaces: "vvm_workspaces",
	/** `true`: the operator routes (/metrics, /status, /leases, /leadership, /, /work). */
	operator: "vvm_operator",
} as const;

/** The answer of {@link Authenticator.check}: go on, or the 401/403 to answer instead. */
type AuthCheck = { readonly ok: true } | { readonly ok: false; readonly reply: ApiErrorReply };

/** Authenticates and authorizes one request before its route runs. */
export interface Authenticator {
	check(request: RouteRequest): Promise<AuthCheck>;
}

/** Raised for a bad `--auth-*` setting or file (the host exits 2 with its message). */
export class AuthConfigError extends Error {
	override readonly name = "AuthConfigError";
}

/** Routes anyone may call: probes carry no data worth a token, and orchestrators call them bare. */
const OPEN_PATHS: ReadonlySet<string> = new Set(["/healthz", "/readyz", "/openapi.json"]);
/** Static tokens shorter than this are refused: a guessable token is no authentication. */
const MIN_TOKEN_LENGTH = 24;
/** Verified JWTs kept (by token) so a client's next request skips the signature check. */
const JWT_CACHE_SIZE = 1_000;
/** A cached JWT is checked again at least this often (and never after its `exp`). */
const JWT_CACHE_MS = 60_000;

const OK: AuthCheck = { ok: true };

const sha256 = (text: string): Buffer => createHash("sha256").update(text, "utf8").digest();

function refusal(status: 401 | 403, code: string, message: string): AuthCheck {
	const headers: Record<string, string> =
		status === 401
			? { "www-authenticate": 'Bearer realm="vvm", error="invalid_token"' }
			: { "www-authenticate": 'Bearer realm="vvm", error="insufficient_scope"' };
	return {
		ok: false,
		reply: {
			status,
			headers,
			body: { status, code, message, committed: "no" },
			outcome: status === 401 ? "unauthenticated" : "forbidden",
		},
	};
}

/** 403 for a `Host` name outside `--allowed-hosts` (no `WWW-Authenticate`: no token helps). */
function hostRefusal(name: string): ApiErrorReply {
	return {
		status: 403,
		headers: {},
		body: {
			status: 403,
			code: "HOST_FORBIDDEN",
			message: `this host does not answer to the name "${name.slice(0, 253)}" (a page may have rebound that name to it: DNS rebinding); a proxy that forwards that name needs it in --allowed-hosts; nothing was done`,
			committed: "no",
		},
		outcome: "forbidden",
	};
}

function workspacesOf(value: unknown, where: string): ReadonlySet<number> | "*" {
	if (value === "*") return "*";
	if (
		!Array.isArray(value) ||
		!value.every((w) => typeof w === "number" && Number.isSafeInteger(w) && w >= 1)
	)
		throw new AuthConfigError(`${where} must be "*" or an array of workspace IDs (integers >= 1)`);
	return new Set(value as number[]);
}

interface StaticToken {
	readonly digest: Buffer;
	readonly grant: Grant;
}

function readStaticTokens(file: string, flag: string): StaticToken[] {
	let parsed: unknown;
	try {
		parsed = JSON.parse(readFileSync(file, "utf8"));
	} catch (error) {
		throw new AuthConfigError(
			`${flag} ${file}: cannot read it as JSON (${error instanceof Error ? error.message : String(error)})`,
		);
	}
	const list = (parsed as { tokens?: unknown } | null)?.tokens;
	if (!Array.isArray(list) || list.length === 0)
		throw new AuthConfigError(
			`${flag} ${file}: must be { "tokens": [ ... ] } with at least one token`,
		);
	const names = new Set<string>();
	return list.map((entry: unknown, i) => {
		const where = `${flag} ${file}: tokens[${i}]`;
		const e = (entry ?? {}) as Record<string, unknown>;
		if (typeof e.name !== "string" || e.name === "")
			throw new AuthConfigError(`${where}.name must be a non-empty string`);
		if (names.has(e.name)) throw new AuthConfigError(`${where}.name "${e.name}" is used twice`);
		names.add(e.name);
		if (typeof e.token !== "string" || e.token.length < MIN_TOKEN_LENGTH || /\s/.test(e.token))
			throw new AuthConfigError(
				`${where}.token must be a string of at least ${MIN_TOKEN_LENGTH} characters without spaces (e.g. openssl rand -hex 32)`,
			);
		if (e.operator !== undefined && typeof e.operator !== "boolean")
			throw new AuthConfigError(`${where}.operator must be true or false`);
		return {
			digest: sha256(e.token),
			grant: {
				name: e.name,
				workspaces:
					e.workspaces === undefined
						? new Set()
						: workspacesOf(e.workspaces, `${where}.workspaces`),
				operator: e.operator === true,
			},
		};
	});
}

/** Reads a file for a flag, naming both when it cannot. */
function readFor(file: string, flag: string): string {
	try {
		return readFileSync(file, "utf8");
	} catch (error) {
		throw new AuthConfigError(
			`${flag} ${file}: cannot read it (${error instanceof Error ? error.message : String(error)})`,
		);
	}
}

type Verify = (token: string) => Promise<JWTPayload>;

async function jwtVerifier(settings: AuthSettings): Promise<Verify | undefined> {
	const options = {
		...(settings.jwtIssuer === undefined ? {} : { issuer: settings.jwtIssuer }),
		...(settings.jwtAudience === undefined ? {} : { audience: settings.jwtAudience }),
		requiredClaims: ["exp"],
	};
	if (settings.jwksFile !== undefined) {
		let jwks: JSONWebKeySet;
		try {
			jwks = JSON.parse(readFor(settings.jwksFile, "--auth-jwks-file")) as JSONWebKeySet;
		} catch (error) {
			if (error instanceof AuthConfigError) throw error;
			throw new AuthConfigError(`--auth-jwks-file ${settings.jwksFile}: is not JSON`);
		}
		if (!Array.isArray(jwks?.keys) || jwks.keys.length === 0)
			throw new AuthConfigError(
				`--auth-jwks-file ${settings.jwksFile}: must be { "keys": [ ... ] }`,
			);
		await checkJwks(jwks, settings.jwksFile);
		const keys = createLocalJWKSet(jwks);
		return async (token) => (await jwtVerify(token, keys, options)).payload;
	}
	if (settings.jwtPublicKeyFile !== undefined) {
		const algorithm = settings.jwtAlgorithm ?? "ES256";
		let key: Awaited<ReturnType<typeof importSPKI>>;
		try {
			key = await importSPKI(
				readFor(settings.jwtPublicKeyFile, "--auth-jwt-public-key"),
				algorithm,
			);
		} catch (error) {
			if (error instanceof AuthConfigError) throw error;
			throw new AuthConfigError(
				`--auth-jwt-public-key ${settings.jwtPublicKeyFile}: not a PEM public key (SPKI) for ${algorithm} (${error instanceof Error ? error.message : String(error)})`,
			);
		}
		return async (token) =>
			(await jwtVerify(token, key, { ...options, algorithms: [algorithm] })).payload;
	}
	return undefined;
}

/** The algorithm a signature key without `alg` is imported with at start (to check it only). */
function algorithmOf(key: JWK): string | undefined {
	if (typeof key.alg === "string") return key.alg;
	if (key.kty === "RSA") return "RS256";
	if (key.kty === "OKP" && key.crv === "Ed25519") return "EdDSA";
	if (key.kty === "EC")
		return ({ "P-256": "ES256", "P-384": "ES384", "P-521": "ES512" } as Record<string, string>)[
			key.crv ?? ""
		];
	return undefined;
}

/**
 * Imports each signature key of a JWKS file now: a file whose keys cannot be imported was accepted
 * and then answered every JWT 401 (found by review). A signature key (`use` absent or `sig`, of
 * type EC, RSA or OKP) that does not import refuses the file; keys of other uses or types are left
 * to the key set (it never picks them); a file without one usable key is refused.
 */
async function checkJwks(jwks: JSONWebKeySet, file: string): Promise<void> {
	let usable = 0;
	for (const [i, key] of jwks.keys.entries()) {
		if (key === null || typeof key !== "object")
			throw new AuthConfigError(`--auth-jwks-file ${file}: keys[${i}] is not a JWK object`);
		if (
			(key.use !== undefined && key.use !== "sig") ||
			!["EC", "RSA", "OKP"].includes(key.kty ?? "")
		)
			continue;
		const named = `keys[${i}]${typeof key.kid === "string" ? ` (kid "${key.kid.slice(0, 64)}")` : ""}`;
		const alg = algorithmOf(key);
		try {
			if (alg === undefined) throw new Error(`no alg, and none follows from kty ${key.kty}`);
			await importJWK(key, alg);
		} catch (error) {
			throw new AuthConfigError(
				`--auth-jwks-file ${file}: ${named} is not a usable public key (${error instanceof Error ? error.message : String(error)})`,
			);
		}
		usable++;
	}
	if (usable === 0)
		throw new AuthConfigError(
			`--auth-jwks-file ${file}: no signature key in it (kty EC, RSA or OKP, use "sig" or none): every JWT would be refused`,
		);
}

function grantOfClaims(payload: JWTPayload): Grant | undefined {
	let workspaces: ReadonlySet<number> | "*";
	try {
		const claim = payload[JWT_CLAIMS.workspaces];
		workspaces = claim === undefined ? new Set() : workspacesOf(claim, JWT_CLAIMS.workspaces);
	} catch {
		return undefined;
	}
	return {
		name: typeof payload.sub === "string" ? `jwt:${payload.sub}` : "jwt",
		workspaces,
		operator: payload[JWT_CLAIMS.operator] === true,
	};
}

/** The bearer token of a request, or `undefined` (missing, another scheme, or sent twice). */
function bearerOf(req: IncomingMessage): string | undefined {
	const header = req.headers.authorization;
	if (header === undefined) return undefined;
	const match = /^Bearer[ ]+([A-Za-z0-9\-._~+/]+=*)[ ]*$/i.exec(header);
	return match?.[1];
}

/**
 * Builds the authenticator of `settings`, or `undefined` when none is configured (everything is
 * open: the host then refuses to listen beyond loopback unless told). Reads its files once, now.
 *
 * @example
 * ```ts
 * const auth = await createAuthenticator({ tokensFile: "/etc/vvm/tokens.json" });
 * ```
 */
export async function createAuthenticator(
	settings: AuthSettings,
): Promise<Authenticator | undefined> {
	const statics =
		settings.tokensFile === undefined
			? []
			: readStaticTokens(settings.tokensFile, "--auth-tokens-file");
	const verify = await jwtVerifier(settings);
	if (statics.length === 0 && verify === undefined) return undefined;
	const cache = new Map<string, { grant: Grant; exp: number; recheckAt: number }>();

	const staticGrant = (token: string): Grant | undefined => {
		const digest = sha256(token);
		let found: Grant | undefined;
		// Every entry is compared, in constant time each: the time says nothing about which matched.
		for (const s of statics) if (timingSafeEqual(s.digest, digest)) found = s.grant;
		return found;
	};
	const jwtGrant = async (token: string): Promise<Grant | undefined> => {
		if (verify === undefined || token.split(".").length !== 3) return undefined;
		const now = Date.now();
		const mono = performance.now();
		const hit = cache.get(token);
		// The cache's own bound on the monotonic clock; `exp` (another host's wall time) on the wall.
		if (hit !== undefined && hit.recheckAt > mono && hit.exp > now) return hit.grant;
		let payload: JWTPayload;
		try {
			payload = await verify(token);
		} catch {
			cache.delete(token);
			return undefined;
		}
		const grant = grantOfClaims(payload);
		if (grant === undefined) return undefined;
		if (cache.size >= JWT_CACHE_SIZE) cache.delete(cache.keys().next().value as string);
		const exp = typeof payload.exp === "number" ? payload.exp * 1000 : now;
		cache.set(token, { grant, exp, recheckAt: mono + JWT_CACHE_MS });
		return grant;
	};

	return {
		async check({ url, req }): Promise<AuthCheck> {
			const path = url.pathname;
			if (OPEN_PATHS.has(path)) return OK;
			const token = bearerOf(req);
			if (token === undefined)
				return refusal(
					401,
					"HOST_UNAUTHENTICATED",
					"this host needs Authorization: Bearer <token>; nothing was done",
				);
			const grant = staticGrant(token) ?? (await jwtGrant(token));
			if (grant === undefined)
				return refusal(
					401,
					"HOST_UNAUTHENTICATED",
					"the bearer token is not valid (unknown, expired or badly signed); nothing was done",
				);
			if (path.startsWith("/api/")) {
				// Authorized on the route exactly as the API parses it (percent-decoded segments),
				// never on the raw path: `/workspaces/%31002/` is workspace 1002, and a raw-path
				// check let it through as "not a workspace path" (review of 3ce9ef5).
				const route = parseApiRoute(req.method ?? "GET", path, url.searchParams);
				// A bad API path is answered by its route (400/404/405) to any valid token; it
				// reads and writes nothing.
				if (route.kind === "error") return OK;
				if (grant.workspaces === "*" || grant.workspaces.has(route.wsid)) return OK;
				return refusal(
					403,
					"HOST_FORBIDDEN",
					`the token "${grant.name}" does not cover workspace ${route.wsid}; nothing was done`,
				);
			}
			if (grant.operator) return OK;
			return refusal(
				403,
				"HOST_FORBIDDEN",
				`the token "${grant.name}" may not call the operator route ${path}; nothing was done`,
			);
		},
	};
}

/**
 * `table` behind `auth`: a request without a valid token, or outside its token's grant, is
 * answered 401/403 (its body drained) before any route runs. Without `auth`, `table` itself.
 *
 * @example
 * ```ts
 * const guarded = guardRoutes(createRouteTable(routes), await createAuthenticator(settings));
 * ```
 */
export function guardRoutes(
	table: RouteTable,
	auth: Authenticator | undefined,
	allowedHosts: AllowedHosts = auth === undefined ? [] : "*",
): RouteTable {
	if (allowedHosts !== "*") {
		// A page that rebinds its own name to this host is same-origin to the browser: only its
		// name in Host gives it away (found by review: not caught by the cross-site check).
		const inner = guardRoutes(table, auth, "*");
		return (request) => {
			const name = refusedHostName(request.req.headers.host, allowedHosts);
			if (name === undefined) return inner(request);
			request.req.resume();
			return Promise.resolve(hostRefusal(name));
		};
	}
	if (auth === undefined) {
		// Without authentication a web page the operator opens can still send writes here: those
		// from another site are refused (review of 3ce9ef5). A bearer token is never sent by a
		// browser on its own, so with authentication there is nothing to refuse.
		return async (request) => {
			const refused = browserRefusal(request.req);
			if (refused === undefined || refused.ok) return table(request);
			request.req.resume();
			return refused.reply;
		};
	}
	return async (request) => {
		const checked = await auth.check(request);
		if (checked.ok) return table(request);
		request.req.resume();
		return checked.reply;
	};
}

/**
 * What a host without authentication refuses (403, nothing done): a write a browser sends from a
 * page of another site (CSRF: a form, or a `fetch` with a "simple" content type, needs no
 * preflight, and a host on loopback is reachable from the operator's browser). The browser says
 * so itself in `Sec-Fetch-Site` (computed against the URL it called, so it holds behind a reverse
 * proxy); a browser too old to send it is judged by `Origin` against `Host`. curl and programs
 * send neither header. (A page that rebinds its own name to 127.0.0.1 sends neither either: a
 * host reachable from a browser wants authentication, README "Security".)
 */
function browserRefusal(req: IncomingMessage): AuthCheck | undefined {
	const method = req.method ?? "GET";
	if (method === "GET" || method === "HEAD" || method === "OPTIONS") return undefined;
	const site = req.headers["sec-fetch-site"];
	let elsewhere: boolean;
	if (site !== undefined) elsewhere = site !== "same-origin" && site !== "none";
	else {
		const origin = req.headers.origin;
		if (origin === undefined) return undefined;
		try {
			elsewhere = origin === "null" || new URL(origin).host !== req.headers.host;
		} catch {
			elsewhere = true;
		}
	}
	if (!elsewhere) return undefined;
	return refusal(
		403,
		"HOST_FORBIDDEN",
		"a write sent by a web page of another site is refused by a host without authentication; nothing was done",
	);
}

/**
 * The certificate and key files of `--tls-cert` / `--tls-key`, read now (before any storage
 * I/O), or `undefined` without them. A file that cannot be read, or is not PEM, is an
 * {@link AuthConfigError} naming the flag.
 *
 * @example
 * ```ts
 * const tls = readTlsFiles({ tlsCert: "/etc/vvm/cert.pem", tlsKey: "/etc/vvm/key.pem" });
 * ```
 */
export function readTlsFiles(http: {
	readonly tlsCert?: string;
	readonly tlsKey?: string;
}): TlsFiles | undefined {
	if (http.tlsCert === undefined || http.tlsKey === undefined) return undefined;
	const cert = readFor(http.tlsCert, "--tls-cert");
	const key = readFor(http.tlsKey, "--tls-key");
	if (!cert.includes("-----BEGIN CERTIFICATE-----"))
		throw new AuthConfigError(`--tls-cert ${http.tlsCert}: no PEM certificate in it`);
	if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key))
		throw new AuthConfigError(`--tls-key ${http.tlsKey}: no PEM private key in it`);
	// What the HTTPS server would do with them, now: a corrupt PEM, or a key of another
	// certificate, was found only after the storage was open, as exit 1 "check --http-host"
	// (found by review). OpenSSL's reason names no key material.
	const refused = (parts: { cert?: string; key?: string }): string | undefined => {
		try {
			createSecureContext(parts);
			return undefined;
		} catch (error) {
			return error instanceof Error ? error.message : String(error);
		}
	};
	const badCert = refused({ cert });
	if (badCert !== undefined)
		throw new AuthConfigError(
			`--tls-cert ${http.tlsCert}: not a usable PEM certificate (${badCert})`,
		);
	const badKey = refused({ key });
	if (badKey !== undefined)
		throw new AuthConfigError(`--tls-key ${http.tlsKey}: not a usable PEM private key (${badKey})`);
	const mismatch = refused({ cert, key });
	if (mismatch !== undefined)
		throw new AuthConfigError(
			`--tls-key ${http.tlsKey} is not the private key of --tls-cert ${http.tlsCert} (${mismatch})`,
		);
	return { cert, key };
}
