// GET /leases and POST /work?partition=<p> over a stand-in placement, and a real in-process host
// with --placement leases on mem storage.

import type { IncomingMessage } from "node:http";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { EXIT, startHost } from "../src/host.ts";
import { partitionRoutes } from "../src/http/partition-routes.ts";
import type { Route } from "../src/http/router.ts";
import { createRouteTable } from "../src/http/router.ts";
import { fakePlacement } from "./support/api-v2-server.ts";
import { hostConfig } from "./support/config.ts";
import { startLeasesHost } from "./support/leases-host.ts";

function capture(): { lines: Array<Record<string, unknown>>; logger: pino.Logger } {
	const lines: Array<Record<string, unknown>> = [];
	const logger = pino(
		{ level: "debug" },
		{ write: (l: string) => lines.push(JSON.parse(l) as Record<string, unknown>) },
	);
	return { lines, logger };
}

/** The host's next route for `POST /work`: the VVM's demo worker. */
const WORKER: Route = {
	method: "POST",
	path: "/work",
	handle: () => ({ status: 200, body: "worker" }),
};

/** One request through a route table of `routes` and the worker (no request body is read). */
const call = (routes: Route[], method: string, path: string) =>
	createRouteTable([...routes, WORKER])({
		method,
		url: new URL(path, "http://h"),
		req: {} as IncomingMessage,
	});

describe("partition routes", () => {
	it("answers 200 and logs `served` while serving, 421 with the holder, 503 when nobody is known, 400 for a bad partition", async () => {
		const { lines, logger } = capture();
		const placement = fakePlacement([1], new Map([[2, { address: "10.0.0.2:8080", until: 123 }]]));
		const routes = partitionRoutes({
			mode: "leases",
			placement: () => placement,
			partitions: 4,
			self: () => "10.0.0.1:8080",
			logger,
		});
		const ok = await call(routes, "POST", "/work?partition=1");
		expect(ok).toMatchObject({ status: 200, body: { done: true, partition: 1 } });
		expect(lines.filter((l) => l.event === "served")).toMatchObject([{ partition: 1 }]);
		expect(typeof lines[0]?.mono).toBe("number");
		// The same 421 and 503 as the command routes (API v2 error body).
		const location = "http://10.0.0.2:8080/work?partition=2";
		expect(await call(routes, "POST", "/work?partition=2")).toEqual({
			status: 421,
			headers: { location, "vvm-holder": "10.0.0.2:8080" },
			body: {
				status: 421,
				code: "HOST_MISDIRECTED",
				message: "partition 2 is served by 10.0.0.2:8080",
				holder: "10.0.0.2:8080",
				partition: 2,
				location,
				until: 123,
				committed: "no",
			},
			outcome: "misdirected",
		});
		expect(await call(routes, "POST", "/work?partition=3")).toMatchObject({
			status: 503,
			headers: { "retry-after": "1" },
			body: {
				status: 503,
				code: "HOST_UNAVAILABLE",
				reason: "no_holder",
				partition: 3,
				committed: "no",
			},
		});
		for (const bad of ["4", "-1", "x", "1.5", ""]) {
			expect(await call(routes, "POST", `/work?partition=${bad}`)).toMatchObject({
				status: 400,
				body: { status: 400, code: "HOST_BAD_REQUEST", field: "partition", committed: "no" },
			});
		}
		expect(lines.filter((l) => l.event === "served")).toHaveLength(1);
		// Not theirs: the VVM's demo worker answers POST /work without a partition.
		expect(await call(routes, "POST", "/work")).toEqual({ status: 200, body: "worker" });
		expect(await call(routes, "GET", "/leases")).toEqual({
			status: 200,
			body: { mode: "static", served: [1] },
		});
		expect(await call(routes, "POST", "/leases")).toMatchObject({
			status: 405,
			headers: { allow: "GET" },
			body: { code: "HOST_BAD_REQUEST" },
		});
	});

	it("without a placement: 404 naming --placement in static mode, 503 while a leases host joins", async () => {
		const { logger } = capture();
		const routes = (mode: "static" | "leases") =>
			partitionRoutes({
				mode,
				placement: () => undefined,
				partitions: 4,
				self: () => "10.0.0.1:8080",
				logger,
			});
		const stat = await call(routes("static"), "GET", "/leases");
		expect(stat?.status).toBe(404);
		expect(JSON.stringify(stat?.body)).toContain("--placement leases");
		expect((await call(routes("static"), "POST", "/work?partition=0")).status).toBe(404);
		expect((await call(routes("leases"), "GET", "/leases")).status).toBe(503);
	});
});

describe("a host with --placement leases (mem storage, in-process)", () => {
	it("serves every partition alone, shows the lease table, and ends every lease on stop", async () => {
		const { host, lines } = startLeasesHost(3);
		try {
			const deployed = () => lines.filter((l) => l.event === "partition-deployed").length;
			for (let i = 0; i < 300 && deployed() < 3; i++) await new Promise((r) => setTimeout(r, 10));
			const port = lines.find((l) => l.event === "listening")?.port as number;
			const base = `http://127.0.0.1:${port}`;
			const work = await fetch(`${base}/work?partition=2`, { method: "POST" });
			expect(work.status).toBe(200);
			expect(await work.json()).toMatchObject({ partition: 2, address: `127.0.0.1:${port}` });
			expect((await fetch(`${base}/readyz`)).status).toBe(200);
			const leases = (await (await fetch(`${base}/leases`)).json()) as {
				mode: string;
				served: number[];
				table: { leases: unknown[] };
			};
			expect(leases).toMatchObject({ mode: "leases", served: [0, 1, 2] });
			expect(leases.table.leases).toHaveLength(3);
			const status = (await (await fetch(`${base}/status`)).json()) as {
				phase: string;
				placement: { mode: string; served: number[] };
			};
			expect(status.phase).toBe("serving");
			// The status page's lease view: every partition served here.
			expect(status.placement).toMatchObject({ mode: "leases", served: [0, 1, 2] });
			// No VVM slot in leases mode.
			expect(lines.some((l) => l.event === "acquired")).toBe(false);
		} finally {
			expect(await host.stop()).toBe(EXIT.OK);
		}
		const undeployed = lines.filter((l) => l.event === "partition-undeployed");
		expect(undeployed.map((l) => [l.partition, l.reason])).toEqual([
			[0, "closed"],
			[1, "closed"],
			[2, "closed"],
		]);
	});

	it("GET /leases of a static host describes the static placement; /metrics has no lease metrics", async () => {
		const lines: Array<Record<string, unknown>> = [];
		await using host = startHost(hostConfig(["--storage", "mem", "--http-port", "0"]), {
			killer: { schedule: () => {}, disarm: () => {} },
			logDestination: { write: (l: string) => lines.push(JSON.parse(l)) },
		});
		for (let i = 0; i < 300 && !lines.some((l) => l.event === "listening"); i++) {
			await new Promise((r) => setTimeout(r, 10));
		}
		const port = lines.find((l) => l.event === "listening")?.port as number;
		const res = await fetch(`http://127.0.0.1:${port}/leases`);
		expect(res.status).toBe(200);
		expect(((await res.json()) as { mode: string }).mode).toBe("static");
		const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
		expect(metrics).toContain("vvm_leader ");
		expect(metrics).not.toContain("vvm_leases_");
		void host;
	});
});
