// A TCP proxy the test can pause: while paused, requests hang (no bytes forwarded, no reply),
// which is how a storage that stops answering looks to one host, without touching the server.
import type { AddressInfo, Server, Socket } from "node:net";
import { connect, createServer } from "node:net";

export interface PausableProxy {
	readonly port: number;
	pause(): void;
	close(): Promise<void>;
}

export function startPausableProxy(targetHost: string, targetPort: number): Promise<PausableProxy> {
	let paused = false;
	const sockets = new Set<Socket>();
	const server: Server = createServer((client) => {
		sockets.add(client);
		client.on("close", () => sockets.delete(client));
		client.on("error", () => {});
		if (paused) return; // accept, never answer
		const upstream = connect(targetPort, targetHost);
		sockets.add(upstream);
		upstream.on("close", () => sockets.delete(upstream));
		upstream.on("error", () => client.destroy());
		client.on("data", (chunk) => {
			if (!paused) upstream.write(chunk);
		});
		upstream.on("data", (chunk) => {
			if (!paused) client.write(chunk);
		});
		client.on("close", () => upstream.destroy());
	});
	return new Promise((resolve) => {
		server.listen(0, "127.0.0.1", () => {
			resolve({
				port: (server.address() as AddressInfo).port,
				pause() {
					paused = true;
				},
				close: () =>
					new Promise<void>((done) => {
						for (const s of sockets) s.destroy();
						server.close(() => done());
					}),
			});
		});
	});
}
