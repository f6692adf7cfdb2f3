// The host's HTTP API as an OpenAPI 3.1 document, served at GET /openapi.json. A test checks it
// against the route table both ways (every route documented, every documented operation routed),
// and the fuzz test generates its requests from it.
import { MAX_READ_LIMIT } from "@vvm/cp";
import type { Route } from "./router.ts";

const json = (schema: object) => ({ "application/json": { schema } });
const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const answer = (description: string, schema: object = { type: "object" }) => ({
	description,
	content: json(schema),
});
const error = (description: string) => answer(description, ref("Error"));

/** The errors every API v2 operation may answer (the README's table). */
const API_ERRORS = {
	"400": error("a bad request target, URL part, body, field or Idempotency-Key (`field` names it)"),
	"401": error("no valid bearer token (authentication configured)"),
	"403": error("the token does not cover the workspace"),
	"404": error("unknown route, app, table, command or record"),
	"405": error("a method the path does not take (`Allow`)"),
	"413": error("a body over 256 KiB"),
	"421": error("the partition is served by another host (`Location`)"),
	"500": error("the command is (`committed: yes`) or may be (`unknown`) written; or internal"),
	"503": error("retry after `Retry-After`: nothing was written (`committed: no`)"),
} as const;

const WRITE_ERRORS = {
	...API_ERRORS,
	"409": error("a sequences conflict, or the Idempotency-Key's first request still runs"),
	"422": error("the Idempotency-Key was used for another request"),
} as const;

const wsPath = "/api/v2/apps/{owner}/{app}/workspaces/{wsid}";
const pathParams = [
	{ name: "owner", in: "path", required: true, schema: { type: "string", const: "vvm" } },
	{ name: "app", in: "path", required: true, schema: { type: "string", const: "demo" } },
	{
		name: "wsid",
		in: "path",
		required: true,
		schema: { type: "integer", minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
	},
];
const qname = { type: "string", pattern: "^[A-Za-z_][A-Za-z0-9_]*\\.[A-Za-z_][A-Za-z0-9_]*$" };
const tableParam = { name: "table", in: "path", required: true, schema: qname };
const idParam = {
	name: "id",
	in: "path",
	required: true,
	schema: { type: "integer", minimum: 65_536, maximum: Number.MAX_SAFE_INTEGER }, // above raw IDs
};
const idempotencyKey = {
	name: "Idempotency-Key",
	in: "header",
	required: false,
	description:
		"a Structured Field string (or a bare token), 1..255 printable ASCII characters; a retry with it answers the first result and writes nothing",
	schema: { type: "string", minLength: 1, maxLength: 257 },
};
const fieldsBody = {
	required: true,
	content: json({ type: "object", additionalProperties: true }),
};
const operator = [{ bearer: [] }];

/** Where a documented operation lives: its path template and method (lower case). */
export interface OperationKey {
	readonly path: string;
	readonly method: string;
}

/**
 * The OpenAPI 3.1 document of the host's routes. `security` is declared always (a host without
 * `--auth-*` accepts requests without a token).
 *
 * @example
 * ```ts
 * const doc = openApiDocument("0.1.0");
 * ```
 */
export function openApiDocument(version: string) {
	return {
		openapi: "3.1.0",
		info: {
			title: "vvm-host",
			version,
			description:
				"A VVM host: the command processor's API v2 (voedger-shaped), health, leadership, leases and metrics. Every error body carries `committed` (no | yes | unknown).",
		},
		components: {
			securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
			schemas: {
				Error: {
					type: "object",
					required: ["status", "code", "message"],
					properties: {
						status: { type: "integer" },
						code: { type: "string" },
						message: { type: "string" },
						field: { type: "string" },
						committed: { enum: ["no", "yes", "unknown"] },
						hint: { type: "string" },
					},
				},
				CommandResult: {
					type: "object",
					required: ["CurrentWLogOffset", "NewIDs"],
					properties: {
						CurrentWLogOffset: { type: "integer" },
						NewIDs: { type: "object", additionalProperties: { type: "integer" } },
						Result: { type: "object" },
					},
				},
				WLogPage: {
					type: "object",
					required: ["results"],
					properties: {
						results: {
							type: "array",
							items: {
								type: "object",
								required: ["offset"],
								properties: { offset: { type: "integer" }, event: { type: "object" } },
							},
						},
						next: { type: "integer", description: "the offset to continue from (4 MiB bound)" },
					},
				},
			},
		},
		security: [{ bearer: [] }],
		paths: {
			"/healthz": {
				get: {
					summary: "the process runs (no token needed)",
					security: [],
					responses: { "200": answer("alive"), "503": answer("the VVM has a problem") },
				},
			},
			"/readyz": {
				get: {
					summary: "leader with a valid lease, or serving (no token needed)",
					security: [],
					responses: { "200": answer("ready"), "503": answer("not ready") },
				},
			},
			"/openapi.json": {
				get: {
					summary: "this document (no token needed)",
					security: [],
					responses: { "200": answer("the OpenAPI document") },
				},
			},
			"/leadership": {
				get: {
					summary: "slot leadership",
					security: operator,
					responses: { "200": answer("view") },
				},
			},
			"/": {
				get: {
					summary: "the status page",
					security: operator,
					responses: {
						"200": {
							description: "HTML",
							content: { "text/html": { schema: { type: "string" } } },
						},
					},
				},
			},
			"/status": {
				get: {
					summary: "what the page shows",
					security: operator,
					responses: { "200": answer("status") },
				},
			},
			"/metrics": {
				get: {
					summary: "Prometheus text",
					security: operator,
					responses: {
						"200": {
							description: "metrics",
							content: { "text/plain": { schema: { type: "string" } } },
						},
					},
				},
			},
			"/leases": {
				get: {
					summary: "the placement's view (leases or static)",
					security: operator,
					responses: { "200": answer("view"), "503": error("still joining") },
				},
			},
			"/work": {
				post: {
					summary: "demo work under the lease (`?partition=p`: under the partition's)",
					security: operator,
					parameters: [
						{
							name: "partition",
							in: "query",
							required: false,
							schema: { type: "integer", minimum: 0 },
						},
					],
					responses: {
						"200": answer("done"),
						"400": error("a bad partition"),
						"421": error("served elsewhere"),
						"503": answer("not under a valid lease"),
					},
				},
			},
			[`${wsPath}/docs/{table}`]: {
				post: {
					summary: "create a record",
					parameters: [...pathParams, tableParam, idempotencyKey],
					requestBody: fieldsBody,
					responses: { "201": answer("created", ref("CommandResult")), ...WRITE_ERRORS },
				},
			},
			[`${wsPath}/docs/{table}/{id}`]: {
				get: {
					summary: "read a record",
					parameters: [...pathParams, tableParam, idParam],
					responses: { "200": answer("the record"), ...API_ERRORS },
				},
				patch: {
					summary: "update a record",
					parameters: [...pathParams, tableParam, idParam, idempotencyKey],
					requestBody: fieldsBody,
					responses: { "200": answer("updated", ref("CommandResult")), ...WRITE_ERRORS },
				},
			},
			[`${wsPath}/commands/{command}`]: {
				post: {
					summary: "run a command (sys.CUD or the application's)",
					parameters: [
						...pathParams,
						{ name: "command", in: "path", required: true, schema: qname },
						idempotencyKey,
					],
					requestBody: {
						required: true,
						content: json({
							type: "object",
							properties: {
								args: { type: "object" },
								cuds: { type: "array", items: { type: "object" } },
							},
						}),
					},
					responses: { "200": answer("done", ref("CommandResult")), ...WRITE_ERRORS },
				},
			},
			[`${wsPath}/wlog`]: {
				get: {
					summary: "the workspace's WLog from offset, at most count entries and 4 MiB",
					parameters: [
						...pathParams,
						{
							name: "offset",
							in: "query",
							required: false,
							schema: { type: "integer", minimum: 1 },
						},
						{
							name: "count",
							in: "query",
							required: false,
							schema: { type: "integer", minimum: 1, maximum: MAX_READ_LIMIT },
						},
					],
					responses: { "200": answer("entries", ref("WLogPage")), ...API_ERRORS },
				},
			},
		},
	};
}

/** Every operation of a document: `{ path, method }`, methods in lower case. */
export function operationsOf(doc: {
	readonly paths: Readonly<Record<string, object>>;
}): OperationKey[] {
	return Object.entries(doc.paths).flatMap(([path, item]) =>
		Object.keys(item).map((method) => ({ path, method })),
	);
}

/**
 * The route that serves the document (`GET /openapi.json`).
 *
 * @example
 * ```ts
 * const routes = [openApiRoute("0.1.0")];
 * ```
 */
export function openApiRoute(version: string): Route {
	const body = openApiDocument(version);
	return { method: "GET", path: "/openapi.json", handle: () => ({ status: 200, body }) };
}
