import { isUtf8 } from "node:buffer";
import type { IncomingMessage } from "node:http";
import type { PartitionPlacement } from "@vvm/appparts";
import type { AppPartition, CommandResult } from "@vvm/cp";
import { partitionOf } from "@vvm/cp";
import type { Logger } from "pino";
import type { CpMetrics } from "../cp-metrics.ts";
import type { ApiRoute } from "./api-routes.ts";
import { API_PREFIX, parseApiRoute } from "./api-routes.ts";
import type { ApiErrorReply } from "./errors.ts";
import { cpErrorReply, hostRefusal, notServedHere, unavailable } from "./errors.ts";
import type { LoadShedder } from "./overload.ts";
import type { Reply, Route, RouteRequest } from "./router.ts";

/** Largest request body read, bytes (an event is at most 62 KiB: `@vvm/cp` `MAX_EVENT_BYTES`). */
const MAX_BODY_BYTES = 256 * 1024;

/** What the API v2 handler reads. */
export interface ApiV2Deps {
	readonly partitions: number;
	/** The running placement, asked per request; `undefined` while the host is starting (503). */
	readonly placement: () => PartitionPlacement | undefined;
	/** The partition deployed on this host, if any. */
	readonly partition: (partition: number) => AppPartition | undefined;
	/** The fencing token of the partition's grant (the slot leadership's, in static placement). */
	readonly fencingToken: (partition: number) => bigint | undefined;
	/** This host's advertised address (`host:port`). */
	readonly self: () => string;
	/** The scheme of the cluster's hosts, for 421's `Location` (default `http`). */
	readonly scheme?: "http" | "https";
	readonly metrics: CpMetrics;
	readonly logger: Logger;
	/**
	 * Where cp's sheds (`CP_BUSY`) are counted for the rate-limited shed log instead of one warn
	 * line each (a line per 503 is work the overloaded host can least afford); without it they
	 * are logged one by one.
	 */
	readonly shedLog?: Pick<LoadShedder, "count">;
}

/** A request body read as a JSON object, or the refusal to answer instead. */
type BodyRead = { readonly fields: Record<string, unknown> } | { readonly refused: ApiErrorReply };

/**
 * Reads a JSON object body, at most {@link MAX_BODY_BYTES}; a bad one is a 400 naming `body`.
 * Plain `data`/`end` listeners: a create's body is one chunk, and the stream's async iterator
 * costs a promise per chunk and an end-of-stream watcher per request (a few µs on the hot path,
 * measured with the benchmark's stub row).
 */
function readJsonBody(req: IncomingMessage): Promise<BodyRead> {
	// A client gone before its body was read (reset while a token was checked): answered, never
	// left waiting for events that will not come (its admission place would leak for good).
	const gone = (): BodyRead => ({
		refused: hostRefusal(400, "body: the connection ended before the body was read", {
			field: "body",
		}),
	});
	if (req.destroyed) return Promise.resolve(gone());
	return new Promise((resolve) => {
		let first: Buffer | undefined;
		let more: Buffer[] | undefined;
		let size = 0;
		const onData = (chunk: Buffer): void => {
			size += chunk.length;
			if (size > MAX_BODY_BYTES) {
				req.off("data", onData);
				req.off("end", onEnd);
				req.off("error", onGone);
				req.off("close", onGone);
				req.resume(); // drained, not kept
				const tooLarge = hostRefusal(413, `body: larger than ${MAX_BODY_BYTES} bytes`, {
					field: "body",
				});
				resolve({ refused: { ...tooLarge, headers: { connection: "close" } } });
				return;
			}
			if (first === undefined) first = chunk;
			else if (more === undefined) more = [first, chunk];
			else more.push(chunk);
		};
		const onEnd = (): void => {
			req.off("error", onGone);
			req.off("close", onGone);
			const bytes = more !== undefined ? Buffer.concat(more) : first;
			// Decoding would put U+FFFD in place of bytes that are not UTF-8: refused, not altered.
			if (bytes !== undefined && !isUtf8(bytes)) {
				resolve({
					refused: hostRefusal(400, "body: is not valid UTF-8 (send JSON in UTF-8)", {
						field: "body",
					}),
				});
				return;
			}
			resolve(parseJsonBody(bytes === undefined ? "" : bytes.toString("utf8")));
		};
		// An error or a close before the end: nothing was handed on, so nothing was written.
		const onGone = (): void => {
			req.off("data", onData);
			req.off("end", onEnd);
			req.off("error", onGone);
			req.off("close", onGone);
			resolve(gone());
		};
		req.on("data", onData);
		req.once("end", onEnd);
		req.once("error", onGone);
		req.once("close", onGone);
	});
}

function parseJsonBody(text: string): BodyRead {
	const bad = (message: string): BodyRead => ({
		refused: hostRefusal(400, `body: ${message}`, { field: "body" }),
	});
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch (error) {
		return bad(`is not JSON (${error instanceof Error ? error.message : String(error)})`);
	}
	if (typeof value !== "object" || value === null || Array.isArray(value))
		return bad("must be a JSON object");
	return { fields: value as Record<string, unknown> };
}

/**
 * Where a partition's request goes: this host's deployed partition, or a 421 naming the holder,
 * or a 503 when nobody (known) serves it or this host is still deploying it.
 */
function locate(
	deps: Pick<ApiV2Deps, "placement" | "partition" | "self" | "scheme">,
	partition: number,
	url: string,
): AppPartition | ApiErrorReply {
	const placement = deps.placement();
	if (placement === undefined)
		return unavailable(
			"not_ready",
			"the host is starting: its placement is not running yet",
			1000,
			{
				partition,
			},
		);
	const where = placement.locate(partition);
	if (where.kind === "served") {
		const deployed = deps.partition(partition);
		if (deployed !== undefined) return deployed;
		return unavailable("not_ready", `partition ${partition} is being deployed on this host`, 1000, {
			partition,
		});
	}
	return notServedHere(where, partition, url, deps.self(), deps.scheme);
}

const isWrite = (r: ApiRoute): boolean =>
	r.kind === "create" || r.kind === "update" || r.kind === "command";

/**
 * The `Idempotency-Key` header (IETF httpapi draft): a Structured Field string (`"…"`, with `\"`
 * and `\\` escapes), or, as many clients send it, the bare key. `@vvm/cp` validates what it holds.
 */
function idempotencyKeyOf(req: IncomingMessage): string | undefined | ApiErrorReply {
	const header = req.headers["idempotency-key"];
	if (header === undefined) return undefined;
	// node joins repeated lines with ", " (its types allow an array): two keys are not one key
	// "a, b" (an Item is one value).
	const raw = Array.isArray(header) ? header.join(", ") : header;
	if (raw.includes(",") && (req.headersDistinct["idempotency-key"]?.length ?? 0) > 1)
		return hostRefusal(400, "Idempotency-Key: sent more than once (one key per request)", {
			field: "Idempotency-Key",
		});
	const value = raw.trim();
	if (value.length >= 2 && value.startsWith('"') && value.endsWith('"'))
		return value.slice(1, -1).replace(/\\(["\\])/g, "$1");
	return value;
}

async function run(
	route: ApiRoute,
	part: AppPartition,
	body: Record<string, unknown>,
	idempotencyKey: string | undefined,
): Promise<Reply> {
	const ok = (status: number, result: CommandResult): Reply => {
		// The API's fields only (not plogOffset, replayed): picked, not copied with a rest pattern.
		const body: Record<string, unknown> = {
			CurrentWLogOffset: result.CurrentWLogOffset,
			NewIDs: result.NewIDs,
		};
		if (result.Result !== undefined) body.Result = result.Result;
		const headers: Record<string, string> = { "vvm-plog-offset": String(result.plogOffset) };
		// The first execution's answer, replayed: nothing was written by this request.
		if (result.replayed === true) headers["idempotent-replayed"] = "true";
		return { status, body, headers };
	};
	const key = idempotencyKey === undefined ? {} : { idempotencyKey };
	switch (route.kind) {
		case "create":
			return ok(
				201,
				await part.createRecord({ wsid: route.wsid, table: route.table, fields: body, ...key }),
			);
		case "update":
			return ok(
				200,
				await part.updateRecord({
					wsid: route.wsid,
					table: route.table,
					id: route.id,
					fields: body,
					...key,
				}),
			);
		case "command":
			return ok(
				200,
				await part.executeCommand({
					wsid: route.wsid,
					command: route.command,
					...(body.args === undefined ? {} : { args: body.args as Record<string, unknown> }),
					...(body.cuds === undefined ? {} : { cuds: body.cuds as never }),
					...key,
				}),
			);
		case "read":
			return {
				status: 200,
				headers: {},
				body: await part.readRecord({ wsid: route.wsid, table: route.table, id: route.id }),
			};
		case "wlog":
			return { status: 200, headers: {}, body: await readWLogPage(part, route) };
	}
}

/** Most bytes of a WLog read's entries in one reply (an event is at most 62 KiB). */
const MAX_WLOG_REPLY_BYTES = 4 * 1024 * 1024;
/** Entries read from the partition at a time while a reply fills. */
const WLOG_CHUNK = 64;

/**
 * A WLog read bounded in bytes: entries from `offset` until `count` of them or
 * {@link MAX_WLOG_REPLY_BYTES}, whichever comes first (always at least one). When the bound cut
 * the page short, `next` is the offset to continue from; without `next` the read ended at `count`
 * or at the log's end.
 */
async function readWLogPage(
	part: AppPartition,
	route: Extract<ApiRoute, { kind: "wlog" }>,
): Promise<{ results: unknown[]; next?: number }> {
	const results: unknown[] = [];
	let bytes = 0;
	let from = route.offset;
	while (results.length < route.count) {
		const limit = Math.min(WLOG_CHUNK, route.count - results.length);
		const chunk = await part.readWLog({ wsid: route.wsid, from, limit });
		for (const entry of chunk) {
			const size = Buffer.byteLength(JSON.stringify(entry)) + 1;
			if (results.length > 0 && bytes + size > MAX_WLOG_REPLY_BYTES)
				return { results, next: entry.offset };
			results.push(entry);
			bytes += size;
		}
		const last = chunk.at(-1);
		if (chunk.length < limit || last === undefined) break;
		from = last.offset + 1;
	}
	return { results };
}

/** An answer of the API v2 routes before the `vvm-*` headers: its metrics outcome beside it. */
interface Answer {
	readonly reply: Reply;
	readonly outcome: string;
	readonly partition?: number;
	readonly token?: bigint;
}

const refusedAnswer = (e: ApiErrorReply, partition?: number): Answer => ({
	reply: e,
	outcome: e.outcome,
	...(partition === undefined ? {} : { partition }),
});

/** Routes, reads, locates and runs one request (the order of {@link apiV2Route}). */
async function answer(deps: ApiV2Deps, route: ApiRoute, request: RouteRequest): Promise<Answer> {
	const { req, url } = request;
	const partition = partitionOf(route.wsid, deps.partitions);
	const write = isWrite(route);
	if (!write) req.resume();
	const body = write ? await readJsonBody(req) : { fields: {} };
	if ("refused" in body) return refusedAnswer(body.refused, partition);
	const target = locate(deps, partition, `${url.pathname}${url.search}`);
	if ("outcome" in target) return refusedAnswer(target, partition);
	const key = write ? idempotencyKeyOf(req) : undefined;
	if (typeof key === "object") return refusedAnswer(key, partition);
	const token = deps.fencingToken(partition);
	const tokenOf = token === undefined ? {} : { token };
	try {
		return {
			reply: await run(route, target, body.fields, key),
			outcome: "ok",
			partition,
			...tokenOf,
		};
	} catch (error) {
		const e = cpErrorReply(error, !write);
		return { reply: e, outcome: e.outcome, partition, ...tokenOf };
	}
}

/**
 * The route of `/api/v2/…` (the command processor's; see the README's table). Order: the route
 * and its URL fields (400/404/405), then the body (400 naming `body`), then the partition's place
 * (421 to the holder, 503 with `Retry-After`), then the command processor (its own 400/404/405
 * naming the field, before anything is written). Answers carry the partition, its fencing token
 * and (writes) the event's PLog offset as `vvm-*` headers, and so does the `command` log line
 * (debug; warn for 409 and 5xx, except cp's sheds with `shedLog`: counted in its one line a second).
 *
 * @example
 * ```ts
 * const table = createRouteTable([apiV2Route(deps), ...operatorRoutes(state)]);
 * ```
 */
export function apiV2Route(deps: ApiV2Deps): Route {
	return {
		method: "*",
		path: API_PREFIX,
		prefix: true,
		handle: async (request) => {
			const started = performance.now();
			const route = parseApiRoute(request.method, request.url.pathname, request.url.searchParams);
			if (route.kind === "error") {
				request.req.resume();
				const refused = hostRefusal(route.status, route.message, {
					...(route.field === undefined ? {} : { field: route.field }),
					...(route.allow === undefined ? {} : { allow: route.allow }),
				});
				deps.metrics.observe("invalid", refused.outcome, refused.status, elapsed(started));
				return refused;
			}
			const { reply, outcome, partition, token } = await answer(deps, route, request);
			const headers: Record<string, string> = Object.assign({}, reply.headers);
			if (partition !== undefined) headers["vvm-partition"] = String(partition);
			if (token !== undefined) headers["vvm-fencing-token"] = token.toString();
			const seconds = elapsed(started);
			deps.metrics.observe(route.kind, outcome, reply.status, seconds);
			const shed = outcome === "busy" && deps.shedLog !== undefined;
			if (shed) deps.shedLog?.count("cp_busy");
			const warn = !shed && (reply.status === 409 || reply.status >= 500);
			// The line is built only when it is written (debug is off by default: a create's hot path).
			if (isWrite(route) && (warn || deps.logger.isLevelEnabled("debug"))) {
				const offset = headers["vvm-plog-offset"];
				const line = {
					event: "command",
					kind: route.kind,
					wsid: route.wsid,
					partition,
					fencingToken: token?.toString(),
					plogOffset: offset === undefined ? undefined : Number(offset),
					status: reply.status,
					outcome,
					ms: Math.round(seconds * 10_000) / 10,
				};
				if (warn) deps.logger.warn(line, `command ${outcome}`);
				else deps.logger.debug(line, `command ${outcome}`);
			}
			return { ...reply, headers };
		},
	};
}

const elapsed = (started: number): number => (performance.now() - started) / 1000;
