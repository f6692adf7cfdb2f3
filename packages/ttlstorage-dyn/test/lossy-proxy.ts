// A TCP proxy on 127.0.0.1 in front of DynamoDB Local that loses one answer on purpose: it counts
// the HTTP requests that reach the server, and for the next request once armed either holds it
// until after the client gave up and then delivers it ("late"), or delivers it, drops the answer
// and resets the client's connection ("reset").
import type { AddressInfo, Socket } from "node:net";
import { connect, createServer } from "node:net";

/** How the next request loses its answer. */
export type LossKind = "late" | "reset";

/** A started proxy. */
export interface LossyProxy {
	readonly port: number;
	/** HTTP requests that reached the server through the proxy so far. */
	requests(): number;
	/**
	 * Makes the next request lose its answer; resolves once the server answered it (for "late":
	 * after {@link deliver}).
	 */
	arm(kind: LossKind): { readonly answered: Promise<void> };
	/** "late": sends the held request to the server now (its client has given up by then). */
	deliver(): void;
	close(): Promise<void>;
}

const REQUEST_LINE = /(?:POST|GET) \/ HTTP\/1\.1\r\n/g;

export async function startLossyProxy(targetHost: string, targetPort: number): Promise<LossyProxy> {
	let requests = 0;
	let armed: { kind: LossKind; answered: () => void } | undefined;
	let held: { deliver: () => void } | undefined;
	const sockets = new Set<Socket>();
	const proxy = createServer((client) => {
		const server = connect({ host: targetHost, port: targetPort });
		sockets.add(client).add(server);
		let sentText = "";
		let counted = 0;
		/** Forwards client bytes to the server, counting the request lines that reach it. */
		const forward = (chunk: Buffer) => {
			server.write(chunk);
			sentText += chunk.toString("latin1");
			const total = sentText.match(REQUEST_LINE)?.length ?? 0;
			requests += total - counted;
			counted = total;
		};
		let holding = false;
		const heldChunks: Buffer[] = [];
		let losing: { kind: LossKind; answered: () => void } | undefined;
		client.on("data", (chunk: Buffer) => {
			if (!holding && losing === undefined && armed !== undefined) {
				losing = armed;
				armed = undefined;
				if (losing.kind === "late") {
					holding = true;
					held = {
						deliver: () => {
							holding = false;
							for (const c of heldChunks.splice(0)) forward(c);
						},
					};
				}
			}
			if (holding) heldChunks.push(chunk);
			else forward(chunk);
		});
		server.on("data", (chunk: Buffer) => {
			if (losing === undefined) {
				if (!client.destroyed) client.write(chunk);
				return;
			}
			// The answer of the losing request: never reaches the client.
			const { kind, answered } = losing;
			losing = undefined;
			answered();
			if (kind === "reset") client.resetAndDestroy();
			server.destroy();
		});
		client.on("error", () => {});
		server.on("error", () => {});
		client.on("close", () => {
			// A request that loses its answer is still delivered, and answered, after its client
			// gave up.
			if (losing === undefined) server.destroy();
		});
		server.on("close", () => {
			if (!client.destroyed) client.destroy();
		});
	});
	await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
	return {
		port: (proxy.address() as AddressInfo).port,
		requests: () => requests,
		arm(kind) {
			let answered!: () => void;
			const promise = new Promise<void>((resolve) => {
				answered = resolve;
			});
			armed = { kind, answered };
			return { answered: promise };
		},
		deliver() {
			const h = held;
			held = undefined;
			h?.deliver();
		},
		async close() {
			for (const s of sockets) s.destroy();
			await new Promise<void>((resolve) => proxy.close(() => resolve()));
		},
	};
}
