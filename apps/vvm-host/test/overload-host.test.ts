// The host under an overloaded event loop: API v2 requests are shed with cp's 503 (committed
// "no", nothing written) before their body is read, while /metrics and the probes are served.
// First with an injected delay (deterministic), then with the real sampler and a CPU hog that
// makes every event-loop turn long.
import { performance } from "node:perf_hooks";
import { afterEach, describe, expect, it } from "vitest";
import { startHost } from "../src/host.ts";
import type { LoopDelaySource } from "../src/http/overload.ts";
import { hostConfig } from "./support/config.ts";

const CREATE = "/api/v2/apps/vvm/demo/workspaces/1001/docs/app1pkg.Customer";
const WLOG = "/api/v2/apps/vvm/demo/workspaces/1001/wlog";

interface LogLine {
	readonly event?: string;
	readonly level?: number;
	readonly port?: number;
	readonly [field: string]: unknown;
}

/** An in-process host on mem storage; resolves once it serves its partitions. */
async function serving(argv: string[], loopDelay?: LoopDelaySource) {
	const lines: LogLine[] = [];
	let onLine: () => void = () => {};
	const host = startHost(hostConfig(["--storage", "mem", "--http-port", "0", ...argv]), {
		killer: { schedule: () => {}, disarm: () => {} },
		logDestination: {
			write: (text: string) => {
				lines.push(JSON.parse(text) as LogLine);
				onLine();
			},
		},
		...(loopDelay === undefined ? {} : { loopDelay }),
	});
	const seen = (event: string): Promise<LogLine> =>
		new Promise((resolve, reject) => {
			const check = (): boolean => {
				const line = lines.find((l) => l.event === event);
				if (line !== undefined) resolve(line);
				return line !== undefined;
			};
			if (check()) return;
			const previous = onLine;
			onLine = () => {
				previous();
				check();
			};
			void host.done.then((code) => reject(new Error(`the host exited (${code}) before ${event}`)));
		});
	const port = (await seen("listening")).port as number;
	await seen("services-started");
	return { host, lines, base: `http://127.0.0.1:${port}` };
}

const stops: (() => Promise<unknown>)[] = [];
afterEach(async () => {
	for (const stop of stops.splice(0)) await stop();
});

const create = (base: string, name: string) =>
	fetch(`${base}${CREATE}`, {
		method: "POST",
		headers: { "content-type": "application/json" },
		body: JSON.stringify({ name }),
	});

/** Sends creates until one is answered 201 or `attempts` were answered otherwise: the last status. */
async function createdWithin(base: string, name: string, attempts: number): Promise<number> {
	let status = 0;
	for (let i = 0; i < attempts && status !== 201; i++)
		status = (await create(base, `${name}-${i}`)).status;
	return status;
}

describe("the host under an overloaded event loop", () => {
	it("sheds API requests with cp's 503 and serves /metrics and the probes (injected delay)", async () => {
		const loop = { value: 0, closed: false };
		const { host, lines, base } = await serving(["--max-event-loop-delay-ms", "50"], {
			delayMs: () => loop.value,
			close: () => {
				loop.closed = true;
			},
		});
		stops.push(() => host.stop());
		expect((await create(base, "before")).status).toBe(201);

		loop.value = 400; // the loop is 400 ms behind: over the 50 ms bound
		const shed = await create(base, "shed");
		expect(shed.status).toBe(503);
		expect(shed.headers.get("retry-after")).toBe("1");
		expect(await shed.json()).toMatchObject({
			status: 503,
			code: "CP_BUSY",
			reason: "busy",
			committed: "no",
		});
		expect((await fetch(`${base}${WLOG}`)).status).toBe(503); // reads too
		const metrics = await fetch(`${base}/metrics`);
		expect(metrics.status).toBe(200);
		const text = await metrics.text();
		expect(text).toMatch(/^vvm_http_shed_total\{reason="event_loop"\} 2$/m);
		expect(text).toMatch(/^vvm_http_event_loop_delay_seconds 0\.4$/m);
		// The loop's busy seconds: Node's own count, which only grows from one scrape to the next.
		const busy = (t: string): number =>
			Number(/^vvm_http_event_loop_active_seconds_total ([\d.e+-]+)$/m.exec(t)?.[1]);
		const before = busy(text);
		expect(before).toBeGreaterThan(0);
		const spin = performance.now() + 30;
		while (performance.now() < spin); // 30 ms of busy loop, counted by the next scrape
		const after = busy(await (await fetch(`${base}/metrics`)).text());
		expect(after - before).toBeGreaterThanOrEqual(0.03);
		expect((await fetch(`${base}/healthz`)).status).toBe(200);
		expect((await fetch(`${base}/readyz`)).status).toBe(200);
		expect((await fetch(`${base}/status`)).status).toBe(200);

		loop.value = 0;
		const wlog = await fetch(`${base}${WLOG}`);
		expect(wlog.status).toBe(200);
		const names = ((await wlog.json()) as { results: { event: unknown }[] }).results.map((r) =>
			JSON.stringify(r.event),
		);
		// The shed create wrote nothing: only the first one is in the workspace's log.
		expect(names.some((n) => n.includes('"before"'))).toBe(true);
		expect(names.some((n) => n.includes('"shed"'))).toBe(false);

		expect(await host.stop()).toBe(0);
		expect(loop.closed).toBe(true);
		const shedLines = lines.filter((l) => l.event === "shed");
		expect(shedLines.length).toBeGreaterThanOrEqual(1);
		expect(shedLines.length).toBeLessThanOrEqual(2); // the first at once, the rest at most one more
		expect(shedLines.reduce((n, l) => n + Number(l.eventLoop), 0)).toBe(2);
		expect(shedLines.every((l) => l.level === 40)).toBe(true);
	});

	it("with the bound off serves whatever the delay", async () => {
		const { host, base } = await serving(["--max-event-loop-delay-ms", "off"], {
			delayMs: () => 10_000,
			close: () => {},
		});
		stops.push(() => host.stop());
		expect((await create(base, "served")).status).toBe(201);
	});

	it("measures its own loop: a CPU hog in every turn gets commands shed, /metrics served", async () => {
		const { host, base } = await serving(["--max-event-loop-delay-ms", "50"]);
		stops.push(() => host.stop());
		// On a loaded machine even a calm loop can run late for a moment: the first 201 may take
		// a few requests (each one an answer awaited, not a sleep).
		expect(await createdWithin(base, "calm", 100)).toBe(201);
		// Every turn of the (shared) event loop now spends 150 ms in this timer.
		const hog = setInterval(() => {
			const end = performance.now() + 150;
			while (performance.now() < end) {}
		}, 1);
		try {
			// The sampler takes the loop for overloaded once two readings in a row are late: the
			// first request or two may still be served.
			let shed: Response | undefined;
			for (let i = 0; i < 20 && shed === undefined; i++) {
				const answer = await create(base, `hogged-${i}`);
				if (answer.status === 503) shed = answer;
				else expect(answer.status).toBe(201);
			}
			expect(shed?.status).toBe(503);
			expect(await shed?.json()).toMatchObject({ code: "CP_BUSY", committed: "no" });
			const metrics = await fetch(`${base}/metrics`);
			expect(metrics.status).toBe(200);
			expect(await metrics.text()).toMatch(/^vvm_http_shed_total\{reason="event_loop"\} [1-9]/m);
		} finally {
			clearInterval(hog);
		}
		// Once the loop keeps up again, commands are served (the sampler's next tick is on time).
		expect(await createdWithin(base, "after", 100)).toBe(201);
	});
});

describe("the host's bound on API requests in flight", () => {
	it("sheds the create past --max-requests-in-flight with cp's 503, writes nothing, serves probes and /metrics", async () => {
		const { host, lines, base } = await serving(["--max-requests-in-flight", "1"]);
		stops.push(() => host.stop());
		expect(await createdWithin(base, "before", 100)).toBe(201);
		// A create whose body has not all come: it holds the one place in flight.
		const { connect } = await import("node:net");
		const { port } = new URL(base);
		const body = JSON.stringify({ name: "held" });
		const socket = connect(Number(port), "127.0.0.1");
		const answered = new Promise<string>((resolve) => {
			let text = "";
			socket.on("data", (chunk) => {
				text += String(chunk);
				if (text.includes("\r\n\r\n")) resolve(text);
			});
		});
		const head = `POST ${CREATE} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`;
		await new Promise<void>((resolve) => socket.write(head + body.slice(0, 5), () => resolve()));
		// Until the host counts it, a create may still be served; then every one is shed.
		let shed: Response | undefined;
		let shedName = "";
		for (let i = 0; i < 100 && shed === undefined; i++) {
			const answer = await create(base, `shed-${i}`);
			if (answer.status === 503) {
				shed = answer;
				shedName = `shed-${i}`;
			} else expect(answer.status).toBe(201);
		}
		expect(shed?.headers.get("retry-after")).toBe("1");
		expect(await shed?.json()).toMatchObject({ code: "CP_BUSY", committed: "no", reason: "busy" });
		for (const path of ["/healthz", "/readyz", "/status"])
			expect((await fetch(`${base}${path}`)).status, path).toBe(200);
		const metrics = await (await fetch(`${base}/metrics`)).text();
		expect(metrics).toMatch(/^vvm_http_shed_total\{reason="in_flight"\} 1$/m);
		expect(metrics).toMatch(/^vvm_http_requests_in_flight 1$/m);

		socket.write(body.slice(5));
		expect(await answered).toMatch(/^HTTP\/1\.1 201/);
		socket.destroy();
		expect(await createdWithin(base, "after", 100)).toBe(201);
		const wlog = await (await fetch(`${base}${WLOG}`)).text();
		expect(wlog).toContain('"held"');
		expect(wlog).not.toContain(`"${shedName}"`);
		expect(await host.stop()).toBe(0);
		expect(
			lines.filter((l) => l.event === "shed").reduce((n, l) => n + Number(l.inFlight ?? 0), 0),
		).toBe(1);
	});
});
