// The port the chaos tool gives its own DynamoDB Local (and tests give servers they start in
// another process): one that no other process's listen(0) can take between the check and the
// server's bind. CI's Cassandra series starts fault proxies on listen(0) ports while the DynamoDB
// series starts; one took such a port once, and the DynamoDB series talked to Cassandra.
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { unusedPort } from "@vvm/vitest-config/servers";
import { describe, expect, it } from "vitest";

const listen = (
	port: number,
	host?: string,
): Promise<{ port: number; close: () => Promise<void> }> =>
	new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(port, host, () => {
			const address = server.address();
			resolve({
				port: typeof address === "object" && address !== null ? address.port : 0,
				close: () => new Promise((r) => server.close(() => r())),
			});
		});
	});

const ephemeralLow = Number(
	readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
);

describe("unusedPort", () => {
	it("is below the kernel's ephemeral range, where listen(0) takes its ports, and free on every address", async () => {
		const taken = await Promise.all(Array.from({ length: 20 }, () => listen(0, "127.0.0.1")));
		try {
			for (const { port } of taken) expect(port).toBeGreaterThanOrEqual(ephemeralLow);
			for (let i = 0; i < 20; i++) {
				const port = await unusedPort();
				expect(port).toBeLessThan(ephemeralLow);
				expect(port).toBeGreaterThanOrEqual(1024);
				// DynamoDB Local binds every address: so must the port.
				await (await listen(port)).close();
			}
		} finally {
			await Promise.all(taken.map((t) => t.close()));
		}
	});
});
