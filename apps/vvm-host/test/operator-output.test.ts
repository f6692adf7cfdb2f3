import { createServer } from "node:net";
import { Writable } from "node:stream";
import { MockClock } from "@vvm/clock";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { provideVVM } from "@vvm/orch";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { pino } from "pino";
import { describe, expect, it } from "vitest";
import { createWaitingReporter } from "../src/waiting-reporter.ts";
import { runCli } from "./support/host-process.ts";

const NOW = 1_700_000_000_000;
const settle = async (): Promise<void> => {
	for (let i = 0; i < 5; i++) await new Promise<void>((r) => setImmediate(r));
};

describe("the host tells the operator what is going on", () => {
	it("while the slot is held elsewhere: who holds it and until when, then every 5 s", async () => {
		const clock = new MockClock(NOW);
		const driver = createMemTTLStorage({ clock });
		const storage = vvmLeadershipStorage(driver);
		expect(await storage.insertIfNotExist(1, "10.0.0.9:8080#aaaaaaaaaaaa", 20)).toBe(true);
		const lines: Array<Record<string, unknown>> = [];
		const logger = pino(
			{ level: "info" },
			new Writable({
				write(chunk: Buffer, _enc, done) {
					lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
					done();
				},
			}),
		);
		const report = createWaitingReporter({
			logger,
			leadership: storage,
			driver,
			monotonic: () => clock.monotonic(),
			now: () => clock.now(),
		});
		const vvm = provideVVM({
			storage,
			address: "10.0.0.5:8080#bbbbbbbbbbbb",
			clock,
			killer: { schedule: () => {} },
			onEvent: report,
		});
		const launched = vvm.launch(20, 60_000);
		// One attempt per second for 12 s: lines at 0, 5 and 10 s, not one per attempt.
		for (let s = 0; s < 12; s++) {
			await settle();
			await clock.advanceAsync(1_000);
		}
		await settle();
		const waiting = lines.filter((l) => l.event === "waiting");
		expect(waiting.map((l) => [l.level, l.holder, l.address, l.until])).toEqual([
			[30, "10.0.0.9:8080#aaaaaaaaaaaa", "10.0.0.9:8080", new Date(NOW + 20_000).toISOString()],
			[30, "10.0.0.9:8080#aaaaaaaaaaaa", "10.0.0.9:8080", new Date(NOW + 20_000).toISOString()],
			[30, "10.0.0.9:8080#aaaaaaaaaaaa", "10.0.0.9:8080", new Date(NOW + 20_000).toISOString()],
		]);
		expect(String(waiting[0]?.msg)).toContain("held by 10.0.0.9:8080#aaaaaaaaaaaa until");
		// The record expires at +20 s: the host takes the slot, and the reporter falls silent.
		await clock.advanceAsync(10_000);
		expect((await launched).aborted).toBe(false);
		const count = lines.filter((l) => l.event === "waiting").length;
		await clock.advanceAsync(20_000);
		expect(lines.filter((l) => l.event === "waiting").length).toBe(count);
		await vvm.shutdown();
	});

	it("--version prints the host's and Node's versions", async () => {
		const { code, stdout } = await runCli(["--version"]);
		expect({ code, stdout: stdout.trim() }).toEqual({
			code: 0,
			stdout: expect.stringMatching(/^vvm-host \d+\.\d+\.\d+ \(Node\.js v\d+\.\d+\.\d+\)$/),
		});
	});

	it("a port in use points at --http-port", async () => {
		const taken = createServer();
		await new Promise<void>((r) => taken.listen(0, "127.0.0.1", () => r()));
		const { port } = taken.address() as { port: number };
		try {
			const { code, stderr } = await runCli(["--storage", "mem", "--http-port", String(port)]);
			expect(code).toBe(1);
			expect(stderr).toContain("the port is in use: choose another with --http-port");
		} finally {
			taken.close();
		}
	}, 30_000);

	it("an address this machine does not have points at --http-host", async () => {
		const { code, stderr } = await runCli([
			"--storage",
			"mem",
			"--http-host",
			"192.0.2.1", // TEST-NET-1: never a local address
			"--http-port",
			"0",
			"--insecure-no-auth", // not loopback: without it the host refuses before binding
		]);
		expect(code).toBe(1);
		expect(stderr).toContain("check --http-host");
		expect(stderr).not.toContain("--http-port");
	}, 30_000);
});
