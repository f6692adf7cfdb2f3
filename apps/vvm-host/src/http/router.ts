// The host's one HTTP layer: one route table, one reply type, one writer. Route modules
// (operator-routes, partition-routes, api-v2) return their routes; the host lists them in one
// table; nothing else writes to a response. Errors of every route have the API v2 body
// (errors.ts). A route goes where its module is: see ARCHITECTURE.md "Where things go".
import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import { cpErrorReply, hostRefusal } from "./errors.ts";

/**
 * The answer of a route. `body` is sent as JSON, unless `contentType` is given: then it is
 * sent as it is (a string: the status page, the metrics text).
 */
export interface Reply {
	readonly status: number;
	readonly body: unknown;
	readonly headers?: Readonly<Record<string, string>>;
	readonly contentType?: string;
}

/** The parts of a request's URL that routes read (a `URL` has them). */
export interface RequestUrl {
	readonly pathname: string;
	/** `""` or `"?…"`. */
	readonly search: string;
	readonly searchParams: URLSearchParams;
}

/** What a route's handler gets: the parsed URL, the method, and the request (for its body). */
export interface RouteRequest {
	readonly method: string;
	readonly url: RequestUrl;
	readonly req: IncomingMessage;
}

/**
 * A path the WHATWG URL parser keeps exactly as it is: only characters it does not encode, not
 * `//` first (that names a host), and no dot segment (`.`, `..`, or their `%2e` spellings, which
 * it resolves).
 */
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-._~!$&'()*+,;=:@/%]*$/;
const DOT_SEGMENT = /\/(?:\.|%2e)/i;

/** A plain path without a query (see {@link requestUrl}). */
class PlainUrl implements RequestUrl {
	readonly pathname: string;
	readonly search = "";
	constructor(pathname: string) {
		this.pathname = pathname;
	}
	get searchParams(): URLSearchParams {
		return new URLSearchParams();
	}
}

/**
 * The URL of a request target. A plain path without a query (every command's) is taken as it is,
 * which is what `new URL` would make of it, at a fraction of the cost; anything else is parsed.
 */
export function requestUrl(target: string): RequestUrl {
	if (PLAIN_PATH.test(target) && !DOT_SEGMENT.test(target)) return new PlainUrl(target);
	return new URL(target, "http://localhost");
}

/** One entry of the route table. */
export interface Route {
	/** The method, or `"*"` for a prefix route that answers 405 itself. */
	readonly method: string;
	/** The exact path, or with `prefix` every path that starts with it. */
	readonly path: string;
	readonly prefix?: boolean;
	/** Only requests it accepts (e.g. `POST /work` with a `partition`); the next route gets the rest. */
	readonly when?: (url: RequestUrl) => boolean;
	readonly handle: (request: RouteRequest) => Reply | Promise<Reply>;
}

/** A route table's answer to one request. */
export type RouteTable = (request: RouteRequest) => Promise<Reply>;

/**
 * One route table over `routes`, tried in order: the first whose method, path and `when` match
 * answers. A path no route has is 404; a known path with another method is 405 with `Allow`.
 * A handler that throws answers as {@link cpErrorReply} says (500 `committed: "unknown"` unless
 * the error is a `CpError` that says otherwise).
 *
 * @example
 * ```ts
 * const table = createRouteTable([{ method: "GET", path: "/ping", handle: () => ({ status: 200, body: "pong" }) }]);
 * ```
 */
export function createRouteTable(routes: readonly Route[]): RouteTable {
	const exact = new Map<string, Route[]>();
	const prefixes = routes.filter((r) => r.prefix === true);
	for (const route of routes) {
		if (route.prefix === true) continue;
		const list = exact.get(route.path) ?? [];
		list.push(route);
		exact.set(route.path, list);
	}
	const byPrefix = (path: string): Route[] => prefixes.filter((r) => path.startsWith(r.path));
	return async (request) => {
		const { method, url } = request;
		const path = url.pathname;
		// One prefix route (API v2) is the common case: no array built per request for it.
		const candidates =
			exact.get(path) ??
			(prefixes.length === 1
				? path.startsWith((prefixes[0] as Route).path)
					? prefixes
					: []
				: byPrefix(path));
		try {
			for (const route of candidates) {
				if (route.method !== "*" && route.method !== method) continue;
				if (route.when !== undefined && !route.when(url)) continue;
				return await route.handle(request);
			}
		} catch (error) {
			return cpErrorReply(error);
		}
		if (candidates.length === 0) return hostRefusal(404, `no route ${path}`);
		const allow = [...new Set(candidates.map((r) => r.method))];
		return hostRefusal(405, `method ${method} not allowed on ${path}`, { allow });
	};
}

/** The one reply writer: JSON (or the reply's own content type), never cached. */
function sendReply(res: ServerResponse, reply: Reply): void {
	const text =
		reply.contentType === undefined ? `${JSON.stringify(reply.body)}\n` : String(reply.body);
	// A flat [name, value, …] list: node writes it as it is (no object to copy per answer).
	const headers: string[] = [];
	const own = reply.headers;
	if (own !== undefined) for (const name in own) headers.push(name, own[name] as string);
	headers.push(
		"content-type",
		reply.contentType ?? "application/json; charset=utf-8",
		"content-length",
		String(Buffer.byteLength(text)),
		"cache-control",
		"no-store",
	);
	res.writeHead(reply.status, headers);
	res.end(text);
}

/**
 * {@link sendReply}, or a 500 when the reply cannot be written (e.g. a body too large to encode:
 * `JSON.stringify` throws `RangeError`), or a reset once headers went out. Never throws.
 */
function safeReply(res: ServerResponse, reply: Reply): void {
	try {
		sendReply(res, reply);
	} catch (error) {
		if (res.headersSent) {
			res.destroy();
			return;
		}
		try {
			sendReply(res, cpErrorReply(error));
		} catch {
			res.destroy();
		}
	}
}

/** The bounds {@link startHttpServer} sets on its server. */
export interface HttpLimits {
	readonly checkIntervalMs: number;
	readonly headersTimeoutMs: number;
	readonly requestTimeoutMs: number;
	readonly keepAliveTimeoutMs: number;
	readonly maxConnections: number;
	/** A connection with nothing read or written for this long is closed (replies left unread). */
	readonly idleSocketTimeoutMs: number;
}

/** What one client may hold of the host's HTTP server (README, Security: Limits). */
const HTTP_LIMITS: Readonly<HttpLimits> = Object.freeze({
	/** How often node checks the two timeouts below (its default, 30 s, would let them run late). */
	checkIntervalMs: 1_000,
	headersTimeoutMs: 10_000,
	requestTimeoutMs: 30_000,
	/**
	 * Node's own default. Not shorter: node's http.Agent keeps a connection only while the
	 * server's `Keep-Alive: timeout` hint exceeds its 1 s margin (undici's fetch, 2 s), so a
	 * 1 s timeout made every Node client open a connection per request (measured: one TCP
	 * handshake per create under load, and the listen queue overflowing).
	 */
	keepAliveTimeoutMs: 5_000,
	maxConnections: 4_096,
	/**
	 * A client that stops reading its replies (pipelined requests, unread WLog pages of up to
	 * 4 MiB each) would make the host buffer them for good: its connection is closed once nothing
	 * moved on it for this long, which also ends the requests it holds in flight.
	 */
	idleSocketTimeoutMs: 30_000,
});

/** The PEM certificate (chain) and private key of an HTTPS server. */
export interface TlsFiles {
	readonly cert: string | Buffer;
	readonly key: string | Buffer;
}

/** A started HTTP server. */
export interface HttpServer {
	readonly port: number;
	readonly server: Server;
	/**
	 * Stops listening, closes idle connections, and resets the others after `graceMs` (default 0:
	 * at once); resolves once every connection is closed.
	 */
	close(graceMs?: number): Promise<void>;
}

/**
 * Ends a request an {@link Admission} counted: called once, when both the route table answered
 * and the reply was sent (or the connection closed).
 */
type Release = () => void;

/**
 * A check run for every request before the route table, once its URL is parsed: a reply it
 * returns is sent at once, the request's body unread (the host's overload shedding:
 * `overload.ts`); `undefined` lets the request through; a {@link Release} lets it through and
 * is called once the table's answer for it is settled (an answer, a thrown error, a client gone
 * or timed out: each ends the route's promise) and its reply is out (written to the socket, or
 * the connection closed): a reply a client does not read still holds its place, so unread
 * replies cannot pile up beyond the admission's bound.
 */
export type Admission = (method: string, url: RequestUrl) => Reply | Release | undefined;

/**
 * The largest declared body of a refused request that is read and discarded so its connection
 * can carry the next request; a larger or undeclared (chunked) one closes the connection after
 * the answer instead of being read.
 */
const REFUSED_BODY_DRAIN_BYTES = 64 * 1024;

/**
 * Answers a request refused before its body was read. The body is not parsed: a small one (a
 * create's, which came in the headers' packet) is discarded as it arrives and the connection
 * kept, since a new connection costs the client and the host a handshake, far more than the
 * bytes; a large or unsized one is not read at all: the connection closes after the answer.
 * Either way nothing of the request was handed on, so nothing was written.
 */
function refuse(req: IncomingMessage, res: ServerResponse, reply: Reply): void {
	const length = req.headers["content-length"];
	const small =
		length === undefined
			? req.headers["transfer-encoding"] === undefined
			: Number(length) <= REFUSED_BODY_DRAIN_BYTES;
	if (!small) res.shouldKeepAlive = false;
	req.resume();
	safeReply(res, reply);
}

/** Per connection, what to call when it ends: one `close` listener however many requests wait. */
const connectionEnds = new WeakMap<Socket, Set<() => void>>();

/** Calls `fn` when `socket` closes (unless the returned function was called first). */
function onConnectionEnd(socket: Socket, fn: () => void): () => void {
	let waiting = connectionEnds.get(socket);
	if (waiting === undefined) {
		const set = new Set<() => void>();
		waiting = set;
		connectionEnds.set(socket, set);
		socket.once("close", () => {
			for (const f of set) f();
			set.clear();
		});
	}
	const mine = waiting;
	mine.add(fn);
	return () => {
		mine.delete(fn);
	};
}

/**
 * Starts node:http (no framework) over one route table and resolves once it listens. `admit`, if
 * given, answers a request before the table sees it (see {@link Admission}).
 *
 * @example
 * ```ts
 * const http = await startHttpServer(createRouteTable(routes), "127.0.0.1", 8080);
 * ```
 */
export function startHttpServer(
	table: RouteTable,
	host: string,
	port: number,
	limits: Partial<HttpLimits> = {},
	tls?: TlsFiles,
	admit?: Admission,
): Promise<HttpServer> {
	const bound = { ...HTTP_LIMITS, ...limits };
	// One error boundary around every request: nothing a request sends (a target the URL parser
	// refuses, a reply too large to encode) can throw out of this handler and end the process.
	const handler = (req: IncomingMessage, res: ServerResponse): void => {
		const method = req.method ?? "GET";
		let url: RequestUrl;
		try {
			url = requestUrl(req.url ?? "/");
		} catch {
			req.resume();
			safeReply(res, hostRefusal(400, "target: not a valid request target", { field: "target" }));
			return;
		}
		const verdict = admit?.(method, url);
		if (verdict === undefined) {
			table({ method, url, req }).then(
				(reply) => safeReply(res, reply),
				(error: unknown) => safeReply(res, cpErrorReply(error)),
			);
			return;
		}
		if (typeof verdict !== "function") {
			refuse(req, res, verdict);
			return;
		}
		// Released once the answer is settled and the reply is out: the response's `close` (after
		// it was handed to the socket), or the connection's end, which is the only sign a
		// pipelined reply queued behind an unread one ever gets (its response never closes).
		let steps = 2;
		let sent = false;
		const onSent = (): void => {
			if (sent) return;
			sent = true;
			forget();
			step();
		};
		const step = (): void => {
			if (--steps === 0) verdict();
		};
		const forget = onConnectionEnd(req.socket, onSent);
		res.once("close", onSent);
		table({ method, url, req }).then(
			(reply) => {
				step();
				safeReply(res, reply);
			},
			(error: unknown) => {
				step();
				safeReply(res, cpErrorReply(error));
			},
		);
	};
	const options = { connectionsCheckingInterval: bound.checkIntervalMs };
	const server: Server =
		tls === undefined
			? createServer(options, handler)
			: // A TLS handshake is bounded like the headers (node's own bound is 120 s): idle
				// connections that never handshake would otherwise hold the connection slots.
				createTlsServer(
					{ ...options, cert: tls.cert, key: tls.key, handshakeTimeout: bound.headersTimeoutMs },
					handler,
				);
	// Slow or idle clients cannot hold the host: the headers within 10 s, the whole request within
	// 30 s, an idle keep-alive connection closed after 5 s, and at most 4 096 connections at once
	// (more are refused at accept).
	server.headersTimeout = bound.headersTimeoutMs;
	server.requestTimeout = bound.requestTimeoutMs;
	server.keepAliveTimeout = bound.keepAliveTimeoutMs;
	server.maxConnections = bound.maxConnections;
	// No 'timeout' listener: node destroys a socket idle this long (nothing read or written).
	server.timeout = bound.idleSocketTimeoutMs;
	return new Promise((resolvePromise, reject) => {
		const onError = (error: Error): void => reject(error);
		server.once("error", onError);
		// A listen queue as deep as the connection bound (the kernel caps it at net.core.somaxconn):
		// node's 511 overflowed when hundreds of clients connected at once, and a dropped SYN is
		// retried after a second, a second added to that request's latency.
		server.listen({ port, host, backlog: bound.maxConnections }, () => {
			server.off("error", onError);
			resolvePromise({
				port: (server.address() as AddressInfo).port,
				server,
				close: (graceMs = 0) =>
					new Promise<void>((done) => {
						server.close(() => done());
						// Idle keep-alive connections now; one still writing its reply gets `graceMs`.
						server.closeIdleConnections();
						if (graceMs <= 0) server.closeAllConnections();
						else setTimeout(() => server.closeAllConnections(), graceMs).unref();
					}),
			});
		});
	});
}
