// The path faults, on a real TCP connection through the proxy to a small echo server.
import type { AddressInfo, Server, Socket } from "node:net";
import { connect, createServer } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { FaultProxy } from "../src/fault-proxy.ts";
import { startFaultProxy } from "../src/fault-proxy.ts";

/** The server answers every chunk with `ok:<chunk>` and records what it received, and when. */
let server: Server;
let port = 0;
const received: { text: string; at: number }[] = [];
const serverSockets = new Set<Socket>();

beforeAll(async () => {
	server = createServer((socket) => {
		serverSockets.add(socket);
		socket.on("close", () => serverSockets.delete(socket));
		socket.on("data", (chunk) => {
			received.push({ text: chunk.toString(), at: performance.now() });
			socket.write(`ok:${chunk.toString()}`);
		});
		socket.on("error", () => {});
	});
	await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
	port = (server.address() as AddressInfo).port;
});
const proxies: FaultProxy[] = [];
afterEach(async () => {
	for (const p of proxies.splice(0)) await p.close();
});
afterAll(
	() =>
		new Promise<void>((r) => {
			server.close(() => r());
			for (const s of serverSockets) s.destroy();
		}),
);

async function proxy(): Promise<FaultProxy> {
	const p = await startFaultProxy("127.0.0.1", port);
	proxies.push(p);
	return p;
}

interface Client {
	readonly socket: Socket;
	readonly replies: { text: string; at: number }[];
	/** Resolves with the next reply text that contains `part`. */
	reply(part: string): Promise<{ text: string; at: number }>;
	readonly closed: Promise<void>;
}

async function client(p: FaultProxy): Promise<Client> {
	const socket = connect(p.port, "127.0.0.1");
	await new Promise<void>((r) => socket.once("connect", () => r()));
	const replies: { text: string; at: number }[] = [];
	const waiters: { part: string; resolve: (r: { text: string; at: number }) => void }[] = [];
	socket.on("data", (chunk) => {
		const r = { text: chunk.toString(), at: performance.now() };
		replies.push(r);
		for (const w of [...waiters]) {
			if (r.text.includes(w.part)) {
				waiters.splice(waiters.indexOf(w), 1);
				w.resolve(r);
			}
		}
	});
	socket.on("error", () => {});
	return {
		socket,
		replies,
		reply: (part) =>
			new Promise((resolve) => {
				const found = replies.find((r) => r.text.includes(part));
				if (found) resolve(found);
				else waiters.push({ part, resolve });
			}),
		closed: new Promise((r) => socket.once("close", () => r())),
	};
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fault proxy", () => {
	it("passes bytes both ways", async () => {
		const p = await proxy();
		const c = await client(p);
		c.socket.write("a1");
		expect((await c.reply("a1")).text).toBe("ok:a1");
		c.socket.destroy();
	});

	it("delay: every chunk waits, both ways", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "delay", ms: 100 });
		const sent = performance.now();
		c.socket.write("d1");
		const reply = await c.reply("d1");
		expect(reply.at - sent).toBeGreaterThanOrEqual(200); // there and back
		c.socket.destroy();
	});

	it("delay: a chunk still waiting is not overtaken when the delay ends", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "delay", ms: 200 });
		c.socket.write("o1");
		while (p.stats().received === 0) await pause(5); // o1 is queued in the proxy
		p.setMode({ kind: "pass" });
		c.socket.write("o2");
		await c.reply("o2");
		const order = received.filter((r) => r.text.startsWith("o")).map((r) => r.text);
		expect(order.join("")).toBe("o1o2");
		c.socket.destroy();
	});

	it("hold: nothing is forwarded until the hold ends, then all of it in order", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setHold(true);
		c.socket.write("h1");
		c.socket.write("h2");
		await pause(100);
		const releasedAt = performance.now();
		p.setHold(false);
		await c.reply("h2");
		const got = received.filter((r) => r.text.includes("h"));
		expect(got.every((r) => r.at >= releasedAt)).toBe(true);
		expect(got.map((r) => r.text).join("")).toBe("h1h2");
		c.socket.destroy();
	});

	it("a host's own hold (proxy-hold) holds on its own, and delivers what a client that gave up sent", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "hold" });
		c.socket.write("g1");
		await pause(100);
		expect(received.some((r) => r.text === "g1")).toBe(false);
		// The client stops waiting (a request timeout): its request still lands, late.
		c.socket.destroy();
		await pause(50);
		const releasedAt = performance.now();
		p.setMode({ kind: "pass" });
		while (!received.some((r) => r.text === "g1")) await pause(10);
		expect(received.find((r) => r.text === "g1")?.at).toBeGreaterThanOrEqual(releasedAt);
	});

	it("hold-writes: a connection that sends a DynamoDB write is held from then on; reads on others pass", async () => {
		const p = await proxy();
		const reader = await client(p);
		const writer = await client(p);
		p.setMode({ kind: "hold-writes" });
		writer.socket.write(
			"POST / HTTP/1.1\r\nX-Amz-Target: DynamoDB_20120810.BatchWriteItem\r\n\r\nw1",
		);
		reader.socket.write("POST / HTTP/1.1\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n\r\nr1");
		expect((await reader.reply("r1")).text).toContain("r1");
		await pause(50);
		expect(received.some((r) => r.text.includes("w1"))).toBe(false);
		const releasedAt = performance.now();
		p.setMode({ kind: "pass" });
		await writer.reply("w1");
		expect(received.find((r) => r.text.includes("w1"))?.at).toBeGreaterThanOrEqual(releasedAt);
		reader.socket.destroy();
		writer.socket.destroy();
	});

	it("a host's own hold and the storage-wide hold: bytes move only when neither holds", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "hold" });
		p.setHold(true);
		c.socket.write("k1");
		await pause(50);
		p.setMode({ kind: "pass" }); // the storage-wide hold still holds
		await pause(50);
		const releasedAt = performance.now();
		p.setHold(false);
		const reply = await c.reply("k1");
		expect(received.find((r) => r.text === "k1")?.at).toBeGreaterThanOrEqual(releasedAt);
		expect(reply.text).toBe("ok:k1");
		c.socket.destroy();
	});

	it("drop-reply: the request reaches the server, the reply never comes, and the connection is reset after", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "drop-reply" });
		const before = received.length;
		c.socket.write("r1");
		while (received.length === before) await pause(10);
		expect(received.at(-1)?.text).toBe("r1"); // the write landed: an ambiguous outcome
		p.setMode({ kind: "pass" });
		await c.closed;
		expect(c.replies.map((r) => r.text).join("")).not.toContain("ok:r1");
		expect(p.stats().resets).toBe(1);
		const fresh = await client(p);
		fresh.socket.write("r2");
		expect((await fresh.reply("r2")).text).toBe("ok:r2");
		fresh.socket.destroy();
	});

	it("drop: nothing reaches the server, and the connection is reset when the drop ends", async () => {
		const p = await proxy();
		const c = await client(p);
		p.setMode({ kind: "drop" });
		c.socket.write("x1");
		await pause(100);
		expect(received.some((r) => r.text === "x1")).toBe(false);
		expect(p.stats().dropped).toBe(2);
		p.setMode({ kind: "pass" });
		await c.closed;
	});
});
