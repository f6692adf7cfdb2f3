// The host's command path through HTTP, measured against its parts, in one run:
// - a reference row: a bare node:http server answering the same-size JSON POST (what HTTP alone
//   costs on this machine, now);
// - the built host (apps/vvm-host/dist) serving one-record creates, per storage (level; Cassandra
//   and DynamoDB Local when they are listening), per SequencesTrustLevel, per variant (the safe
//   default, and the test-only `unfenced` mutant, to price the fence), rounds interleaved so the
//   machine's noise falls on every row alike.
// Throughput, p50/p99 latency, the host's CPU per request (from /proc/<pid>/stat of the host
// process, not the client) and the client's own CPU per request.
//
//   pnpm bench                                   # everything that can run here
//   BENCH_STORAGES=level BENCH_LEVELS=0 BENCH_SECONDS=6 pnpm bench
//   BENCH_VARIANTS=fenced,unfenced BENCH_ROUNDS=3 pnpm bench
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { connect } from "node:net";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";

type Storage = "level" | "cas" | "dyn";
type Variant = "fenced" | "unfenced";

const env = process.env;
const list = (v: string | undefined, def: string): string[] =>
	(v ?? def)
		.split(",")
		.map((s) => s.trim())
		.filter((s) => s !== "");
const SECONDS = Number(env.BENCH_SECONDS ?? 6);
const CONCURRENCY = Number(env.BENCH_CONCURRENCY ?? 16);
const ROUNDS = Number(env.BENCH_ROUNDS ?? 2);
const LEVELS = list(env.BENCH_LEVELS, "0,2").map(Number) as (0 | 1 | 2)[];
const VARIANTS = list(env.BENCH_VARIANTS, "fenced,unfenced") as Variant[];
const WORKSPACES = Number(env.BENCH_WORKSPACES ?? 10_000);
const PARTITIONS = 10;
const HOST_DIR = join(import.meta.dirname, "..");
const CLI = join(HOST_DIR, "dist/cli.mjs");
const BODY = '{"name":"Ada Lovelace"}';
const CLK_TCK = 100; // Linux USER_HZ

const portOpen = (port: number): Promise<boolean> =>
	new Promise((resolve) => {
		const s = connect(port, "127.0.0.1");
		s.once("connect", () => {
			s.destroy();
			resolve(true);
		});
		s.once("error", () => resolve(false));
	});

/** Drops what a host run created on a shared server. */
async function cleanup(storage: Storage, tag: string): Promise<void> {
	if (storage === "cas") {
		const { Client } = await import("cassandra-driver");
		const client = new Client({
			contactPoints: ["127.0.0.1:9042"],
			localDataCenter: "datacenter1",
		});
		try {
			await client.execute(`DROP KEYSPACE IF EXISTS ${tag}`);
		} finally {
			await client.shutdown();
		}
	}
	if (storage === "dyn") {
		const { DynamoDBClient, DeleteTableCommand } = await import("@aws-sdk/client-dynamodb");
		const client = new DynamoDBClient({
			endpoint: "http://127.0.0.1:8000",
			region: "us-east-1",
			credentials: { accessKeyId: "local", secretAccessKey: "local" },
		});
		try {
			await client.send(new DeleteTableCommand({ TableName: tag }));
		} catch {
			// already gone
		} finally {
			client.destroy();
		}
	}
}

/** CPU time of a process so far, ms (user + system). */
function cpuMsOf(pid: number): number {
	const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
	const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
	return ((Number(fields[11]) + Number(fields[12])) / CLK_TCK) * 1000;
}

interface Server {
	readonly port: number;
	readonly pid: number;
	stop(): Promise<void>;
}

async function startHost(storage: Storage, level: number, variant: Variant): Promise<Server> {
	const tag = `bench${process.pid}x${Date.now().toString(36)}`;
	const dir = await mkdtemp(join(tmpdir(), "vvm-host-bench-"));
	const storageArgs =
		storage === "level"
			? ["--storage", "level", "--data-dir", dir]
			: storage === "cas"
				? ["--storage", "cas", "--cas-contact-points", "127.0.0.1:9042", "--cas-keyspace", tag]
				: [
						"--storage",
						"dyn",
						"--dyn-endpoint",
						"http://127.0.0.1:8000",
						"--dyn-table",
						tag,
						"--dyn-region",
						"us-east-1",
					];
	const child = spawn(
		process.execPath,
		[
			CLI,
			...storageArgs,
			"--http-port",
			"0",
			"--work-interval-ms",
			"0",
			"--partitions",
			String(PARTITIONS),
			"--sequences-trust-level",
			String(level),
			"--log-level",
			"info",
			...(variant === "unfenced" ? ["--unsafe-allow-mutants"] : []),
		],
		{
			cwd: HOST_DIR,
			stdio: ["ignore", "pipe", "inherit"],
			env: {
				...env,
				AWS_ACCESS_KEY_ID: "local",
				AWS_SECRET_ACCESS_KEY: "local",
				...(variant === "unfenced" ? { VVM_UNSAFE_MUTANTS: "unfenced" } : {}),
			},
		},
	);
	const port = await new Promise<number>((resolve, reject) => {
		child.once("exit", (code) => reject(new Error(`the host exited with ${code}`)));
		let p = 0;
		createInterface({ input: child.stdout }).on("line", (line) => {
			let l: { event?: string; port?: number };
			try {
				l = JSON.parse(line) as typeof l;
			} catch {
				return;
			}
			if (l.event === "listening") p = l.port ?? 0;
			// Static placement: the partitions deploy once this host leads its slot.
			if (l.event === "services-started" || l.event === "partitions-granted") resolve(p);
		});
	});
	// Every partition actualized: /readyz answers 200 then.
	for (;;) {
		const ready = await new Promise<boolean>((r) => {
			const req = request({ host: "127.0.0.1", port, path: "/readyz" }, (res) => {
				res.resume();
				r(res.statusCode === 200);
			});
			req.once("error", () => r(false));
			req.end();
		});
		if (ready) break;
		await new Promise((r) => setTimeout(r, 50));
	}
	return {
		port,
		pid: child.pid as number,
		stop: () =>
			new Promise<void>((resolve) => {
				child.removeAllListeners("exit");
				child.once("exit", () => {
					void cleanup(storage, tag)
						.then(() => rm(dir, { recursive: true, force: true }))
						.then(() => resolve());
				});
				child.kill("SIGTERM");
			}),
	};
}

/** The reference: node:http alone, answering the create's request shape with a same-size body. */
async function startBare(): Promise<Server> {
	const code = `
		const http = require("node:http");
		const answer = JSON.stringify({ CurrentWLogOffset: 123456, NewIDs: { "1": 322685000131072 } }) + "\\n";
		const server = http.createServer((req, res) => {
			const chunks = [];
			req.on("data", (c) => chunks.push(c));
			req.on("end", () => {
				JSON.parse(Buffer.concat(chunks).toString("utf8"));
				res.writeHead(201, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(answer), "cache-control": "no-store" });
				res.end(answer);
			});
		});
		server.listen(0, "127.0.0.1", () => console.log(server.address().port));
		process.on("SIGTERM", () => server.close(() => process.exit(0)));`;
	const child = spawn(process.execPath, ["-e", code], { stdio: ["ignore", "pipe", "inherit"] });
	const port = await new Promise<number>((resolve) => {
		createInterface({ input: child.stdout }).once("line", (l) => resolve(Number(l)));
	});
	return {
		port,
		pid: child.pid as number,
		stop: () =>
			new Promise((resolve) => {
				child.once("exit", () => resolve());
				child.kill("SIGTERM");
			}),
	};
}

function post(agent: Agent, port: number, path: string): Promise<number> {
	return new Promise((resolve, reject) => {
		const req = request(
			{
				host: "127.0.0.1",
				port,
				path,
				method: "POST",
				agent,
				headers: { "content-type": "application/json" },
			},
			(res) => {
				res.resume();
				res.once("end", () => resolve(res.statusCode ?? 0));
			},
		);
		req.once("error", reject);
		req.end(BODY);
	});
}

const pathOf = (wsid: number): string =>
	`/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/app1pkg.Customer`;

interface Measured {
	readonly ok: number;
	readonly perSecond: number;
	readonly p50: number;
	readonly p99: number;
	readonly hostCpuUs: number;
	readonly clientCpuUs: number;
	readonly errors: Record<string, number>;
}

/** Warm-up (every workspace once), then `SECONDS` of C concurrent keep-alive clients. */
async function measure(server: Server, warm: boolean): Promise<Measured> {
	const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
	if (warm) {
		let next = 1;
		await Promise.all(
			Array.from({ length: CONCURRENCY }, async () => {
				while (next <= WORKSPACES) await post(agent, server.port, pathOf(next++));
			}),
		);
	}
	const latencies: number[] = [];
	const statuses: Record<string, number> = {};
	const cpu0 = cpuMsOf(server.pid);
	const client0 = process.cpuUsage();
	const started = performance.now();
	const end = started + SECONDS * 1000;
	await Promise.all(
		Array.from({ length: CONCURRENCY }, async () => {
			while (performance.now() < end) {
				const wsid = 1 + Math.floor(Math.random() * WORKSPACES);
				const t0 = performance.now();
				const status = await post(agent, server.port, pathOf(wsid)).catch(() => 0);
				latencies.push(performance.now() - t0);
				statuses[status] = (statuses[status] ?? 0) + 1;
			}
		}),
	);
	const elapsed = (performance.now() - started) / 1000;
	const hostCpuMs = cpuMsOf(server.pid) - cpu0;
	const client = process.cpuUsage(client0);
	agent.destroy();
	latencies.sort((a, b) => a - b);
	const q = (p: number): number => latencies[Math.floor(p * (latencies.length - 1))] ?? 0;
	const ok = statuses["201"] ?? 0;
	const total = latencies.length;
	return {
		ok,
		perSecond: ok / elapsed,
		p50: q(0.5),
		p99: q(0.99),
		hostCpuUs: (hostCpuMs * 1000) / Math.max(1, total),
		clientCpuUs: (client.user + client.system) / Math.max(1, total),
		errors: Object.fromEntries(Object.entries(statuses).filter(([s]) => s !== "201")),
	};
}

const median = (xs: number[]): number => {
	const s = [...xs].sort((a, b) => a - b);
	return s.length === 0
		? 0
		: ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2;
};

interface Row {
	readonly label: string;
	readonly runs: Measured[];
}

function rowText(r: Row, reference?: number): string {
	const m = (f: (x: Measured) => number) => median(r.runs.map(f));
	const perSecond = m((x) => x.perSecond);
	const errors = r.runs.reduce((n, x) => n + Object.values(x.errors).reduce((a, b) => a + b, 0), 0);
	return `| ${r.label} | ${Math.round(perSecond).toLocaleString("en")} | ${reference === undefined ? "" : `${((100 * perSecond) / reference).toFixed(1)} %`} | ${m((x) => x.p50).toFixed(2)} | ${m((x) => x.p99).toFixed(2)} | ${Math.round(m((x) => x.hostCpuUs))} | ${Math.round(m((x) => x.clientCpuUs))} | ${errors} |`;
}

async function main(): Promise<void> {
	if (!existsSync(CLI))
		throw new Error(`no ${CLI}: run pnpm build first (the benchmark runs the built host)`);
	const storages: Storage[] = [];
	for (const s of list(env.BENCH_STORAGES, "level,cas,dyn") as Storage[]) {
		if (s === "level") storages.push(s);
		else if (await portOpen(s === "cas" ? 9042 : 8000)) storages.push(s);
		else
			console.error(
				`bench: ${s} is not listening on 127.0.0.1:${s === "cas" ? 9042 : 8000}; left out`,
			);
	}
	console.log(
		`host command path: one-record creates through HTTP, concurrency ${CONCURRENCY}, ${WORKSPACES} workspaces each touched once before, ${SECONDS} s per run, medians of ${ROUNDS} interleaved rounds; ${cpus().length} cores (${cpus()[0]?.model.trim()}), Node ${process.version}`,
	);
	const bare: Row = { label: "bare node:http, same request and answer size", runs: [] };
	const rows = new Map<string, Row>();
	for (let round = 0; round < ROUNDS; round++) {
		const b = await startBare();
		bare.runs.push(await measure(b, false));
		await b.stop();
		for (const storage of storages)
			for (const level of LEVELS)
				for (const variant of VARIANTS) {
					const label = `host on ${storage}, level ${level}, ${variant === "fenced" ? "fenced (default)" : "unfenced (test-only mutant)"}`;
					const host = await startHost(storage, level, variant);
					try {
						const row = rows.get(label) ?? { label, runs: [] };
						row.runs.push(await measure(host, true));
						rows.set(label, row);
					} finally {
						await host.stop();
					}
					process.stderr.write(`bench: round ${round + 1}/${ROUNDS} ${label} done\n`);
				}
	}
	const reference = median(bare.runs.map((x) => x.perSecond));
	console.log("");
	console.log(
		"| server | creates/s | of bare | p50 ms | p99 ms | host CPU µs/req | client CPU µs/req | non-201 |",
	);
	console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
	console.log(rowText(bare));
	for (const r of rows.values()) console.log(rowText(r, reference));
	console.log("");
	for (const storage of storages)
		for (const level of LEVELS) {
			const f = rows.get(`host on ${storage}, level ${level}, fenced (default)`);
			const u = rows.get(`host on ${storage}, level ${level}, unfenced (test-only mutant)`);
			if (f === undefined || u === undefined) continue;
			const fr = median(f.runs.map((x) => x.perSecond));
			const ur = median(u.runs.map((x) => x.perSecond));
			console.log(
				`fence cost on ${storage}, level ${level}: ${((100 * (ur - fr)) / ur).toFixed(1)} % fewer creates/s (${Math.round(fr)} vs ${Math.round(ur)}), host CPU ${Math.round(median(f.runs.map((x) => x.hostCpuUs)))} vs ${Math.round(median(u.runs.map((x) => x.hostCpuUs)))} µs/req`,
			);
		}
	console.log(
		`load average at the end: ${loadavg()
			.map((l) => l.toFixed(1))
			.join(" ")}`,
	);
}

await main();
