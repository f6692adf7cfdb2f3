// Overload shedding at the HTTP layer (src/http/overload.ts): the delay sampler and the shedder
// over injected clocks and delay sources (no sleeps), the router's admission before a request's
// body is read, and the API route's CP_BUSY counted in the rate-limited log.
import type { IncomingMessage } from "node:http";
import { request } from "node:http";
import { Readable } from "node:stream";
import { locateBy } from "@vvm/appparts";
import type { AppPartition } from "@vvm/cp";
import { CpError } from "@vvm/cp";
import { pino } from "pino";
import { afterEach, describe, expect, it } from "vitest";
import { apiV2Route } from "../src/http/api-v2.ts";
import type { DriftTimers, LoopDelaySource, ShedReason } from "../src/http/overload.ts";
import { createLoadShedder, loopShedReply, timerDriftSource } from "../src/http/overload.ts";
import type { HttpServer } from "../src/http/router.ts";
import { createRouteTable, requestUrl, startHttpServer } from "../src/http/router.ts";

/** A clock the test moves and a timer queue it runs by hand. */
function manualTimers(): DriftTimers & {
	at: number;
	/** Moves the clock to `ms` and runs every timer due by then, in order. */
	advanceTo(ms: number): void;
	readonly pending: () => number;
} {
	const queue: { due: number; fn: () => void; cancelled: boolean }[] = [];
	const t = {
		at: 0,
		now: () => t.at,
		schedule: (fn: () => void, ms: number) => {
			const entry = { due: t.at + ms, fn, cancelled: false };
			queue.push(entry);
			return {
				cancel: () => {
					entry.cancelled = true;
				},
			};
		},
		advanceTo(ms: number) {
			for (;;) {
				const live = queue.filter((e) => !e.cancelled).sort((a, b) => a.due - b.due);
				const next = live[0];
				if (next === undefined || next.due > ms) break;
				queue.splice(queue.indexOf(next), 1);
				t.at = Math.max(t.at, next.due);
				next.fn();
			}
			t.at = ms;
		},
		pending: () => queue.filter((e) => !e.cancelled).length,
	};
	return t;
}

/** A delay source whose value the test sets. */
function fixedDelay(initial = 0): LoopDelaySource & { value: number; closed: boolean } {
	const s = {
		value: initial,
		closed: false,
		delayMs: () => s.value,
		close: () => {
			s.closed = true;
		},
	};
	return s;
}

interface Line {
	readonly fields: Record<string, unknown>;
	readonly msg: string;
}
const warnings = (): {
	lines: Line[];
	warn: (fields: Record<string, unknown>, msg: string) => void;
} => {
	const lines: Line[] = [];
	return {
		lines,
		warn: (fields, msg) => lines.push({ fields, msg }),
	};
};

describe("timerDriftSource", () => {
	it("reports the smaller of its last two readings: a loop that stays late, not one late tick", () => {
		const timers = manualTimers();
		const loop = timerDriftSource(10, timers);
		expect(loop.delayMs()).toBe(0);
		timers.advanceTo(10); // the tick runs on time
		expect(loop.delayMs()).toBe(0);
		// One long turn: the tick due at 20 runs at 150 (130 ms late), then the loop keeps up.
		timers.at = 150;
		expect(loop.delayMs()).toBe(0); // overdue 130, but the last tick was on time
		timers.advanceTo(150);
		expect(loop.delayMs()).toBe(0); // one late tick alone: not overload
		// It stays late: the tick due at 160 runs at 260 (100 ms late).
		timers.at = 230; // overdue 70 and the last tick 130 late: 70
		expect(loop.delayMs()).toBe(70);
		timers.at = 260;
		expect(loop.delayMs()).toBe(100);
		timers.advanceTo(260);
		expect(loop.delayMs()).toBe(100); // two late ticks: min(130, 100)
		timers.at = 265; // the next tick is not due yet: the last two ticks count
		expect(loop.delayMs()).toBe(100);
		timers.advanceTo(270); // on time again
		expect(loop.delayMs()).toBe(0);
		loop.close();
		expect(timers.pending()).toBe(0);
	});
});

describe("createLoadShedder", () => {
	it("drain: refuses every new API request with 503 'stopping' and resolves once those admitted left, or at its timeout with how many are left", async () => {
		const timers = manualTimers();
		const shedder = createLoadShedder({
			maxDelayMs: 0,
			maxInFlight: 0,
			logger: warnings(),
			timers,
		});
		expect(shedder.enter()).toBeUndefined();
		expect(shedder.enter()).toBeUndefined();
		let drained: number | undefined;
		void shedder.drain(5_000).then((left) => {
			drained = left;
		});
		expect(shedder.enter()).toMatchObject({
			status: 503,
			headers: { connection: "close", "retry-after": "1" },
			body: { code: "HOST_UNAVAILABLE", reason: "stopping", committed: "no" },
		});
		shedder.leave();
		await Promise.resolve();
		expect(drained).toBeUndefined(); // one still in flight
		shedder.leave();
		await Promise.resolve();
		expect(drained).toBe(0);
		// At the timeout: how many were left.
		const other = createLoadShedder({ maxDelayMs: 0, logger: warnings(), timers });
		other.enter();
		let left: number | undefined;
		void other.drain(5_000).then((n) => {
			left = n;
		});
		timers.advanceTo(timers.at + 4_999);
		await Promise.resolve();
		expect(left).toBeUndefined();
		timers.advanceTo(timers.at + 1);
		await Promise.resolve();
		expect(left).toBe(1);
		expect(await createLoadShedder({ maxDelayMs: 0, logger: warnings() }).drain(10)).toBe(0);
	});

	it("sheds only while the delay is over the bound, with cp's shed answer", () => {
		const loop = fixedDelay(100);
		const log = warnings();
		const shedder = createLoadShedder({
			maxDelayMs: 100,
			source: loop,
			logger: log,
			timers: manualTimers(),
		});
		expect(shedder.check()).toBeUndefined(); // at the bound: served
		loop.value = 101;
		const refused = shedder.check();
		expect(refused).toMatchObject({
			status: 503,
			headers: { "retry-after": "1" },
			body: { status: 503, code: "CP_BUSY", reason: "busy", committed: "no" },
			outcome: "busy_event_loop",
		});
		expect(refused?.body.message).toMatch(/101 ms behind.*nothing was written/);
		loop.value = 2_500;
		expect(shedder.check()?.headers["retry-after"]).toBe("3");
		loop.value = 3;
		expect(shedder.check()).toBeUndefined();
		expect(shedder.stats()).toEqual({
			inFlight: 0,
			eventLoop: 2,
			cpBusy: 0,
			delayMs: 3,
			requestsInFlight: 0,
			inFlightLimit: 0,
		});
		shedder.close();
		expect(loop.closed).toBe(true);
	});

	it("with bound 0 never sheds and never reads a delay source", () => {
		const source: LoopDelaySource = {
			delayMs: () => {
				throw new Error("read although the bound is off");
			},
			close: () => {},
		};
		const shedder = createLoadShedder({ maxDelayMs: 0, source, logger: warnings() });
		expect(shedder.check()).toBeUndefined();
		expect(shedder.stats()).toEqual({
			inFlight: 0,
			eventLoop: 0,
			cpBusy: 0,
			delayMs: 0,
			requestsInFlight: 0,
			inFlightLimit: 0,
		});
		shedder.close();
	});

	it("refuses a negative or fractional bound", () => {
		expect(() => createLoadShedder({ maxDelayMs: -1, logger: warnings() })).toThrow(RangeError);
		expect(() => createLoadShedder({ maxDelayMs: 1.5, logger: warnings() })).toThrow(RangeError);
	});

	it("logs at most one line per interval, with the counts since the last line", () => {
		const timers = manualTimers();
		const loop = fixedDelay(250);
		const log = warnings();
		const shedder = createLoadShedder({
			maxDelayMs: 100,
			source: loop,
			logger: log,
			logIntervalMs: 1_000,
			timers,
		});
		timers.advanceTo(5_000);
		shedder.check(); // the first shed after a quiet spell: written at once
		expect(log.lines).toHaveLength(1);
		expect(log.lines[0]?.fields).toMatchObject({ event: "shed", shed: 1, eventLoop: 1, cpBusy: 0 });
		const sheds: [number, ShedReason][] = [
			[5_100, "event_loop"],
			[5_200, "cp_busy"],
			[5_300, "event_loop"],
			[5_900, "cp_busy"],
			[5_950, "cp_busy"],
		];
		for (const [at, reason] of sheds) {
			timers.advanceTo(at);
			if (reason === "event_loop") {
				loop.value = at === 5_300 ? 400 : 250;
				shedder.check();
			} else shedder.count("cp_busy");
		}
		expect(log.lines).toHaveLength(1); // within the interval: counted only
		timers.advanceTo(6_000); // the interval ends: one line with what came since
		expect(log.lines).toHaveLength(2);
		expect(log.lines[1]?.fields).toMatchObject({
			event: "shed",
			shed: 5,
			eventLoop: 2,
			cpBusy: 3,
			delayMs: 400,
			boundMs: 100,
			seconds: 0.9,
		});
		expect(log.lines[1]?.msg).toMatch(
			/^shed 5 request\(s\).*2 by the event-loop bound \(delay up to 400 ms, bound 100 ms\); 3 by the command processor/,
		);
		timers.advanceTo(20_000); // nothing more shed: no line, no timer left
		expect(log.lines).toHaveLength(2);
		expect(timers.pending()).toBe(0);
		shedder.count("cp_busy"); // after a quiet spell: at once again
		expect(log.lines).toHaveLength(3);
		expect(log.lines[2]?.fields).toMatchObject({ shed: 1, eventLoop: 0, cpBusy: 1 });
		expect(log.lines[2]?.fields).not.toHaveProperty("boundMs");
		shedder.count("cp_busy");
		shedder.close(); // what is pending is written, the timer cancelled
		expect(log.lines).toHaveLength(4);
		expect(log.lines[3]?.fields).toMatchObject({ shed: 1, cpBusy: 1 });
		expect(timers.pending()).toBe(0);
		expect(shedder.stats()).toMatchObject({ eventLoop: 3, cpBusy: 5 });
	});
});

describe("the shed log's interval", () => {
	it("writes no second line within an interval when a shed and the timer both come at its end", () => {
		const timers = manualTimers();
		const log = warnings();
		const shedder = createLoadShedder({ maxDelayMs: 0, logger: log, logIntervalMs: 1_000, timers });
		timers.advanceTo(1_000);
		shedder.count("cp_busy"); // line 1 at 1000
		timers.advanceTo(1_500);
		shedder.count("cp_busy"); // pending: a timer for 2000
		timers.at = 2_000; // a shed at 2000 comes before the timer has run
		shedder.count("cp_busy"); // line 2 at 2000, with both
		expect(log.lines.map((l) => l.fields.shed)).toEqual([1, 2]);
		shedder.count("cp_busy"); // pending again, right after line 2
		timers.advanceTo(2_999); // the old timer must not write it before 3000
		expect(log.lines).toHaveLength(2);
		timers.advanceTo(3_000);
		expect(log.lines.map((l) => l.fields.shed)).toEqual([1, 2, 1]);
		shedder.close();
		expect(log.lines).toHaveLength(3);
	});
});

describe("loopShedReply", () => {
	it("has the error body of every route, committed no, Retry-After at least 1 s", () => {
		const reply = loopShedReply(0.4, 1);
		expect(reply.headers).toEqual({ "retry-after": "1" });
		expect(Object.keys(reply.body)).toEqual(["status", "code", "message", "committed", "reason"]);
	});
});

describe("the router's admission", () => {
	const servers: HttpServer[] = [];
	afterEach(async () => {
		for (const s of servers.splice(0)) await s.close();
	});

	it("answers a refused request before its route reads the body; a small one keeps the connection", async () => {
		const handled: string[] = [];
		const table = createRouteTable([
			{
				method: "POST",
				path: "/api/v2/x",
				handle: async ({ req }) => {
					let body = "";
					for await (const chunk of req) body += String(chunk);
					handled.push(body);
					return { status: 201, body: { ok: true } };
				},
			},
			{ method: "GET", path: "/metrics", handle: () => ({ status: 200, body: "m" }) },
		]);
		let overloaded = true;
		const http = await startHttpServer(table, "127.0.0.1", 0, {}, undefined, (_m, url) =>
			overloaded && url.pathname.startsWith("/api/v2/") ? loopShedReply(300, 100) : undefined,
		);
		servers.push(http);
		// One keep-alive connection for every request: a refused request's body is drained, so
		// the next request on it is read right.
		const { Agent } = await import("node:http");
		const agent = new Agent({ keepAlive: true, maxSockets: 1 });
		const send = (method: string, path: string, body?: string) =>
			new Promise<{ status: number; text: string; retryAfter?: string }>((resolve, reject) => {
				const req = request({ host: "127.0.0.1", port: http.port, method, path, agent }, (res) => {
					let text = "";
					res.on("data", (c) => {
						text += String(c);
					});
					res.on("end", () =>
						resolve({
							status: res.statusCode ?? 0,
							text,
							...(res.headers["retry-after"] === undefined
								? {}
								: { retryAfter: String(res.headers["retry-after"]) }),
						}),
					);
				});
				req.on("error", reject);
				req.end(body);
			});
		const shed = await send("POST", "/api/v2/x", "x".repeat(10_000));
		expect(shed.status).toBe(503);
		expect(shed.retryAfter).toBe("1");
		expect(JSON.parse(shed.text)).toMatchObject({ code: "CP_BUSY", committed: "no" });
		expect((await send("GET", "/metrics")).status).toBe(200);
		expect(handled).toEqual([]); // nothing reached the route
		overloaded = false;
		const served = await send("POST", "/api/v2/x", "hello");
		expect(served.status).toBe(201);
		expect(handled).toEqual(["hello"]);
		agent.destroy();
	});
});

describe("the API route and the shed log", () => {
	it("counts cp's CP_BUSY in the shed log instead of a warn line per command", async () => {
		const busy = {
			createRecord: async () => {
				throw new CpError("CP_BUSY", "server is busy: partition 1 …; nothing was written", {
					retryAfterMs: 1_500,
				});
			},
		} as unknown as AppPartition;
		const lines: string[] = [];
		const logger = pino({ level: "info" }, { write: (l: string) => lines.push(l) });
		const counted: ShedReason[] = [];
		const route = apiV2Route({
			partitions: 4,
			placement: () => ({
				mode: "static",
				start: async () => {},
				locate: () => locateBy(true, undefined),
				served: () => [1],
				describe: () => ({ mode: "static", served: [1] }),
				close: async () => {},
			}),
			partition: () => busy,
			fencingToken: () => 7n,
			self: () => "127.0.0.1:1",
			metrics: { observe: () => {} },
			logger,
			shedLog: { count: (reason) => counted.push(reason) },
		});
		const target = "/api/v2/apps/vvm/demo/workspaces/1001/docs/app1pkg.Customer";
		const req = Object.assign(Readable.from([Buffer.from('{"name":"Ada"}')]), {
			headers: {},
			headersDistinct: {},
		}) as unknown as IncomingMessage;
		const reply = await route.handle({ method: "POST", url: requestUrl(target), req });
		expect(reply.status).toBe(503);
		expect(reply.headers).toMatchObject({ "retry-after": "2" });
		expect(reply.body).toMatchObject({ code: "CP_BUSY", committed: "no", reason: "busy" });
		expect(counted).toEqual(["cp_busy"]);
		expect(lines).toEqual([]);
	});
});
