// The port the chaos tool gives its own DynamoDB Local: one that no other process's listen(0) can
// take between the check and DynamoDB Local's bind (CI's Cassandra series starts fault proxies on
// listen(0) ports at the same time; one took such a port once, and the DynamoDB series talked
// to Cassandra).
import { createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { ephemeralPorts, freePort } from "../src/dynamo-local.ts";

const listen0 = (): Promise<{ port: number; close: () => Promise<void> }> =>
	new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const address = server.address();
			resolve({
				port: typeof address === "object" && address !== null ? address.port : 0,
				close: () => new Promise((r) => server.close(() => r())),
			});
		});
	});

describe("DynamoDB Local's port", () => {
	it("is below the kernel's ephemeral range, where listen(0) takes its ports, and nothing listens there", async () => {
		const { low } = ephemeralPorts();
		const taken = await Promise.all(Array.from({ length: 20 }, listen0));
		try {
			for (const { port } of taken) expect(port).toBeGreaterThanOrEqual(low);
			for (let i = 0; i < 20; i++) {
				const port = await freePort();
				expect(port).toBeLessThan(low);
				expect(port).toBeGreaterThanOrEqual(1024);
				// Free on every address: DynamoDB Local binds them all.
				const probe = createServer();
				await new Promise<void>((resolve, reject) => {
					probe.once("error", reject);
					probe.listen(port, () => resolve());
				});
				await new Promise<void>((r) => probe.close(() => r()));
			}
		} finally {
			await Promise.all(taken.map((t) => t.close()));
		}
	});
});
