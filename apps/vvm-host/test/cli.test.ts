import { afterAll, describe, expect, it } from "vitest";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, runCli, spawnHost } from "./support/host-process.ts";

const spawned: HostProcess[] = [];
afterAll(() => {
	for (const h of spawned) killHard(h);
});

describe("vvm-host CLI", () => {
	it("--help explains every option and exits 0", async () => {
		const { code, stdout } = await runCli(["--help"]);
		expect(code).toBe(0);
		expect(stdout).toContain("Usage: vvm-host");
		expect(stdout).toContain("--leadership-seconds");
		expect(stdout).toContain("env VVM_HTTP_PORT");
	});

	it.each([
		[["--http-port", "x"], {}, "--http-port must be an integer"],
		[["--storage", "sqlite"], {}, "--storage must be one of"],
		[[], { VVM_NUM: "0" }, "VVM_NUM must be an integer"],
		[["--what"], {}, "Unknown option '--what'"],
	])("bad config %j %j exits 2 with a message", async (args, env, message) => {
		const { code, stderr, stdout } = await runCli(args, env);
		expect(code).toBe(2);
		expect(stderr).toContain("vvm-host: bad configuration:");
		expect(stderr).toContain(message);
		expect(stdout).toBe(""); // nothing started
	});

	it("runs on mem storage: health, readiness, leadership, metrics, work; SIGTERM exits 0 and releases", async () => {
		const host = spawnHost("mem-host", [
			"--storage",
			"mem",
			"--http-port",
			"0",
			"--leadership-seconds",
			"4",
			"--log-level",
			"debug",
		]);
		spawned.push(host);
		const port = await host.port();
		await host.waitFor((l) => l.event === "services-started");
		const base = `http://127.0.0.1:${port}`;

		const health = await fetch(`${base}/healthz`);
		expect(health.status).toBe(200);
		expect(await health.json()).toMatchObject({ status: "ok" });

		const ready = await fetch(`${base}/readyz`);
		expect(ready.status).toBe(200);
		expect(await ready.json()).toMatchObject({ ready: true, slot: 1 });

		const leadership = (await (await fetch(`${base}/leadership`)).json()) as Record<
			string,
			unknown
		>;
		expect(leadership).toMatchObject({
			leader: true,
			slot: 1,
			address: `127.0.0.1:${port}`,
			holder: expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1:${port}#[0-9a-f]{12}$`)),
			durationSeconds: 4,
			leaseValid: true,
		});
		expect(leadership.timeLeftMs).toBeGreaterThan(0);
		expect(leadership.timeLeftMs).toBeLessThanOrEqual(3_200);

		const metrics = await fetch(`${base}/metrics`);
		expect(metrics.headers.get("content-type")).toContain("text/plain");
		const text = await metrics.text();
		expect(text).toMatch(/^vvm_leader 1$/m);
		expect(text).toMatch(/^vvm_leader_slot 1$/m);
		expect(text).toMatch(/^vvm_leadership_transitions_total\{to="leader"\} 1$/m);
		expect(text).toContain("vvm_leadership_renewals_total");
		expect(text).toContain("vvm_leadership_renewal_failures_total");
		expect(text).toContain("vvm_leadership_seconds_since_last_renewal");

		const work = await fetch(`${base}/work`, { method: "POST" });
		expect(work.status).toBe(200);
		// What the work was done under, as the chaos checker reads it (and as the log line says).
		const done = (await work.json()) as Record<string, unknown>;
		const acquired = host.lines.find((l) => l.event === "acquired");
		expect(done).toMatchObject({
			done: true,
			slot: 1,
			holder: acquired?.holder,
			incarnation: String(acquired?.holder).split("#")[1],
			fencingToken: acquired?.fencingToken,
		});
		expect(done.fencingToken).toBeGreaterThanOrEqual(1);
		expect(typeof done.mono).toBe("number");
		const logged = await host.waitFor((l) => l.event === "work" && l.source === "http");
		expect(logged).toMatchObject({ slot: 1, holder: done.holder, fencingToken: done.fencingToken });
		expect((await fetch(`${base}/nope`)).status).toBe(404);
		expect((await fetch(`${base}/healthz`, { method: "DELETE" })).status).toBe(405);

		host.child.kill("SIGTERM");
		const exit = await host.exited;
		expect(exit.code).toBe(0);
		const events = host.lines.map((l) => l.event);
		expect(events).toContain("released");
		expect(events.indexOf("released")).toBeGreaterThan(events.indexOf("shutdown-started"));
		expect(host.lines.at(-1)).toMatchObject({ event: "exit", code: 0 });
		for (const l of host.lines) expect(typeof l.time).toBe("number");
	});

	it("SIGINT shuts down gracefully too", async () => {
		const host = spawnHost("sigint-host", ["--storage", "mem", "--http-port", "0"]);
		spawned.push(host);
		await host.waitFor((l) => l.event === "services-started");
		host.child.kill("SIGINT");
		expect((await host.exited).code).toBe(0);
	});

	it("a busy HTTP port is a launch failure: exit 1 with a message", async () => {
		const first = spawnHost("port-owner", ["--storage", "mem", "--http-port", "0"]);
		spawned.push(first);
		const port = await first.port();
		const { code, stderr } = await runCli(["--storage", "mem", "--http-port", String(port)]);
		expect(code).toBe(1);
		expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}`);
		first.child.kill("SIGTERM");
		expect((await first.exited).code).toBe(0);
	});
});
