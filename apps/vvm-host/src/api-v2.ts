import type { IncomingMessage, ServerResponse } from "node:http";
import type { PartitionPlacement } from "@vvm/appparts";
import type { AppPartition, CommandResult } from "@vvm/cp";
import { partitionOf } from "@vvm/cp";
import type { Logger } from "pino";
import type { ApiErrorReply } from "./api-errors.ts";
import { cpErrorReply, hostRefusal, notServedHere, unavailable } from "./api-errors.ts";
import type { ApiRoute } from "./api-routes.ts";
import { parseApiRoute } from "./api-routes.ts";
import type { CpMetrics } from "./cp-metrics.ts";

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
	readonly metrics: CpMetrics;
	readonly logger: Logger;
}

type Reply = {
	readonly status: number;
	readonly body: unknown;
	readonly headers: Record<string, string>;
};

const send = (res: ServerResponse, reply: Reply): void => {
	const text = `${JSON.stringify(reply.body)}\n`;
	res.writeHead(reply.status, {
		"content-type": "application/json; charset=utf-8",
		"content-length": Buffer.byteLength(text),
		"cache-control": "no-store",
		...reply.headers,
	});
	res.end(text);
};

const errorOf = (e: ApiErrorReply): Reply => ({
	status: e.status,
	body: e.body,
	headers: { ...e.headers },
});

/** Reads a JSON object body, at most {@link MAX_BODY_BYTES}; a bad one is a 400 naming `body`. */
async function readJsonBody(req: IncomingMessage): Promise<Record<string, unknown> | Reply> {
	const chunks: Buffer[] = [];
	let size = 0;
	for await (const chunk of req) {
		size += (chunk as Buffer).length;
		if (size > MAX_BODY_BYTES) {
			const tooLarge = hostRefusal(413, `body: larger than ${MAX_BODY_BYTES} bytes`, {
				field: "body",
			});
			return { ...tooLarge, headers: { connection: "close" } };
		}
		chunks.push(chunk as Buffer);
	}
	const bad = (message: string): Reply => hostRefusal(400, `body: ${message}`, { field: "body" });
	let value: unknown;
	try {
		value = JSON.parse(Buffer.concat(chunks).toString("utf8"));
	} catch (error) {
		return bad(`is not JSON (${error instanceof Error ? error.message : String(error)})`);
	}
	if (typeof value !== "object" || value === null || Array.isArray(value))
		return bad("must be a JSON object");
	return value as Record<string, unknown>;
}

const isReply = (v: unknown): v is Reply =>
	typeof v === "object" &&
	v !== null &&
	"status" in v &&
	"headers" in v &&
	"body" in v &&
	typeof (v as Reply).status === "number";

/**
 * Where a partition's request goes: this host's deployed partition, or a 421 naming the holder,
 * or a 503 when nobody (known) serves it or this host is still deploying it.
 */
function locate(
	deps: Pick<ApiV2Deps, "placement" | "partition" | "self">,
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
	return notServedHere(where, partition, url, deps.self());
}

const isWrite = (r: ApiRoute): boolean =>
	r.kind === "create" || r.kind === "update" || r.kind === "command";

/**
 * The `Idempotency-Key` header (IETF httpapi draft): a Structured Field string (`"…"`, with `\"`
 * and `\\` escapes), or, as many clients send it, the bare key. `@vvm/cp` validates what it holds.
 */
function idempotencyKeyOf(req: IncomingMessage): string | undefined {
	const raw = req.headers["idempotency-key"];
	if (raw === undefined) return undefined;
	const value = (Array.isArray(raw) ? raw.join(", ") : raw).trim();
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
		const { plogOffset, replayed, ...api } = result;
		return {
			status,
			body: api,
			headers: {
				"vvm-plog-offset": String(plogOffset),
				// The first execution's answer, replayed: nothing was written by this request.
				...(replayed === true ? { "idempotent-replayed": "true" } : {}),
			},
		};
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
			return {
				status: 200,
				headers: {},
				body: {
					results: await part.readWLog({
						wsid: route.wsid,
						from: route.offset,
						limit: route.count,
					}),
				},
			};
	}
}

/**
 * Creates the handler of `/api/v2/…` (the command processor's routes; see the README's table).
 * Order: the route and its URL fields (400/404/405), then the body (400 naming `body`), then the
 * partition's place (421 to the holder, 503 with `Retry-After`), then the command processor (its
 * own 400/404/405 naming the field, before anything is written). Answers of writes carry the
 * partition, its fencing token and the event's PLog offset as `vvm-*` headers, and so does the
 * `command` log line (debug; warn for 409 and 5xx).
 *
 * @example
 * ```ts
 * const api = createApiV2Handler(deps);
 * // in the server: if (isApiPath(url.pathname)) return api(req, res, url);
 * ```
 */
export function createApiV2Handler(
	deps: ApiV2Deps,
): (req: IncomingMessage, res: ServerResponse, url: URL) => Promise<void> {
	return async (req, res, url) => {
		const started = performance.now();
		const method = req.method ?? "GET";
		const route = parseApiRoute(method, url.pathname, url.searchParams);
		const kind = route.kind === "error" ? "invalid" : route.kind;
		let reply: Reply;
		let outcome = "ok";
		let partition: number | undefined;
		let token: bigint | undefined;
		if (route.kind === "error") {
			req.resume();
			const refused = hostRefusal(route.status, route.message, {
				...(route.field === undefined ? {} : { field: route.field }),
				...(route.allow === undefined ? {} : { allow: route.allow }),
			});
			outcome = refused.outcome;
			reply = errorOf(refused);
		} else {
			partition = partitionOf(route.wsid, deps.partitions);
			if (!isWrite(route)) req.resume();
			const body = isWrite(route) ? await readJsonBody(req) : {};
			if (isReply(body)) {
				outcome = "bad_request";
				reply = body;
			} else {
				const target = locate(deps, partition, `${url.pathname}${url.search}`);
				if ("outcome" in target) {
					outcome = target.outcome;
					reply = errorOf(target);
				} else {
					token = deps.fencingToken(partition);
					try {
						reply = await run(
							route,
							target,
							body,
							isWrite(route) ? idempotencyKeyOf(req) : undefined,
						);
					} catch (error) {
						const e = cpErrorReply(error);
						outcome = e.outcome;
						reply = errorOf(e);
					}
				}
			}
			reply.headers["vvm-partition"] = String(partition);
			if (token !== undefined) reply.headers["vvm-fencing-token"] = token.toString();
		}
		send(res, reply);
		const seconds = (performance.now() - started) / 1000;
		deps.metrics.observe(kind, outcome, reply.status, seconds);
		if (route.kind !== "error" && isWrite(route)) {
			const line = {
				event: "command",
				kind,
				wsid: route.wsid,
				partition,
				fencingToken: reply.headers["vvm-fencing-token"],
				plogOffset:
					reply.headers["vvm-plog-offset"] === undefined
						? undefined
						: Number(reply.headers["vvm-plog-offset"]),
				status: reply.status,
				outcome,
				ms: Math.round(seconds * 10_000) / 10,
			};
			if (reply.status === 409 || reply.status >= 500) deps.logger.warn(line, `command ${outcome}`);
			else deps.logger.debug(line, `command ${outcome}`);
		}
	};
}
