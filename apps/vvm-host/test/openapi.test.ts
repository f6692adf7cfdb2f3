import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { parseApiRoute } from "../src/http/api-routes.ts";
import type { ApiV2Deps } from "../src/http/api-v2.ts";
import { apiV2Route } from "../src/http/api-v2.ts";
import { openApiDocument, openApiRoute, operationsOf } from "../src/http/openapi.ts";
import type { OperatorState } from "../src/http/operator-routes.ts";
import { operatorRoutes } from "../src/http/operator-routes.ts";
import { partitionRoutes } from "../src/http/partition-routes.ts";
import { createRouteTable } from "../src/http/router.ts";

/** The host's routes as `host.ts` lists them (handlers are not called here). */
const routes = [
	apiV2Route({} as ApiV2Deps),
	...partitionRoutes({
		mode: "leases",
		placement: () => undefined,
		partitions: 4,
		self: () => "127.0.0.1:1",
		logger: pino({ level: "silent" }),
	}),
	...operatorRoutes({} as OperatorState),
	openApiRoute("test"),
];
const doc = openApiDocument("test");
const ops = operationsOf(doc);
const isApi = (path: string) => path.startsWith("/api/");

/** A concrete path of a template: example values for its parameters. */
const concrete = (template: string) =>
	template
		.replace("{owner}", "vvm")
		.replace("{app}", "demo")
		.replace("{wsid}", "1001")
		.replace("{table}", "app1pkg.Customer")
		.replace("{command}", "sys.CUD")
		.replace("{id}", "322685000131072");

describe("the OpenAPI document matches the route table", () => {
	it("is OpenAPI 3.1 with a bearer scheme, and every route outside the API is documented", () => {
		expect(doc.openapi).toBe("3.1.0");
		expect(doc.components.securitySchemes.bearer).toEqual({ type: "http", scheme: "bearer" });
		for (const route of routes.filter((r) => !r.prefix)) {
			expect(
				ops.some((o) => o.path === route.path && o.method === route.method.toLowerCase()),
				`${route.method} ${route.path} is routed but not documented`,
			).toBe(true);
		}
	});

	it("every documented operation is routed: API operations parse to their kind, the others have a route", () => {
		const kinds = new Set<string>();
		for (const { path, method } of ops) {
			if (isApi(path)) {
				const parsed = parseApiRoute(method.toUpperCase(), concrete(path));
				expect(parsed.kind, `${method} ${path}`).not.toBe("error");
				kinds.add(parsed.kind);
			} else {
				expect(
					routes.some((r) => r.path === path && r.method === method.toUpperCase()),
					`${method} ${path} is documented but not routed`,
				).toBe(true);
			}
		}
		// Every kind the API parses is documented.
		expect([...kinds].sort()).toEqual(["command", "create", "read", "update", "wlog"]);
	});

	it("a method an API path does not document is 405 there", () => {
		for (const path of new Set(ops.filter((o) => isApi(o.path)).map((o) => o.path))) {
			const documented = ops.filter((o) => o.path === path).map((o) => o.method.toUpperCase());
			for (const method of ["GET", "POST", "PATCH", "PUT", "DELETE"]) {
				if (documented.includes(method)) continue;
				const parsed = parseApiRoute(method, concrete(path));
				expect(parsed.kind === "error" && parsed.status, `${method} ${path}`).toBe(405);
			}
		}
	});

	it("is served at GET /openapi.json", async () => {
		const table = createRouteTable([openApiRoute("test")]);
		const reply = await table({
			method: "GET",
			url: new URL("http://x/openapi.json"),
			req: {} as never,
		});
		expect(reply.status).toBe(200);
		expect(reply.body).toEqual(doc);
	});
});
