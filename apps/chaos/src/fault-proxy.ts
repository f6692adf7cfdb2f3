// A TCP proxy in front of the storage, one per host (and per node): it passes, delays, holds,
// drops, or drops only the replies, so each host's path to the storage fails on its own.
import type { AddressInfo, Server, Socket } from "node:net";
import { connect, createServer } from "node:net";

/**
 * What a host's path does now. `hold` keeps every byte and delivers it all, in order, when the
 * hold ends (writes that land late), also the bytes of a client that gave up meanwhile. `drop` and `drop-reply` corrupt the byte streams they touch,
 * so when they end, every connection they touched is reset (a network that lost packets for long
 * enough); the clients reconnect.
 */
export type PathMode =
	| { readonly kind: "pass" }
	| { readonly kind: "delay"; readonly ms: number }
	| { readonly kind: "hold" }
	/**
	 * Holds the connections that carry a write request (from the first write on; DynamoDB: an
	 * `X-Amz-Target` of a write operation), while reads on other connections pass: the process
	 * reads fresh data, its writes land late.
	 */
	| { readonly kind: "hold-writes" }
	| { readonly kind: "drop" }
	| { readonly kind: "drop-reply" };

/** A started proxy. */
export interface FaultProxy {
	readonly port: number;
	readonly target: string;
	/** The host's own path fault. */
	setMode(mode: PathMode): void;
	/**
	 * `true`: hold every byte both ways (the storage stops answering: a storage pause as one host
	 * sees it); `false`: deliver what was held, in order.
	 */
	setHold(hold: boolean): void;
	/** Bytes received (from either side), forwarded, dropped; connections reset. */
	stats(): { received: number; forwarded: number; dropped: number; resets: number };
	close(): Promise<void>;
}

interface Queued {
	readonly chunk: Buffer;
	releaseAt: number;
}

/** One direction of one connection: an ordered queue released at each chunk's time. */
class Lane {
	readonly #dest: Socket;
	readonly #queue: Queued[] = [];
	#timer: NodeJS.Timeout | undefined;
	#last = 0;
	readonly #onForward: (bytes: number) => void;

	constructor(dest: Socket, onForward: (bytes: number) => void) {
		this.#dest = dest;
		this.#onForward = onForward;
	}

	/** Queues `chunk` for `releaseAt` (ms, `performance.now()`); `Infinity` holds it. */
	push(chunk: Buffer, releaseAt: number): void {
		// Never overtake an earlier chunk: a byte stream stays in order whatever the modes do.
		const at = Math.max(releaseAt, this.#last);
		this.#last = at === Number.POSITIVE_INFINITY ? this.#last : at;
		this.#queue.push({ chunk, releaseAt: at });
		this.flush();
	}

	/** Releases held chunks now. */
	unhold(now: number): void {
		for (const q of this.#queue) if (q.releaseAt === Number.POSITIVE_INFINITY) q.releaseAt = now;
		this.#last = Math.max(this.#last, now);
		this.flush();
	}

	flush(): void {
		if (this.#timer !== undefined) clearTimeout(this.#timer);
		this.#timer = undefined;
		const now = performance.now();
		while (this.#queue.length > 0 && (this.#queue[0] as Queued).releaseAt <= now) {
			const { chunk } = this.#queue.shift() as Queued;
			if (!this.#dest.destroyed) {
				this.#dest.write(chunk);
				this.#onForward(chunk.length);
			}
		}
		const head = this.#queue[0];
		if (head !== undefined && head.releaseAt !== Number.POSITIVE_INFINITY) {
			this.#timer = setTimeout(() => this.flush(), head.releaseAt - now);
		}
	}

	clear(): void {
		if (this.#timer !== undefined) clearTimeout(this.#timer);
		this.#queue.length = 0;
	}

	/** Chunks still queued (held or delayed). */
	get pending(): number {
		return this.#queue.length;
	}
}

interface Conn {
	readonly client: Socket;
	readonly upstream: Socket;
	readonly up: Lane;
	readonly down: Lane;
	/** A drop touched its bytes: reset it when the drop ends. */
	tainted: boolean;
	/** `hold-writes` caught a write on it: everything it sends waits for the hold's end. */
	holdingWrites: boolean;
}

/** A DynamoDB write request's target header (HTTP/1.1, headers in one chunk). */
const DYNAMODB_WRITE =
	/x-amz-target:\s*DynamoDB_\d+\.(PutItem|BatchWriteItem|TransactWriteItems|UpdateItem|DeleteItem)/i;

/**
 * Starts a proxy on 127.0.0.1 (a free port) to `targetHost:targetPort`.
 *
 * @example
 * ```ts
 * const proxy = await startFaultProxy("127.0.0.1", 8000);
 * proxy.setMode({ kind: "delay", ms: 300 });
 * ```
 */
export function startFaultProxy(targetHost: string, targetPort: number): Promise<FaultProxy> {
	let mode: PathMode = { kind: "pass" };
	let hold = false;
	const conns = new Set<Conn>();
	const totals = { received: 0, forwarded: 0, dropped: 0, resets: 0 };
	const held = (): boolean => hold || mode.kind === "hold";
	const release = (): void => {
		const now = performance.now();
		for (const c of conns) {
			c.holdingWrites = false;
			c.up.unhold(now);
			c.down.unhold(now);
		}
	};
	const count = (bytes: number): void => {
		totals.forwarded += bytes;
	};

	const route = (conn: Conn, chunk: Buffer, direction: "up" | "down"): void => {
		totals.received += chunk.length;
		if (mode.kind === "drop" || (mode.kind === "drop-reply" && direction === "down")) {
			conn.tainted = true;
			totals.dropped += chunk.length;
			return;
		}
		if (
			mode.kind === "hold-writes" &&
			direction === "up" &&
			!conn.holdingWrites &&
			DYNAMODB_WRITE.test(chunk.toString("latin1"))
		)
			conn.holdingWrites = true;
		const now = performance.now();
		const at =
			held() || (direction === "up" && conn.holdingWrites)
				? Number.POSITIVE_INFINITY
				: mode.kind === "delay"
					? now + mode.ms
					: now;
		(direction === "up" ? conn.up : conn.down).push(chunk, at);
	};

	const server: Server = createServer((client) => {
		const upstream = connect(targetPort, targetHost);
		const conn: Conn = {
			client,
			upstream,
			up: new Lane(upstream, count),
			down: new Lane(client, count),
			tainted: mode.kind === "drop",
			holdingWrites: false,
		};
		conns.add(conn);
		const end = (): void => {
			conn.up.clear();
			conn.down.clear();
			client.destroy();
			upstream.destroy();
			conns.delete(conn);
		};
		// The client gave up (a timeout, its process died): what it sent and the path still holds
		// is delivered anyway, late, as a network would; only then is the upstream closed.
		const clientGone = (): void => {
			conn.down.clear();
			client.destroy();
			if (conn.up.pending === 0 || upstream.destroyed) {
				end();
				return;
			}
			const drained = setInterval(() => {
				if (conn.up.pending > 0 && !upstream.destroyed) return;
				clearInterval(drained);
				// Give the storage a moment to take the last request before the connection closes.
				setTimeout(end, 50);
			}, 20);
		};
		client.on("error", clientGone);
		upstream.on("error", end);
		client.on("close", clientGone);
		upstream.on("close", end);
		client.on("data", (chunk: Buffer) => route(conn, chunk, "up"));
		upstream.on("data", (chunk: Buffer) => route(conn, chunk, "down"));
	});

	const resetTainted = (): void => {
		for (const c of [...conns]) {
			if (!c.tainted) continue;
			totals.resets++;
			c.client.resetAndDestroy();
			c.upstream.destroy();
		}
	};

	return new Promise((resolve, reject) => {
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			server.off("error", reject);
			resolve({
				port: (server.address() as AddressInfo).port,
				target: `${targetHost}:${targetPort}`,
				setMode(next) {
					const wasDropping = mode.kind === "drop" || mode.kind === "drop-reply";
					const wasHeld = held() || mode.kind === "hold-writes";
					mode = next;
					if (wasDropping) resetTainted();
					if (wasHeld && !held() && mode.kind !== "hold-writes") release();
				},
				setHold(next) {
					const wasHeld = held();
					hold = next;
					if (wasHeld && !held()) release();
				},
				stats: () => ({ ...totals }),
				close: () =>
					new Promise<void>((done) => {
						for (const c of conns) {
							c.up.clear();
							c.down.clear();
							c.client.destroy();
							c.upstream.destroy();
						}
						server.close(() => done());
					}),
			});
		});
	});
}
