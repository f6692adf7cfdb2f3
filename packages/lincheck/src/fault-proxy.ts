// A TCP proxy on 127.0.0.1 in front of a real server that, on a seeded schedule, passes, delays,
// holds (and delivers late, after the client's timeout), drops the replies of (then resets), or
// resets the connections. The idea is apps/chaos' fault proxy, reduced to what the check needs.
import type { AddressInfo, Server, Socket } from "node:net";
import { connect, createServer } from "node:net";
import type { Rng } from "./rng.ts";
import { createRng } from "./rng.ts";

/** What the path does now. */
export type ProxyMode =
	| { readonly kind: "pass" }
	| { readonly kind: "delay"; readonly ms: number }
	/** Every byte waits until the hold ends, then all of it goes, in order (requests land late). */
	| { readonly kind: "hold" }
	/** Replies are thrown away; the connections they touched are reset when it ends. */
	| { readonly kind: "drop-reply" };

/** Options of {@link startFaultProxy}. */
export interface FaultProxyOptions {
	readonly seed: number;
	/** How long a hold lasts: above the client's request timeout, so held requests land late. */
	readonly holdMs: number;
	/** Share of the schedule's periods with a fault; default 0.3. */
	readonly faultShare?: number;
}

/** What the proxy did. */
export interface ProxyCounts {
	connections: number;
	delays: number;
	holds: number;
	dropReplies: number;
	resets: number;
	droppedBytes: number;
}

/** A started proxy. */
export interface FaultProxy {
	readonly port: number;
	/** Starts the seeded schedule of faults. */
	startFaults(): void;
	/** Stops the faults: holds are delivered, dropped connections reset; resolves when calm. */
	stopFaults(): Promise<void>;
	/** Sets a mode by hand (tests of one fault). */
	setMode(mode: ProxyMode): void;
	counts(): ProxyCounts;
	close(): Promise<void>;
}

interface Chunk {
	readonly data: Buffer;
	at: number;
}

/** One direction of one connection: chunks in order, each released at its time. */
class Lane {
	readonly #to: Socket;
	readonly #queue: Chunk[] = [];
	#timer: NodeJS.Timeout | undefined;
	#last = 0;

	constructor(to: Socket) {
		this.#to = to;
	}

	get pending(): number {
		return this.#queue.length;
	}

	push(data: Buffer, at: number): void {
		// A byte stream never reorders: no chunk leaves before the one ahead of it.
		const when = Math.max(at, this.#last);
		if (when !== Number.POSITIVE_INFINITY) this.#last = when;
		this.#queue.push({ data, at: when });
		this.pump();
	}

	release(now: number): void {
		for (const c of this.#queue) if (c.at === Number.POSITIVE_INFINITY) c.at = now;
		this.#last = Math.max(this.#last, now);
		this.pump();
	}

	pump(): void {
		clearTimeout(this.#timer);
		this.#timer = undefined;
		const now = performance.now();
		while (this.#queue.length > 0 && (this.#queue[0] as Chunk).at <= now) {
			const c = this.#queue.shift() as Chunk;
			if (!this.#to.destroyed) this.#to.write(c.data);
		}
		const head = this.#queue[0];
		if (head !== undefined && head.at !== Number.POSITIVE_INFINITY)
			this.#timer = setTimeout(() => this.pump(), head.at - now);
	}

	clear(): void {
		clearTimeout(this.#timer);
		this.#queue.length = 0;
	}
}

interface Conn {
	readonly client: Socket;
	readonly server: Socket;
	readonly up: Lane;
	readonly down: Lane;
	tainted: boolean;
}

/**
 * Starts a proxy on 127.0.0.1 (a free port) to `host:port`.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy("127.0.0.1", 54329, { seed: 1, holdMs: 2500 });
 * proxy.startFaults();
 * ```
 */
export function startFaultProxy(
	host: string,
	port: number,
	options: FaultProxyOptions,
): Promise<FaultProxy> {
	const rng: Rng = createRng(options.seed);
	const share = options.faultShare ?? 0.3;
	const conns = new Set<Conn>();
	const counts: ProxyCounts = {
		connections: 0,
		delays: 0,
		holds: 0,
		dropReplies: 0,
		resets: 0,
		droppedBytes: 0,
	};
	let mode: ProxyMode = { kind: "pass" };
	let schedule: NodeJS.Timeout | undefined;
	let running = false;

	const reset = (c: Conn): void => {
		counts.resets++;
		c.up.clear();
		c.down.clear();
		c.client.resetAndDestroy();
		c.server.destroy();
		conns.delete(c);
	};
	const setMode = (next: ProxyMode): void => {
		const was = mode;
		mode = next;
		if (was.kind === "hold" && next.kind !== "hold") {
			const now = performance.now();
			for (const c of conns) {
				c.up.release(now);
				c.down.release(now);
			}
		}
		if (was.kind === "drop-reply" && next.kind !== "drop-reply")
			for (const c of [...conns]) if (c.tainted) reset(c);
	};
	const route = (c: Conn, data: Buffer, up: boolean): void => {
		if (mode.kind === "drop-reply" && !up) {
			c.tainted = true;
			counts.droppedBytes += data.length;
			return;
		}
		const now = performance.now();
		const at =
			mode.kind === "hold" ? Number.POSITIVE_INFINITY : mode.kind === "delay" ? now + mode.ms : now;
		(up ? c.up : c.down).push(data, at);
	};
	/** The next period of the schedule: a fault or a calm stretch. */
	const tick = (): void => {
		if (!running) return;
		let ms = 50 + rng.int(200);
		if (!rng.chance(share)) setMode({ kind: "pass" });
		else {
			const f = rng.next();
			if (f < 0.45) {
				counts.delays++;
				setMode({ kind: "delay", ms: 5 + rng.int(100) });
			} else if (f < 0.65) {
				counts.holds++;
				setMode({ kind: "hold" });
				ms = options.holdMs;
			} else if (f < 0.82) {
				counts.dropReplies++;
				setMode({ kind: "drop-reply" });
				ms = 50 + rng.int(150);
			} else {
				setMode({ kind: "pass" });
				const all = [...conns];
				if (all.length > 0) reset(all[rng.int(all.length)] as Conn);
			}
		}
		schedule = setTimeout(tick, ms);
	};

	const server: Server = createServer((client) => {
		counts.connections++;
		const upstream = connect(port, host);
		const c: Conn = {
			client,
			server: upstream,
			up: new Lane(upstream),
			down: new Lane(client),
			tainted: false,
		};
		conns.add(c);
		const end = (): void => {
			c.up.clear();
			c.down.clear();
			client.destroy();
			upstream.destroy();
			conns.delete(c);
		};
		// The client gave up (its timeout): what it sent still reaches the server, late, as over a
		// real network; then the server's side closes.
		const clientGone = (): void => {
			c.down.clear();
			client.destroy();
			const closeWhenSent = (): void => {
				if (c.up.pending > 0 && !upstream.destroyed && conns.has(c)) {
					setTimeout(closeWhenSent, 20);
					return;
				}
				setTimeout(end, 200);
			};
			closeWhenSent();
		};
		client.on("error", clientGone);
		client.on("close", clientGone);
		upstream.on("error", end);
		upstream.on("close", end);
		client.on("data", (d: Buffer) => route(c, d, true));
		upstream.on("data", (d: Buffer) => route(c, d, false));
	});

	return new Promise((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			server.off("error", reject);
			resolve({
				port: (server.address() as AddressInfo).port,
				startFaults() {
					running = true;
					tick();
				},
				async stopFaults() {
					running = false;
					clearTimeout(schedule);
					setMode({ kind: "pass" });
					// Let what was released reach the server and its answers come back.
					await new Promise((r) => setTimeout(r, 300));
				},
				setMode,
				counts: () => ({ ...counts }),
				close: () =>
					new Promise<void>((done) => {
						running = false;
						clearTimeout(schedule);
						for (const c of [...conns]) {
							c.up.clear();
							c.down.clear();
							c.client.destroy();
							c.server.destroy();
						}
						conns.clear();
						server.close(() => done());
					}),
			});
		});
	});
}
