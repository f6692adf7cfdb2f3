// Throughput and latency of one-record creates through the host's HTTP API (API v2), end to end:
// a host process (from the sources) on level storage in a temp directory, C concurrent clients
// with keep-alive, each create in a random one of 10 000 workspaces.
//
//   pnpm --filter @vvm/vvm-host bench                 # levels 0 and 2, concurrency 1 and 16, 5 s each
//   SECONDS_PER_RUN=10 LEVELS=0 CONCURRENCY=16 pnpm --filter @vvm/vvm-host bench
import { spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

const seconds = Number(process.env.SECONDS_PER_RUN ?? 5);
const levels = (process.env.LEVELS ?? "0,2").split(",").map(Number);
const concurrencies = (process.env.CONCURRENCY ?? "1,16").split(",").map(Number);
const WORKSPACES = 10_000;

async function startHost(
	dir: string,
	level: number,
): Promise<{ port: number; stop: () => Promise<void> }> {
	const child = spawn(
		process.execPath,
		[
			"--import",
			"tsx",
			"--conditions=@vvm/source",
			"src/cli.ts",
			"--storage",
			"level",
			"--data-dir",
			dir,
			"--http-port",
			"0",
			"--work-interval-ms",
			"0",
			"--sequences-trust-level",
			String(level),
		],
		{ cwd: join(import.meta.dirname, ".."), stdio: ["ignore", "pipe", "inherit"] },
	);
	let port = 0;
	await new Promise<void>((resolve, reject) => {
		child.once("exit", (code) => reject(new Error(`host exited with ${code}`)));
		createInterface({ input: child.stdout }).on("line", (line) => {
			const l = JSON.parse(line) as { event?: string; port?: number };
			if (l.event === "listening") port = l.port ?? 0;
			if (l.event === "services-started") resolve();
		});
	});
	return {
		port,
		stop: () =>
			new Promise((resolve) => {
				child.removeAllListeners("exit");
				child.once("exit", () => resolve());
				child.kill("SIGTERM");
			}),
	};
}

function post(agent: Agent, port: number, path: string, body: string): Promise<number> {
	return new Promise((resolve, reject) => {
		const req = request({ host: "127.0.0.1", port, path, method: "POST", agent }, (res) => {
			res.resume();
			res.once("end", () => resolve(res.statusCode ?? 0));
		});
		req.once("error", reject);
		req.end(body);
	});
}

async function run(level: number, concurrency: number): Promise<string> {
	const dir = await mkdtemp(join(tmpdir(), "vvm-host-bench-"));
	const host = await startHost(dir, level);
	const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
	const latencies: number[] = [];
	const statuses = new Map<number, number>();
	// Warm-up: the partitions are actualized and the connections open before the clock starts.
	for (let i = 0; i < 50; i++)
		await post(
			agent,
			host.port,
			"/api/v2/apps/vvm/demo/workspaces/1/docs/app1pkg.Customer",
			'{"name":"w"}',
		);
	const end = performance.now() + seconds * 1000;
	const started = performance.now();
	await Promise.all(
		Array.from({ length: concurrency }, async () => {
			while (performance.now() < end) {
				const wsid = 1 + Math.floor(Math.random() * WORKSPACES);
				const t0 = performance.now();
				const status = await post(
					agent,
					host.port,
					`/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/app1pkg.Customer`,
					'{"name":"Ada"}',
				);
				latencies.push(performance.now() - t0);
				statuses.set(status, (statuses.get(status) ?? 0) + 1);
			}
		}),
	);
	const elapsed = (performance.now() - started) / 1000;
	agent.destroy();
	await host.stop();
	await rm(dir, { recursive: true, force: true });
	latencies.sort((a, b) => a - b);
	const q = (p: number): string =>
		(latencies[Math.floor(p * (latencies.length - 1))] ?? 0).toFixed(2);
	const ok = statuses.get(201) ?? 0;
	return `| ${level} | ${concurrency} | ${Math.round(ok / elapsed)} | ${q(0.5)} | ${q(0.99)} | ${JSON.stringify(Object.fromEntries(statuses))} |`;
}

console.log("| level | concurrency | creates/s | p50 ms | p99 ms | answers |");
console.log("| --- | --- | --- | --- | --- | --- |");
for (const level of levels) for (const c of concurrencies) console.log(await run(level, c));
