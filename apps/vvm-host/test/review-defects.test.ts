// Defects found in review: each case fails on the code it was written against.
import type { Socket } from "node:net";
import { createServer } from "node:net";
import { MockClock } from "@vvm/clock";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { provideVVM } from "@vvm/orch";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import { parseHostConfig } from "../src/config.ts";
import { createHostMetrics } from "../src/metrics.ts";
import { killHard, runCli, spawnHost } from "./support/host-process.ts";

const NOW = 1_700_000_000_000;

describe("review: metrics", () => {
	it("one lost leadership is one transition to follower", async () => {
		const clock = new MockClock(NOW);
		const storage = vvmLeadershipStorage(createMemTTLStorage({ clock }));
		let current: ReturnType<typeof provideVVM> | undefined;
		const metrics = createHostMetrics({
			leadership: () => current?.leadership(),
			leaseValid: () => current?.leaseValid() ?? false,
			monotonic: () => clock.monotonic(),
		});
		const vvm = provideVVM({
			storage,
			address: "10.0.0.5:8080#aaaaaaaaaaaa",
			clock,
			killer: { schedule: () => {} },
			onEvent: (event) => metrics.onEvent(event),
		});
		current = vvm;
		const problem = await vvm.launch(20, 0);
		expect(problem.aborted).toBe(false);
		// Another VVM overwrites the record: the next renewal fails, the leadership is lost.
		expect(
			await storage.compareAndSwap(
				1,
				"10.0.0.5:8080#aaaaaaaaaaaa",
				"10.0.0.6:8080#bbbbbbbbbbbb",
				20,
			),
		).toBe(true);
		await clock.advanceAsync(5_000);
		expect(problem.aborted).toBe(true);
		await vvm.shutdown();
		const text = await metrics.registry.metrics();
		const transitions = (to: string): number =>
			Number(
				new RegExp(`^vvm_leadership_transitions_total\\{to="${to}"\\} (\\d+)$`, "m").exec(
					text,
				)?.[1],
			);
		expect({ toLeader: transitions("leader"), toFollower: transitions("follower") }).toEqual({
			toLeader: 1,
			toFollower: 1,
		});
	});
});

describe("review: configuration", () => {
	it("an upper-case --cas-keyspace (which the Cassandra driver refuses) is a bad configuration: exit 2 before any I/O", async () => {
		// The review found parseHostConfig accepting it (its own check allowed A-Z), so the CLI
		// connected to Cassandra first (here a closed port) and exited 1 instead of 2. Now the
		// driver's own rule rejects it while parsing, naming the flag.
		expect(() => parseHostConfig(["--storage", "cas", "--cas-keyspace", "Vvm"], {})).toThrow(
			/--cas-keyspace must match/,
		);
		const { code, stderr } = await runCli([
			"--storage",
			"cas",
			"--cas-keyspace",
			"Vvm",
			"--cas-contact-points",
			"127.0.0.1:1",
			"--http-port",
			"0",
		]);
		expect({ code, stderr: stderr.slice(0, 300) }).toEqual({
			code: 2,
			stderr: expect.stringContaining("bad configuration"),
		});
	}, 60_000);
});

describe("review: stopping during start-up", () => {
	it("SIGTERM is honoured while the DynamoDB endpoint accepts connections but never answers", async () => {
		const sockets: Socket[] = [];
		const blackHole = createServer((socket) => {
			sockets.push(socket);
		});
		await new Promise<void>((r) => blackHole.listen(0, "127.0.0.1", () => r()));
		const port = (blackHole.address() as { port: number }).port;
		const host = spawnHost("stuck-start", [
			"--storage",
			"dyn",
			"--dyn-endpoint",
			`http://127.0.0.1:${port}`,
			"--http-port",
			"0",
		]);
		try {
			await host.waitFor((l) => l.event === "starting");
			await new Promise((r) => setTimeout(r, 1_000));
			process.kill(host.pid, "SIGTERM");
			await host.waitFor((l) => l.event === "signal");
			// host.ts: "Stop requests (signals) are honoured at every stage from here on."
			const outcome = await Promise.race([
				host.exited.then((e) => `exited (code ${e.code}, signal ${e.signal})`),
				new Promise<string>((r) => setTimeout(() => r("still running 10 s after SIGTERM"), 10_000)),
			]);
			expect(outcome).toMatch(/^exited/);
		} finally {
			killHard(host);
			for (const socket of sockets) socket.destroy();
			blackHole.close();
		}
	}, 40_000);
});
