import { Agent, request } from "node:http";
import { connect } from "node:net";
import type { VVM, VVMLeadership } from "@vvm/orch";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import type { OperatorState } from "../src/http/operator-routes.ts";
import { operatorRoutes } from "../src/http/operator-routes.ts";
import type { HttpServer } from "../src/http/router.ts";
import { createRouteTable, requestUrl, startHttpServer } from "../src/http/router.ts";
import { createLeaseWorker } from "../src/lease-worker.ts";
import { createHostMetrics } from "../src/metrics.ts";

const NOW = 1_700_000_000_000;
/** The fake VVM's monotonic clock reads MONO while the wall clock reads NOW. */
const MONO = 5_000_000;

/** A VVM stand-in whose leadership and lease the test sets directly. */
function fakeVVM(view: { held: VVMLeadership | undefined; leaseValid: boolean }): VVM {
	return {
		launch: () => Promise.reject(new Error("not used")),
		shutdown: () => Promise.resolve(undefined),
		leadership: () => view.held,
		leaseValid: () => view.leaseValid,
		problem: () => undefined,
		[Symbol.asyncDispose]: () => Promise.resolve(),
	};
}

const held: VVMLeadership = {
	slot: 2,
	address: "10.0.0.5:8080#3f9a1c2e7b4d",
	durationSeconds: 20,
	acquiredAt: MONO - 30_000,
	renewals: 5,
	lastRenewedAt: MONO - 17_000,
	leaseDeadline: MONO - 1_000, // passed: the renewal in flight hangs
	leaseTimeLeftMs: -1_000,
	fencingToken: 7,
};

const servers: HttpServer[] = [];
afterEach(async () => {
	for (const s of servers.splice(0)) await s.close();
});

async function serve(
	vvm: VVM,
	holderOf: OperatorState["holderOf"] = async () => undefined,
	numVVM = 3,
): Promise<string> {
	const metrics = createHostMetrics({
		leadership: () => vvm.leadership(),
		leaseValid: () => vvm.leaseValid(),
		monotonic: () => MONO,
	});
	const state: OperatorState = {
		vvm,
		phase: "leader",
		address: () => "10.0.0.5:8080",
		numVVM,
		now: () => NOW,
		monotonic: () => MONO,
		holderOf,
		expiresInOf: async () => undefined,
		registry: metrics.registry,
		worker: createLeaseWorker({
			intervalMs: 0,
			logger: pino({ level: "silent" }),
			leadership: () => vvm.leadership(),
		}),
	};
	const api = await startHttpServer(createRouteTable(operatorRoutes(state)), "127.0.0.1", 0);
	servers.push(api);
	return `http://127.0.0.1:${api.port}`;
}

const get = async (url: string): Promise<{ status: number; body: Record<string, unknown> }> => {
	const res = await fetch(url);
	return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

describe("/leadership and /metrics report leader only with a valid lease", () => {
	it("held past the lease deadline: leader false, held true; vvm_leader 0, vvm_leadership_held 1", async () => {
		const base = await serve(fakeVVM({ held, leaseValid: false }));
		const { status, body } = await get(`${base}/leadership`);
		expect(status).toBe(200);
		expect(body).toMatchObject({
			leader: false,
			held: true,
			leaseValid: false,
			slot: 2,
			address: "10.0.0.5:8080",
			holder: "10.0.0.5:8080#3f9a1c2e7b4d",
			timeLeftMs: 0,
			// monotonic readings shown as wall times for the operator
			acquiredAt: NOW - 30_000,
			lastRenewedAt: NOW - 17_000,
			leaseDeadline: NOW - 1_000,
		});
		const text = await (await fetch(`${base}/metrics`)).text();
		expect(text).toMatch(/^vvm_leader 0$/m);
		expect(text).toMatch(/^vvm_leader_slot 0$/m);
		expect(text).toMatch(/^vvm_leadership_held 1$/m);
	});

	it("held with a valid lease: leader true; vvm_leader 1 with its slot", async () => {
		const base = await serve(
			fakeVVM({
				held: { ...held, leaseDeadline: MONO + 5_000, leaseTimeLeftMs: 5_000 },
				leaseValid: true,
			}),
		);
		const { body } = await get(`${base}/leadership`);
		expect(body).toMatchObject({ leader: true, held: true, leaseValid: true, timeLeftMs: 5_000 });
		const text = await (await fetch(`${base}/metrics`)).text();
		expect(text).toMatch(/^vvm_leader 1$/m);
		expect(text).toMatch(/^vvm_leader_slot 2$/m);
		expect(text).toMatch(/^vvm_leadership_held 1$/m);
	});

	it("not held: a storage error reading a slot is holderError (200), not holder null (free)", async () => {
		const base = await serve(fakeVVM({ held: undefined, leaseValid: false }), async (slot) => {
			if (slot === 1) throw new Error("connect ECONNREFUSED 127.0.0.1:8000");
			return slot === 2 ? "10.0.0.6:8080#0123456789ab" : undefined;
		});
		const { status, body } = await get(`${base}/leadership`);
		expect(status).toBe(200);
		expect(body).toMatchObject({ leader: false, held: false, address: "10.0.0.5:8080" });
		expect(body.slots).toEqual([
			{ slot: 1, holderError: "connect ECONNREFUSED 127.0.0.1:8000" },
			{ slot: 2, holder: "10.0.0.6:8080#0123456789ab" },
			{ slot: 3, holder: null },
		]);
		const text = await (await fetch(`${base}/metrics`)).text();
		expect(text).toMatch(/^vvm_leader 0$/m);
		expect(text).toMatch(/^vvm_leadership_held 0$/m);
	});
});

describe("requestUrl: what new URL() makes of a request target, cheaper for a plain path", () => {
	const targets = [
		"/api/v2/apps/vvm/demo/workspaces/1001/docs/app1pkg.Customer",
		"/api/v2/apps/vvm/demo/workspaces/1001/docs/app1pkg.Customer/322685000131072",
		"/api/v2/apps/vvm/demo/workspaces/1001/wlog?offset=3&count=2",
		"/api/v2/apps/vvm/demo/workspaces/1001/../../x",
		"/api/v2/./apps",
		"/api/v2/%2e%2E/metrics",
		"/api/v2/apps/vvm/demo/workspaces/1%30/docs/a%2Eb",
		"/a b/é/<x>",
		"/a\\b",
		"//double//slash/",
		"/x#frag",
		"/readyz",
		"/",
		"*",
		"http://other.example/metrics?x=1",
	];
	it.each(targets)("%s", (target) => {
		const fast = requestUrl(target);
		const full = new URL(target, "http://localhost");
		expect(fast.pathname).toBe(full.pathname);
		expect(fast.search).toBe(full.search);
		expect([...fast.searchParams]).toEqual([...full.searchParams]);
	});
});

describe("the HTTP layer's error boundary", () => {
	/** Raw bytes in, the status line out (the socket closes after one answer). */
	const statusLine = (port: number, request: string): Promise<string> =>
		new Promise((resolve, reject) => {
			let out = "";
			const socket = connect(port, "127.0.0.1", () => socket.write(request));
			socket.on("data", (d: Buffer) => {
				out += d.toString("latin1");
			});
			socket.on("close", () => resolve(out.split("\r\n")[0] ?? ""));
			socket.on("error", reject);
		});

	it("answers a target the URL parser refuses with 400, and a reply that cannot be encoded with 500; it serves on", async () => {
		const table = createRouteTable([
			{ method: "GET", path: "/ok", handle: () => ({ status: 200, body: { ok: true } }) },
			// JSON.stringify throws on a BigInt, as it throws RangeError on a string too long.
			{ method: "GET", path: "/unencodable", handle: () => ({ status: 200, body: { n: 1n } }) },
		]);
		const http = await startHttpServer(table, "127.0.0.1", 0);
		servers.push(http);
		for (const target of ["//", "///", "/\\", "//%zz", "//a:99999/x"])
			expect(
				await statusLine(
					http.port,
					`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`,
				),
				target,
			).toBe("HTTP/1.1 400 Bad Request");
		const broken = await fetch(`http://127.0.0.1:${http.port}/unencodable`);
		expect(broken.status).toBe(500);
		expect(await broken.json()).toMatchObject({ code: "HOST_INTERNAL", committed: "unknown" });
		expect((await fetch(`http://127.0.0.1:${http.port}/ok`)).status).toBe(200);
	});

	it("keeps a Node client's keep-alive connection across requests (its keep-alive hint outlasts http.Agent's 1 s margin)", async () => {
		const table = createRouteTable([
			{ method: "GET", path: "/ok", handle: () => ({ status: 200, body: { ok: true } }) },
		]);
		const http = await startHttpServer(table, "127.0.0.1", 0);
		servers.push(http);
		const agent = new Agent({ keepAlive: true, maxSockets: 1 });
		const opened: unknown[] = [];
		http.server.on("connection", (socket) => opened.push(socket));
		const get = () =>
			new Promise<{ status: number; keepAlive: string }>((resolve, reject) => {
				const req = request({ host: "127.0.0.1", port: http.port, path: "/ok", agent }, (res) => {
					res.resume();
					res.on("end", () =>
						resolve({ status: res.statusCode ?? 0, keepAlive: String(res.headers["keep-alive"]) }),
					);
				});
				req.on("error", reject);
				req.end();
			});
		const first = await get();
		expect(first).toEqual({ status: 200, keepAlive: "timeout=5" });
		// The agent frees the socket after the response's end: the next request is issued once it
		// is back in the pool (a free socket, not a new one).
		for (let i = 0; i < 5; i++) {
			await new Promise((resolve) => setImmediate(resolve));
			expect((await get()).status).toBe(200);
		}
		expect(opened).toHaveLength(1);
		agent.destroy();
	});

	it("closes a connection whose headers do not arrive in time (408), and refuses connections over the bound", async () => {
		const table = createRouteTable([
			{ method: "GET", path: "/ok", handle: () => ({ status: 200, body: { ok: true } }) },
		]);
		const http = await startHttpServer(table, "127.0.0.1", 0, {
			checkIntervalMs: 50,
			headersTimeoutMs: 200,
			requestTimeoutMs: 400,
			maxConnections: 2,
		});
		servers.push(http);
		// A slow client: half a request line, then nothing.
		const slow = await new Promise<{ answer: string; ms: number }>((resolve, reject) => {
			const started = performance.now();
			let answer = "";
			const socket = connect(http.port, "127.0.0.1", () => socket.write("GET /ok HTTP/1.1\r\nHo"));
			socket.on("data", (d: Buffer) => {
				answer += d.toString("latin1");
			});
			socket.on("close", () => resolve({ answer, ms: performance.now() - started }));
			socket.on("error", reject);
		});
		expect(slow.answer.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
		// Two idle connections hold the bound; a third is closed without an answer.
		const idle = [0, 1].map(
			() =>
				new Promise<ReturnType<typeof connect>>((resolve) => {
					const s = connect(http.port, "127.0.0.1", () => resolve(s));
				}),
		);
		const held = await Promise.all(idle);
		const third = await statusLine(
			http.port,
			"GET /ok HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
		).catch((e: NodeJS.ErrnoException) => e.code);
		expect(["", "ECONNRESET"]).toContain(third);
		for (const s of held) s.destroy();
	});
});
