// The bound on API requests in flight (src/http/overload.ts, `--max-requests-in-flight`): the
// shedder's count and answer, the router's refusal before a body is read, and the release of the
// count on every way a request ends (answer, error, client gone, timeout): a leak would leave the
// bound full and shed every later request. Events, not sleeps: each release is awaited.
import type { IncomingMessage } from "node:http";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import type { DriftTimers, LoadShedder } from "../src/http/overload.ts";
import {
	createLoadShedder,
	defaultMaxRequestsInFlight,
	inFlightShedReply,
} from "../src/http/overload.ts";
import type { HttpLimits, HttpServer, Reply, Route } from "../src/http/router.ts";
import { createRouteTable, startHttpServer } from "../src/http/router.ts";

/** Timers that never fire unless run: the shed log's, which these tests do not wait for. */
const stillTimers: DriftTimers = { now: () => 0, schedule: () => ({ cancel: () => {} }) };

const warnings = () => {
	const lines: { fields: Record<string, unknown>; msg: string }[] = [];
	return {
		lines,
		warn: (fields: Record<string, unknown>, msg: string) => lines.push({ fields, msg }),
	};
};

describe("the in-flight bound of createLoadShedder", () => {
	it("admits up to the bound, sheds at it with cp's 503, and admits again once one leaves", () => {
		const log = warnings();
		const shedder = createLoadShedder({
			maxDelayMs: 0,
			maxInFlight: 3,
			logger: log,
			timers: stillTimers,
		});
		expect([shedder.enter(), shedder.enter(), shedder.enter()]).toEqual([
			undefined,
			undefined,
			undefined,
		]);
		expect(shedder.stats()).toMatchObject({ requestsInFlight: 3, inFlight: 0 });
		const refused = shedder.enter();
		expect(refused).toMatchObject({ status: 503, headers: { "retry-after": "1" } });
		expect(JSON.parse(String(refused?.body))).toEqual({
			status: 503,
			code: "CP_BUSY",
			message:
				"server is busy: the host has 3 API requests in flight (bound 3, --max-requests-in-flight); nothing was written",
			committed: "no",
			reason: "busy",
		});
		expect(shedder.stats()).toMatchObject({ requestsInFlight: 3, inFlight: 1 });
		shedder.leave();
		expect(shedder.enter()).toBeUndefined();
		expect(shedder.stats()).toMatchObject({ requestsInFlight: 3, inFlight: 1 });
		expect(log.lines).toHaveLength(1);
		expect(log.lines[0]?.fields).toMatchObject({
			event: "shed",
			shed: 1,
			inFlight: 1,
			maxInFlight: 3,
		});
		expect(log.lines[0]?.msg).toMatch(/1 by the in-flight bound \(3 API requests\)/);
		shedder.close();
	});

	it("with no bound counts but never sheds; never counts below zero", () => {
		const shedder = createLoadShedder({ maxDelayMs: 0, logger: warnings() });
		for (let i = 0; i < 10_000; i++) expect(shedder.enter()).toBeUndefined();
		expect(shedder.stats().requestsInFlight).toBe(10_000);
		for (let i = 0; i < 10_001; i++) shedder.leave();
		expect(shedder.stats().requestsInFlight).toBe(0);
		shedder.close();
	});

	it("counts nothing in flight for a request the event-loop bound refused", () => {
		const shedder = createLoadShedder({
			maxDelayMs: 10,
			maxInFlight: 1,
			source: { delayMs: () => 50, close: () => {} },
			logger: warnings(),
			timers: stillTimers,
		});
		expect(shedder.enter()).toMatchObject({ status: 503, outcome: "busy_event_loop" });
		expect(shedder.stats()).toMatchObject({ requestsInFlight: 0, eventLoop: 1, inFlight: 0 });
		shedder.close();
	});

	it("refuses a negative or fractional bound", () => {
		expect(() => createLoadShedder({ maxDelayMs: 0, maxInFlight: -1, logger: warnings() })).toThrow(
			"maxInFlight must be an integer >= 0, got -1",
		);
		expect(() =>
			createLoadShedder({ maxDelayMs: 0, maxInFlight: 0.5, logger: warnings() }),
		).toThrow(RangeError);
	});

	it("defaults to 8 per partition, at least 64, at most 4096", () => {
		expect([1, 8, 10, 100, 512, 65_536].map(defaultMaxRequestsInFlight)).toEqual([
			64, 64, 80, 800, 4096, 4096,
		]);
		expect(inFlightShedReply(80).headers).toEqual({ "retry-after": "1" });
	});
});

/**
 * Manual timers: `schedule` keeps the callbacks, `tick()` runs the ones due (the adapt timer's),
 * so each adaptation is one call; the clock never moves (the shed log's own timer stays pending).
 */
function manualTimers() {
	let pending: { fn: () => void; cancelled: boolean }[] = [];
	return {
		timers: {
			now: () => 0,
			schedule: (fn: () => void) => {
				const entry = { fn, cancelled: false };
				pending.push(entry);
				return { cancel: () => (entry.cancelled = true) };
			},
		} satisfies DriftTimers,
		/** Runs every scheduled, uncancelled callback once. */
		tick: () => {
			const due = pending;
			pending = [];
			for (const entry of due) if (!entry.cancelled) entry.fn();
		},
		pendingCount: () => pending.filter((e) => !e.cancelled).length,
	};
}

describe("the event-loop utilization bound of createLoadShedder", () => {
	/** A shedder at bound 80 over a utilization the test sets before each adaptation. */
	const adaptive = (maxUtilizationPercent = 85) => {
		const clock = manualTimers();
		let busy = 0;
		const shedder = createLoadShedder({
			maxDelayMs: 0,
			maxInFlight: 80,
			maxUtilizationPercent,
			utilization: { sample: () => busy },
			logger: warnings(),
			timers: clock.timers,
		});
		/** Fills the bound and has one more refused, so the next adaptation sees a refusal. */
		const overload = () => {
			while (shedder.stats().requestsInFlight < shedder.stats().inFlightLimit) shedder.enter();
			expect(shedder.enter()).toMatchObject({ status: 503 });
		};
		const drain = () => {
			while (shedder.stats().requestsInFlight > 0) shedder.leave();
		};
		return {
			shedder,
			overload,
			drain,
			adapt: (utilization: number) => {
				busy = utilization;
				clock.tick();
				return shedder.stats().inFlightLimit;
			},
			clock,
		};
	};

	it("halves the bound at once while the loop is over it and refusing, down to 2, then raises it back by eighths, slowly", () => {
		const a = adaptive();
		const limits: number[] = [];
		for (let i = 0; i < 7; i++) {
			a.overload();
			limits.push(a.adapt(0.97));
		}
		expect(limits).toEqual([40, 20, 10, 5, 2, 2, 2]);
		// A request past the lowered bound is refused with an answer that says so.
		a.drain();
		a.overload();
		const refused = a.shedder.enter();
		expect(JSON.parse(String(refused?.body)).message).toBe(
			"server is busy: the host has 2 API requests in flight (bound 2, lowered from 80 while the event loop is busier than --max-event-loop-utilization); nothing was written",
		);
		// 75..85 %: held; under 75 %: raised by an eighth (at least 1) every 4th interval, up to 80.
		expect(a.adapt(0.8)).toBe(2);
		const raised: number[] = [];
		for (let i = 0; i < 200 && a.shedder.stats().inFlightLimit < 80; i++) raised.push(a.adapt(0.3));
		expect(raised.slice(0, 12)).toEqual([2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5]);
		expect(raised.at(-1)).toBe(80);
		const steps = [...new Set(raised)];
		expect(steps.slice(0, 10)).toEqual([2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
		expect(steps.slice(-3)).toEqual([64, 72, 80]);
		// A busy interval in between starts the count again; an overloaded one halves at once.
		a.overload();
		expect(a.adapt(0.97)).toBe(40);
		expect([a.adapt(0.3), a.adapt(0.3), a.adapt(0.8), a.adapt(0.3), a.adapt(0.3)]).toEqual([
			40, 40, 40, 40, 40,
		]);
		expect([a.adapt(0.3), a.adapt(0.3)]).toEqual([40, 45]);
		a.shedder.close();
	});

	it("keeps the bound while the loop is busy but the bound refuses nothing (a closed loop at capacity)", () => {
		const a = adaptive();
		for (let i = 0; i < 10; i++) a.shedder.enter(); // 10 in flight, far under 80
		for (let i = 0; i < 5; i++) expect(a.adapt(1)).toBe(80);
		expect(a.shedder.stats()).toMatchObject({ inFlight: 0, inFlightLimit: 80 });
		a.shedder.close();
	});

	it("is off at 0, or without an in-flight bound: no timer, the bound fixed", () => {
		for (const [maxUtilizationPercent, maxInFlight] of [
			[0, 80],
			[85, 0],
		] as const) {
			const clock = manualTimers();
			let sampled = 0;
			const shedder = createLoadShedder({
				maxDelayMs: 0,
				maxInFlight,
				maxUtilizationPercent,
				utilization: {
					sample: () => {
						sampled++;
						return 1;
					},
				},
				logger: warnings(),
				timers: clock.timers,
			});
			expect(clock.pendingCount()).toBe(0);
			expect(shedder.stats().inFlightLimit).toBe(maxInFlight);
			expect(sampled).toBe(0);
			shedder.close();
		}
	});

	it("stops adapting on close", () => {
		const a = adaptive();
		expect(a.clock.pendingCount()).toBe(1);
		a.shedder.close();
		expect(a.clock.pendingCount()).toBe(0);
	});

	it("refuses a utilization bound outside 0..99 and an interval under 1 ms", () => {
		for (const maxUtilizationPercent of [100, -1, 0.5])
			expect(() =>
				createLoadShedder({
					maxDelayMs: 0,
					maxInFlight: 8,
					maxUtilizationPercent,
					logger: warnings(),
				}),
			).toThrow(`maxUtilizationPercent must be an integer in 0..99, got ${maxUtilizationPercent}`);
		expect(() =>
			createLoadShedder({
				maxDelayMs: 0,
				maxInFlight: 8,
				maxUtilizationPercent: 85,
				adaptIntervalMs: 0,
				logger: warnings(),
			}),
		).toThrow("adaptIntervalMs must be an integer >= 1, got 0");
	});
});

/** A promise and its resolver. */
function deferred<T = void>() {
	let resolve: (value: T) => void = () => {};
	const promise = new Promise<T>((r) => {
		resolve = r;
	});
	return { promise, resolve };
}

/** Reads a request's body as the API route does (data/end/error). */
const readBody = (req: IncomingMessage): Promise<string> =>
	new Promise((resolve, reject) => {
		let text = "";
		req.on("data", (chunk) => {
			text += String(chunk);
		});
		req.once("end", () => resolve(text));
		req.once("error", reject);
	});

interface Answer {
	readonly status: number;
	readonly text: string;
	readonly headers: Record<string, string | string[] | undefined>;
}

/** One request on a fresh connection (or `agent`'s). */
const send = (
	port: number,
	method: string,
	path: string,
	body?: string,
	agent: Agent | false = false,
): Promise<Answer> =>
	new Promise((resolve, reject) => {
		const req = request({ host: "127.0.0.1", port, method, path, agent }, (res) => {
			let text = "";
			res.on("data", (c) => {
				text += String(c);
			});
			res.on("end", () => resolve({ status: res.statusCode ?? 0, text, headers: res.headers }));
		});
		req.on("error", reject);
		req.end(body);
	});

/**
 * A server whose API routes a test holds or fails at will, its admission by a shedder of
 * `maxInFlight`, and an event per release of the count.
 */
async function gatedServer(maxInFlight: number, limits: Partial<HttpLimits> = {}) {
	const shedder: LoadShedder = createLoadShedder({
		maxDelayMs: 0,
		maxInFlight,
		logger: warnings(),
		timers: stillTimers,
	});
	let gate = deferred();
	const entered: (() => void)[] = [];
	let released = deferred<number>();
	const routes: Route[] = [
		{
			method: "POST",
			path: "/api/v2/held",
			handle: async ({ req }) => {
				const body = await readBody(req);
				entered.shift()?.();
				await gate.promise;
				return { status: 201, body: { body } };
			},
		},
		{
			method: "POST",
			path: "/api/v2/read-then-hold",
			handle: async ({ req }) => {
				entered.shift()?.();
				const body = await readBody(req); // rejects when the client goes or times out
				return { status: 201, body: { body } };
			},
		},
		{
			method: "POST",
			path: "/api/v2/fails",
			handle: async () => {
				throw new Error("the route failed");
			},
		},
		...["/healthz", "/readyz", "/metrics", "/status"].map(
			(path): Route => ({
				method: "GET",
				path,
				handle: (): Reply => ({ status: 200, body: path }),
			}),
		),
	];
	const http = await startHttpServer(
		createRouteTable(routes),
		"127.0.0.1",
		0,
		limits,
		undefined,
		(_method, url) => {
			if (!url.pathname.startsWith("/api/v2/")) return undefined;
			return (
				shedder.enter() ??
				(() => {
					shedder.leave();
					released.resolve(shedder.stats().requestsInFlight);
					released = deferred<number>();
				})
			);
		},
	);
	return {
		http,
		shedder,
		/** Resolves once a held route has its request (body read or about to be). */
		entered: () => {
			const d = deferred();
			entered.push(d.resolve);
			return d.promise;
		},
		/** Resolves with the count left after the next release. */
		released: () => released.promise,
		open: () => {
			gate.resolve();
			gate = deferred();
		},
	};
}

describe("the router's in-flight bound", () => {
	const servers: HttpServer[] = [];
	afterEach(async () => {
		for (const s of servers.splice(0)) await s.close();
	});

	it("sheds the request past the bound unread, never the probes or operator routes, and admits again once one is answered", async () => {
		const s = await gatedServer(2);
		servers.push(s.http);
		const port = s.http.port;
		const bothIn = Promise.all([s.entered(), s.entered()]);
		const first = send(port, "POST", "/api/v2/held", "one");
		const second = send(port, "POST", "/api/v2/held", "two");
		await bothIn;
		expect(s.shedder.stats().requestsInFlight).toBe(2);

		const shed = await send(port, "POST", "/api/v2/held", "three");
		expect(shed.status).toBe(503);
		expect(shed.headers["retry-after"]).toBe("1");
		expect(JSON.parse(shed.text)).toMatchObject({
			code: "CP_BUSY",
			committed: "no",
			reason: "busy",
		});
		expect((await send(port, "GET", "/api/v2/unknown")).status).toBe(503); // any API path
		for (const path of ["/healthz", "/readyz", "/metrics", "/status"])
			expect((await send(port, "GET", path)).status, path).toBe(200);
		expect(s.shedder.stats()).toMatchObject({ requestsInFlight: 2, inFlight: 2 });

		s.open();
		expect((await first).status).toBe(201);
		expect((await second).status).toBe(201);
		// The count is released before the answer is written.
		expect(s.shedder.stats().requestsInFlight).toBe(0);
		expect((await send(port, "POST", "/api/v2/fails")).status).toBe(500);
		expect(s.shedder.stats().requestsInFlight).toBe(0);
		s.shedder.close();
	});

	it("releases the count on every ending: answer, error, client gone, timeout (a leak would shed the next)", async () => {
		const s = await gatedServer(1, {
			headersTimeoutMs: 300,
			requestTimeoutMs: 300,
			checkIntervalMs: 50,
		});
		servers.push(s.http);
		const port = s.http.port;
		/** A request that sends its headers and half its body, then waits. */
		const halfSent = () => {
			const socket = connect(port, "127.0.0.1");
			socket.on("error", () => {});
			socket.write(
				"POST /api/v2/read-then-hold HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: 10\r\n\r\nhalf ",
			);
			return socket;
		};
		for (let round = 0; round < 5; round++) {
			// An answer.
			const held = s.entered();
			const answer = send(port, "POST", "/api/v2/held", `r${round}`);
			await held;
			s.open();
			expect((await answer).status).toBe(201);
			expect(s.shedder.stats().requestsInFlight).toBe(0);
			// A route that throws.
			expect((await send(port, "POST", "/api/v2/fails")).status).toBe(500);
			expect(s.shedder.stats().requestsInFlight).toBe(0);
			// A client that goes away in the middle of its body.
			const gone = s.released();
			const entered = s.entered();
			const socket = halfSent();
			await entered;
			expect((await send(port, "POST", "/api/v2/held", "while full")).status).toBe(503);
			socket.destroy();
			expect(await gone).toBe(0);
			// A client that never finishes its body: the request timeout ends it.
			const timedOut = s.released();
			const enteredToo = s.entered();
			const slow = halfSent();
			await enteredToo;
			expect(await timedOut).toBe(0);
			slow.destroy();
		}
		const held = s.entered();
		const last = send(port, "POST", "/api/v2/held", "last");
		await held;
		s.open();
		expect((await last).status).toBe(201);
		expect(s.shedder.stats()).toMatchObject({ requestsInFlight: 0, inFlight: 5 });
		s.shedder.close();
	}, 30_000);

	it("closes the connection of a refused request with a large declared body instead of reading it", async () => {
		const s = await gatedServer(1);
		servers.push(s.http);
		const port = s.http.port;
		const entered = s.entered();
		const held = send(port, "POST", "/api/v2/held", "hold");
		await entered;
		const agent = new Agent({ keepAlive: true, maxSockets: 1 });
		const small = await send(port, "POST", "/api/v2/held", "x".repeat(1_000), agent);
		expect(small.status).toBe(503);
		expect(small.headers.connection).toBe("keep-alive");
		agent.destroy();
		const large: Answer | Error = await send(
			port,
			"POST",
			"/api/v2/held",
			"x".repeat(200_000),
		).catch((error: Error) => error);
		// The client may see the answer (and the close), or a reset while it still sends.
		if (!(large instanceof Error)) {
			expect(large.status).toBe(503);
			expect(large.headers.connection).toBe("close");
		}
		s.open();
		expect((await held).status).toBe(201);
		s.shedder.close();
	});
});
