import { CpError } from "@vvm/cp";
import { describe, expect, it } from "vitest";
import { API_PREFIX, parseApiRoute } from "../src/http/api-routes.ts";
import { cpErrorReply, unavailable } from "../src/http/errors.ts";

const WS = "/api/v2/apps/vvm/demo/workspaces/1001";
const ID = 322685000131072;

describe("parseApiRoute", () => {
	it("parses the five routes", () => {
		expect(parseApiRoute("POST", `${WS}/docs/app1pkg.Customer`)).toEqual({
			kind: "create",
			wsid: 1001,
			table: "app1pkg.Customer",
		});
		expect(parseApiRoute("PATCH", `${WS}/docs/app1pkg.Customer/${ID}`)).toEqual({
			kind: "update",
			wsid: 1001,
			table: "app1pkg.Customer",
			id: ID,
		});
		expect(parseApiRoute("GET", `${WS}/docs/app1pkg.Customer/${ID}`)).toEqual({
			kind: "read",
			wsid: 1001,
			table: "app1pkg.Customer",
			id: ID,
		});
		expect(parseApiRoute("POST", `${WS}/commands/sys.CUD`)).toEqual({
			kind: "command",
			wsid: 1001,
			command: "sys.CUD",
		});
		expect(parseApiRoute("GET", `${WS}/wlog`, new URLSearchParams("offset=5&count=20"))).toEqual({
			kind: "wlog",
			wsid: 1001,
			offset: 5,
			count: 20,
		});
		expect(parseApiRoute("GET", `${WS}/wlog`)).toEqual({
			kind: "wlog",
			wsid: 1001,
			offset: 1,
			count: 100,
		});
	});

	it.each([
		["POST", "/api/v2/apps/vvm/demo/workspaces/0/docs/app1pkg.Customer", "", "wsid"],
		["POST", "/api/v2/apps/vvm/demo/workspaces/abc/docs/app1pkg.Customer", "", "wsid"],
		[
			"POST",
			"/api/v2/apps/vvm/demo/workspaces/99999999999999999/docs/app1pkg.Customer",
			"",
			"wsid",
		],
		["POST", `${WS}/docs/Customer`, "", "table"],
		["POST", `${WS}/docs/app1pkg.Cus-tomer`, "", "table"],
		["GET", `${WS}/docs/app1pkg.Customer/-1`, "", "id"],
		["PATCH", `${WS}/docs/app1pkg.Customer/1.5`, "", "id"],
		["POST", `${WS}/commands/CUD`, "", "command"],
		["GET", `${WS}/wlog`, "offset=0", "offset"],
		["GET", `${WS}/wlog`, "count=x", "count"],
		["GET", `${WS}/wlog`, "count=10001", "count"],
		["GET", `${WS}/docs/app1pkg.Customer/%E0%A4%A`, "", "path"],
	])("%s %s?%s is a 400 naming %s", (method, path, query, field) => {
		const r = parseApiRoute(method, path, new URLSearchParams(query));
		expect(r).toMatchObject({ kind: "error", status: 400, field });
		expect((r as { message: string }).message).toMatch(new RegExp(`^${field}: `));
	});

	it("answers 404 for another app or an unknown path and 405 with Allow for a wrong method", () => {
		expect(parseApiRoute("POST", "/api/v2/apps/acme/shop/workspaces/1/docs/a.B")).toMatchObject({
			status: 404,
			field: "app",
		});
		expect(parseApiRoute("GET", `${WS}/queries/a.B`)).toMatchObject({ status: 404 });
		expect(parseApiRoute("GET", `${WS}/docs/a.B/${ID}/extra`)).toMatchObject({ status: 404 });
		expect(parseApiRoute("DELETE", `${WS}/docs/a.B/${ID}`)).toMatchObject({
			status: 405,
			allow: ["GET", "PATCH"],
		});
		expect(parseApiRoute("GET", `${WS}/docs/a.B`)).toMatchObject({ status: 405, allow: ["POST"] });
		expect(parseApiRoute("POST", `${WS}/wlog`)).toMatchObject({ status: 405, allow: ["GET"] });
		expect(parseApiRoute("GET", `${API_PREFIX}x`)).toMatchObject({ status: 404 });
	});
});

describe("cpErrorReply", () => {
	it("answers 503 + Retry-After only when nothing was written; a durable or unknown event is a 500 saying so, whatever the code", () => {
		const codes = [
			"CP_BUSY",
			"CP_CLOSED",
			"CP_STORAGE",
			"CP_CONFLICT",
			"CP_INTERNAL",
			"CP_BAD_REQUEST",
		] as const;
		for (const code of codes)
			for (const committed of ["no", "yes", "unknown"] as const) {
				const reply = cpErrorReply(new CpError(code, "x", { committed }));
				expect(reply.body.committed, `${code}/${committed}`).toBe(committed);
				if (reply.status === 503)
					expect([committed, reply.headers["retry-after"] !== undefined]).toEqual(["no", true]);
				if (committed !== "no") {
					expect(reply.status, `${code}/${committed}`).toBe(500);
					expect(reply.headers["retry-after"]).toBeUndefined();
					expect(reply.body.hint).toMatch(/Idempotency-Key/);
				}
			}
		expect(cpErrorReply(new CpError("CP_CLOSED", "x", { committed: "yes" }))).toMatchObject({
			status: 500,
			outcome: "committed_yes",
		});
		expect(cpErrorReply(new Error("boom")).body.committed).toBe("unknown");
	});

	it("maps each code to its status, with the field, key, committed and Retry-After", () => {
		const bad = cpErrorReply(
			new CpError("CP_BAD_REQUEST", "fields.name: is required", { field: "fields.name" }),
		);
		expect(bad).toMatchObject({
			status: 400,
			outcome: "bad_request",
			body: {
				status: 400,
				code: "CP_BAD_REQUEST",
				field: "fields.name",
				message: "fields.name: is required",
			},
		});
		expect(cpErrorReply(new CpError("CP_NOT_FOUND", "id: no record", { field: "id" })).status).toBe(
			404,
		);
		expect(cpErrorReply(new CpError("CP_NOT_ALLOWED", "odoc")).status).toBe(405);
		const key = {
			kind: "plog" as const,
			description: "PLog partition 1 offset 7",
			pKey: "00",
			cCols: "07",
		};
		expect(cpErrorReply(new CpError("CP_CONFLICT", "taken", { key }))).toMatchObject({
			status: 409,
			outcome: "conflict",
			body: { key },
		});
		expect(
			cpErrorReply(new CpError("CP_BUSY", "actualizing", { retryAfterMs: 2500 })),
		).toMatchObject({
			status: 503,
			headers: { "retry-after": "3" },
			outcome: "busy",
		});
		expect(cpErrorReply(new CpError("CP_CLOSED", "closed"))).toMatchObject({
			status: 503,
			outcome: "closed",
		});
		expect(cpErrorReply(new CpError("CP_STORAGE", "down", { committed: "no" }))).toMatchObject({
			status: 503,
			headers: { "retry-after": "1" },
		});
		expect(cpErrorReply(new CpError("CP_STORAGE", "lost", { committed: "unknown" }))).toMatchObject(
			{
				status: 500,
				headers: {},
				body: { committed: "unknown" },
			},
		);
		expect(cpErrorReply(new CpError("CP_INTERNAL", "threw")).status).toBe(500);
		expect(cpErrorReply(new Error("boom"))).toMatchObject({
			status: 500,
			body: { code: "HOST_INTERNAL" },
		});
		expect(
			cpErrorReply(
				new CpError("CP_IDEMPOTENCY_KEY_REUSED", "other request", { field: "idempotencyKey" }),
			),
		).toMatchObject({ status: 422, body: { committed: "no", field: "idempotencyKey" } });
		expect(
			cpErrorReply(new CpError("CP_IDEMPOTENCY_KEY_IN_FLIGHT", "running", { retryAfterMs: 1000 })),
		).toMatchObject({ status: 409, headers: { "retry-after": "1" }, body: { committed: "no" } });
		expect(unavailable("no_holder", "nobody", 1200)).toMatchObject({
			status: 503,
			headers: { "retry-after": "2" },
			outcome: "unavailable_no_holder",
			body: { reason: "no_holder" },
		});
	});
});
