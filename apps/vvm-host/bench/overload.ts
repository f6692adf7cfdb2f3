// Overload (issue 34): the built host (level storage, default flags) under an open-loop load of
// one-record creates at a multiple of its measured capacity. Requests go out on a fixed schedule,
// whatever the answers (open loop: a slow host is not spared load, as clients do not spare it).
// Reported: the offered and served rates, how many were shed (503, committed "no"), the p99 of
// accepted creates against the unloaded p99, the host's RSS over the run; to tell where the time
// goes: accepted and shed latency percentiles, the same per 5 s window of sending, the host's
// queued commands and a trivial request's round trip (GET /metrics: the host's event loop and HTTP,
// which no partition queue sees) once a second, this client's own event-loop delay, and the host's
// own create-latency histogram over the open loop; then the host stops
// gracefully and the storage is read back: every accepted create is applied once
// (`checkCpStorage`) and no shed create wrote anything (its unique name is in no WLog entry).
//
// OVERLOAD_VARIANTS runs the whole measurement once per variant, each a fresh host with these
// extra flags (variants separated by "|"), one after the other in one run: before/after figures
// on one machine state. A variant's first word `cli=<path>` runs that build of the CLI instead
// (e.g. a copy of an earlier dist/). The machine's load average is printed beside each result.
//
//   pnpm --filter @vvm/vvm-host overload                 # 3x capacity for 60 s, default flags
//   OVERLOAD_FACTOR=3 OVERLOAD_SECONDS=60 OVERLOAD_CONNECTIONS=512 pnpm --filter @vvm/vvm-host overload
//   OVERLOAD_VARIANTS="--max-event-loop-delay-ms off|" pnpm --filter @vvm/vvm-host overload
//   OVERLOAD_TIMEOUT_MS=10000 (a client's timeout, default 30 s; 0: none)
//   OVERLOAD_HOST_LOG=/tmp/host.log (the host's log lines appended there: its shed lines show the bound)
//   OVERLOAD_HOST_CPUS=0 OVERLOAD_CLIENT_CPUS=1 (taskset CPU lists: the host and this client on
//   cores of their own, so the client's work does not take the host's CPU; capacity is measured
//   under the same pinning). By default, on a machine of 2 or more CPUs with taskset, the host
//   gets the first half of the CPUs and this client the rest (as a load generator on a machine
//   of its own would); OVERLOAD_PIN=0 leaves both to the scheduler.
import { spawn, spawnSync } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { Agent, request } from "node:http";
import { availableParallelism, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay, PerformanceObserver } from "node:perf_hooks";
import { createInterface } from "node:readline";
import { createCommandProcessor } from "@vvm/cp";
import type { AcknowledgedCommand } from "@vvm/cp/testing";
import { checkCpStorage } from "@vvm/cp/testing";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";

const env = process.env;
const FACTOR = Number(env.OVERLOAD_FACTOR ?? 3);
const SECONDS = Number(env.OVERLOAD_SECONDS ?? 60);
const CAPACITY_SECONDS = Number(env.OVERLOAD_CAPACITY_SECONDS ?? 10);
const CONNECTIONS = Number(env.OVERLOAD_CONNECTIONS ?? 512);
/**
 * A client gives up on a request after this long (counted as `timeout`, neither accepted nor
 * shed: it may or may not have been applied); 0: never. Without it a host that collapsed keeps
 * the run going until its whole backlog is answered.
 */
const TIMEOUT_MS = Number(env.OVERLOAD_TIMEOUT_MS ?? 30_000);
const WORKSPACES = 200;
const PARTITIONS = 10;
const APP_ID = 1;
const CLI = env.OVERLOAD_CLI ?? join(import.meta.dirname, "..", "dist", "cli.mjs");
/**
 * taskset CPU lists for the host and for this client: given, or by default the first half of
 * the CPUs for the host and the rest for this client (2+ CPUs and taskset present; a client
 * sharing the host's cores delays the answers it times: 15x the unloaded p99 unpinned where the
 * pinned runs gave 3-6x); `OVERLOAD_PIN=0`: the scheduler's choice.
 */
const defaultPinning = (): { host?: string; client?: string } => {
	const cpus = availableParallelism();
	if (env.OVERLOAD_PIN === "0" || cpus < 2) return {};
	if (spawnSync("taskset", ["-V"]).status !== 0) return {};
	const half = Math.floor(cpus / 2);
	const range = (from: number, to: number): string => (from === to ? `${from}` : `${from}-${to}`);
	return { host: range(0, half - 1), client: range(half, cpus - 1) };
};
const pinning =
	env.OVERLOAD_HOST_CPUS === undefined && env.OVERLOAD_CLIENT_CPUS === undefined
		? defaultPinning()
		: { host: env.OVERLOAD_HOST_CPUS, client: env.OVERLOAD_CLIENT_CPUS };
const HOST_CPUS = pinning.host;
/** OVERLOAD_HOST_LOG: a file the host's log lines are appended to (else drained unread). */
const HOST_LOG = env.OVERLOAD_HOST_LOG;
const CLIENT_CPUS = pinning.client;
for (const [name, cpus] of [
	["OVERLOAD_HOST_CPUS", HOST_CPUS],
	["OVERLOAD_CLIENT_CPUS", CLIENT_CPUS],
] as const)
	if (cpus !== undefined && !/^\d+([-,]\d+)*$/.test(cpus))
		throw new Error(`${name} must be a taskset CPU list such as 0 or 0-1 or 0,2, got "${cpus}"`);
if (CLIENT_CPUS !== undefined) {
	const pinned = spawnSync("taskset", ["-p", "-a", "-c", CLIENT_CPUS, String(process.pid)]);
	if (pinned.status !== 0)
		throw new Error(`taskset could not pin this client to ${CLIENT_CPUS}: ${pinned.stderr}`);
}
/** Each variant's extra host flags; one variant (the default flags) unless OVERLOAD_VARIANTS. */
const VARIANTS = (env.OVERLOAD_VARIANTS ?? "")
	.split("|")
	.map((v) => v.trim().split(/\s+/).filter(Boolean));
const load = (): string =>
	loadavg()
		.map((l) => l.toFixed(2))
		.join(" ");

const log = (line: string): void => {
	process.stderr.write(`overload: ${line}\n`);
};

interface Host {
	readonly pid: number;
	readonly port: number;
	stop(): Promise<number | null>;
}

async function startHost(dir: string, extra: readonly string[]): Promise<Host> {
	const cli = extra[0]?.startsWith("cli=") ? extra[0].slice(4) : CLI;
	// taskset execs the node binary: the child's pid is the host's (its CPU is read from /proc).
	const pin = HOST_CPUS === undefined ? [] : ["-c", HOST_CPUS, process.execPath];
	const child = spawn(
		HOST_CPUS === undefined ? process.execPath : "taskset",
		[
			...pin,
			cli,
			"--storage",
			"level",
			"--data-dir",
			dir,
			"--http-port",
			"0",
			"--log-level",
			"info",
			...extra.filter((word) => !word.startsWith("cli=")),
		],
		{
			stdio: ["ignore", "pipe", "inherit"],
		},
	);
	const exited = new Promise<number | null>((resolve) =>
		child.once("exit", (code) => resolve(code)),
	);
	const port = await new Promise<number>((resolve, reject) => {
		const lines = createInterface({ input: child.stdout });
		lines.on("line", (line) => {
			try {
				const l = JSON.parse(line) as { event?: string; port?: number; url?: string };
				if (l.event === "listening") {
					resolve(Number(l.port ?? new URL(String(l.url)).port));
					// The rest is drained unread: parsing the host's log lines would load this client.
					// OVERLOAD_HOST_LOG=<file>: kept there instead (the shed lines show the bound).
					lines.close();
					if (HOST_LOG === undefined) child.stdout.resume();
					else child.stdout.pipe(createWriteStream(HOST_LOG, { flags: "a" }));
				}
			} catch {}
		});
		child.once("exit", () => reject(new Error("the host exited before it listened")));
	});
	return {
		pid: child.pid as number,
		port,
		stop: async () => {
			child.kill("SIGTERM");
			return exited;
		},
	};
}

/** The CPU time the process used so far, seconds (utime + stime of /proc/<pid>/stat, 100 Hz). */
const cpuSeconds = (pid: number): number => {
	const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? [];
	return (Number(fields[11]) + Number(fields[12])) / 100;
};

const rssMb = (pid: number): number => {
	const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
	return m === null ? 0 : Math.round(Number(m[1]) / 1024);
};

interface Sent {
	readonly name: string;
	readonly wsid: number;
}
interface Outcome {
	readonly sent: Sent;
	/** performance.now() when the request was issued. */
	readonly sentAt: number;
	readonly status: number | "error" | "timeout";
	readonly ms: number;
	/**
	 * The answer's body, kept only where it is read later (a 201's result, an unexpected
	 * answer): half a million kept shed bodies would grow this client's heap until its own
	 * garbage collections delay every answer it times.
	 */
	readonly body: string;
	/** A 503 whose body says `"committed":"no"` (read on arrival; its body is not kept). */
	readonly shedNo: boolean;
	readonly plogOffset?: number;
}

function create(agent: Agent, port: number, s: Sent): Promise<Outcome> {
	const started = performance.now();
	let timedOut = false;
	let timer: NodeJS.Timeout | undefined;
	return new Promise<Outcome>((resolve) => {
		const req = request(
			{
				host: "127.0.0.1",
				port,
				method: "POST",
				path: `/api/v2/apps/vvm/demo/workspaces/${s.wsid}/docs/app1pkg.Customer`,
				headers: { "idempotency-key": s.name },
				agent,
			},
			(res) => {
				const chunks: Buffer[] = [];
				res.on("data", (c: Buffer) => chunks.push(c));
				res.on("end", () => {
					const status = res.statusCode ?? 0;
					const body = Buffer.concat(chunks).toString("utf8");
					const shedNo = status === 503 && body.includes('"committed":"no"');
					resolve({
						sent: s,
						sentAt: started,
						status,
						ms: performance.now() - started,
						body: shedNo ? "" : body,
						shedNo,
						plogOffset: Number(res.headers["vvm-plog-offset"]),
					});
				});
			},
		);
		req.setNoDelay(true);
		if (TIMEOUT_MS > 0)
			timer = setTimeout(() => {
				timedOut = true;
				req.destroy(new Error("client timeout"));
			}, TIMEOUT_MS);
		req.on("error", () =>
			resolve({
				sent: s,
				sentAt: started,
				status: timedOut ? "timeout" : "error",
				ms: performance.now() - started,
				body: "",
				shedNo: false,
			}),
		);
		req.end(JSON.stringify({ name: s.name }));
	}).finally(() => clearTimeout(timer));
}

const p = (xs: number[], q: number): number => {
	if (xs.length === 0) return Number.NaN;
	const sorted = [...xs].sort((a, b) => a - b);
	return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
};

async function main(extra: readonly string[]): Promise<void> {
	const variant = extra.join(" ") || "(default flags)";
	log(
		`variant ${variant}; load average ${load()}${HOST_CPUS === undefined ? "" : `; host on CPUs ${HOST_CPUS}`}${CLIENT_CPUS === undefined ? "" : `, client on ${CLIENT_CPUS}`}`,
	);
	const loadBefore = load();
	const dir = await mkdtemp(join(tmpdir(), "vvm-overload-"));
	const host = await startHost(dir, extra);
	const base = `http://127.0.0.1:${host.port}`;
	for (const until = Date.now() + 30_000; ; ) {
		const r = await fetch(`${base}/api/v2/apps/vvm/demo/workspaces/1001/wlog`).catch(
			() => undefined,
		);
		if (r?.status === 200) break;
		if (Date.now() > until) throw new Error("the host did not serve within 30 s");
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
	const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
	let seq = 0;
	const outcomes: Outcome[] = [];
	const next = (): Sent => {
		const s = { name: `ov-${process.pid}-${seq++}`, wsid: 1000 + (seq % WORKSPACES) };
		return s;
	};

	// 1. Unloaded latency (4 connections) and capacity (16 connections), closed loop.
	const closed = async (
		connections: number,
		seconds: number,
	): Promise<{ rate: number; p99: number }> => {
		const ms: number[] = [];
		const end = performance.now() + seconds * 1000;
		await Promise.all(
			Array.from({ length: connections }, async () => {
				while (performance.now() < end) {
					const o = await create(agent, host.port, next());
					outcomes.push(o);
					if (o.status === 201) ms.push(o.ms);
				}
			}),
		);
		return { rate: ms.length / seconds, p99: p(ms, 0.99) };
	};
	const unloaded = await closed(4, CAPACITY_SECONDS / 2);
	const capacity = await closed(16, CAPACITY_SECONDS);
	log(
		`unloaded (4 connections): p99 ${unloaded.p99.toFixed(1)} ms; capacity (16): ${Math.round(capacity.rate)} creates/s`,
	);

	// 2. Open loop at FACTOR x capacity.
	const rate = Math.max(1, Math.round(capacity.rate * FACTOR));
	log(
		`open loop: ${rate} creates/s offered for ${SECONDS} s (${FACTOR}x), up to ${CONNECTIONS} connections`,
	);
	const metricsText = (): Promise<string> =>
		fetch(`${base}/metrics`)
			.then((r) => r.text())
			.catch(() => "");
	/** The host's create-latency histogram: cumulative count per bucket bound. */
	const createBuckets = (text: string): Map<string, number> =>
		new Map(
			[...text.matchAll(/^vvm_cp_request_duration_seconds_bucket\{([^}]*)\} (\d+)/gm)]
				.filter((m) => m[1]?.includes('kind="create"'))
				.map((m) => [/le="([^"]+)"/.exec(m[1] ?? "")?.[1] ?? "?", Number(m[2])]),
		);
	const before = createBuckets(await metricsText());
	const rss: number[] = [rssMb(host.pid)];
	const open: Promise<void>[] = [];
	const openOutcomes: Outcome[] = [];
	const t0 = performance.now();
	// The host's own view, once a second: commands queued in its partitions (all of them).
	// How long a trivial request (/metrics) takes: the host's event-loop and HTTP queueing, which no
	// partition queue sees; and this client's own event-loop delay, which is in every latency here.
	const queued: number[] = [];
	const metricsMs: number[] = [];
	const clientLag = monitorEventLoopDelay({ resolution: 10 });
	clientLag.enable();
	// This client's garbage-collection pauses: each delays every answer it is timing.
	const clientGc = { ms: 0, longest: 0 };
	const gcObserver = new PerformanceObserver((list) => {
		for (const e of list.getEntries()) {
			clientGc.ms += e.duration;
			clientGc.longest = Math.max(clientGc.longest, e.duration);
		}
	});
	gcObserver.observe({ entryTypes: ["gc"] });
	/** The host's CPU use per second of the open loop, % of one core (starved or saturated?). */
	const hostCpu: number[] = [];
	let lastCpu = { at: performance.now(), s: cpuSeconds(host.pid) };
	/** This client's CPU per second of the open loop, % of one core (is the instrument saturated?). */
	const clientCpu: number[] = [];
	let lastClientCpu = process.cpuUsage();
	const sampler = setInterval(() => {
		rss.push(rssMb(host.pid));
		const cpu = { at: performance.now(), s: cpuSeconds(host.pid) };
		hostCpu.push(Math.round(((cpu.s - lastCpu.s) / ((cpu.at - lastCpu.at) / 1000)) * 100));
		lastCpu = cpu;
		const own = process.cpuUsage(lastClientCpu);
		clientCpu.push(Math.round((own.user + own.system) / 10_000));
		lastClientCpu = process.cpuUsage();
		const asked = performance.now();
		void fetch(`${base}/metrics`)
			.then((r) => r.text())
			.then((text) => {
				metricsMs.push(performance.now() - asked);
				const m = /^vvm_cp_queued_commands (\d+)/m.exec(text);
				if (m !== null) queued.push(Number(m[1]));
			})
			.catch(() => {});
	}, 1000);
	let offered = 0;
	while (performance.now() - t0 < SECONDS * 1000) {
		// Every 10 ms, what the schedule says is due by now.
		const due = Math.floor(((performance.now() - t0) / 1000) * rate);
		for (; offered < due; offered++)
			open.push(
				create(agent, host.port, next()).then((o) => {
					openOutcomes.push(o);
					outcomes.push(o);
				}),
			);
		await new Promise((resolve) => setTimeout(resolve, 10));
	}
	await Promise.all(open);
	clearInterval(sampler);
	clientLag.disable();
	gcObserver.disconnect();
	agent.destroy();
	const seconds = (performance.now() - t0) / 1000;
	const by = (f: (o: Outcome) => boolean) => openOutcomes.filter(f);
	const accepted = by((o) => o.status === 201);
	const shed = by((o) => o.shedNo);
	const other = by((o) => o.status !== 201 && !o.shedNo);
	const acceptedP99 = p(
		accepted.map((o) => o.ms),
		0.99,
	);
	log(
		`offered ${Math.round(offered / seconds)}/s, served ${Math.round(accepted.length / seconds)}/s, shed ${shed.length} (503 committed no), other ${other.length}; accepted p99 ${acceptedP99.toFixed(1)} ms (${(acceptedP99 / unloaded.p99).toFixed(1)}x unloaded); host RSS ${Math.min(...rss)}..${Math.max(...rss)} MB`,
	);
	const ms = (xs: Outcome[], q: number): string =>
		p(
			xs.map((o) => o.ms),
			q,
		).toFixed(1);
	log(
		`accepted p50/p90/p99 ${ms(accepted, 0.5)}/${ms(accepted, 0.9)}/${ms(accepted, 0.99)} ms; shed p50/p99 ${ms(shed, 0.5)}/${ms(shed, 0.99)} ms; queued commands (host, per second) max ${Math.max(0, ...queued)}, median ${p(queued, 0.5)}`,
	);
	const windows: string[] = [];
	for (let w = 0; w * 5 < SECONDS; w++) {
		const inWindow = (o: Outcome): boolean => {
			const at = o.sentAt - t0;
			return at >= w * 5000 && at < (w + 1) * 5000;
		};
		const a = accepted.filter(inWindow);
		windows.push(
			`${w * 5}s: ${a.length} ok p99 ${ms(a, 0.99)}, ${shed.filter(inWindow).length} shed`,
		);
	}
	log(`by 5 s window of sending: ${windows.join("; ")}`);
	log(`host CPU, % of one core, per second of the open loop: ${hostCpu.join(" ")}`);
	log(`this client's CPU, % of one core, per second of the open loop: ${clientCpu.join(" ")}`);
	log(
		`GET /metrics round trip (host event loop + HTTP) p50/max ${p(metricsMs, 0.5).toFixed(1)}/${Math.max(0, ...metricsMs).toFixed(1)} ms; this client's event-loop delay p50/p99 ${(clientLag.percentile(50) / 1e6).toFixed(1)}/${(clientLag.percentile(99) / 1e6).toFixed(1)} ms, its garbage collection ${Math.round(clientGc.ms)} ms (longest ${clientGc.longest.toFixed(1)} ms)`,
	);
	const afterText = await metricsText();
	const after = createBuckets(afterText);
	const hostShed = Object.fromEntries(
		[...afterText.matchAll(/^vvm_http_shed_total\{reason="([a-z_]+)"\} (\d+)/gm)].map((m) => [
			m[1],
			Number(m[2]),
		]),
	);
	const buckets = [...after].map(([le, n]) => `${le}:${n - (before.get(le) ?? 0)}`);
	if (buckets.length > 0)
		log(
			`host-side create durations, open loop (answered within le seconds: count): ${buckets.join(" ")}`,
		);
	const otherKinds = new Map<string, number>();
	for (const o of other)
		otherKinds.set(String(o.status), (otherKinds.get(String(o.status)) ?? 0) + 1);
	if (other.length > 0) log(`other answers: ${JSON.stringify(Object.fromEntries(otherKinds))}`);

	// 3. Stop, then read everything back.
	const code = await host.stop();
	log(`host exited with code ${code}`);
	const names = new Map<string, number>();
	const db = new ClassicLevel<Uint8Array, Uint8Array>(dir, {
		keyEncoding: "view",
		valueEncoding: "view",
	});
	const storage = createLevelTTLStorage({ db, ownsDb: true });
	const acknowledged: AcknowledgedCommand[] = [];
	for (const o of outcomes)
		if (o.status === 201) {
			const s = o.sent;
			const body = JSON.parse(o.body) as {
				CurrentWLogOffset: number;
				NewIDs: Record<string, number>;
			};
			acknowledged.push({ wsid: s.wsid, result: { ...body, plogOffset: o.plogOffset ?? 0 } });
		}
	const report = await checkCpStorage({
		storage,
		appId: APP_ID,
		partitions: PARTITIONS,
		acknowledged,
	});
	const cp = createCommandProcessor({ storage, appId: APP_ID, partitions: PARTITIONS });
	for (let partition = 0; partition < PARTITIONS; partition++) {
		const part = cp.deploy(partition);
		await part.ready();
		for (let wsid = 1000; wsid < 1000 + WORKSPACES; wsid++) {
			if (wsid % PARTITIONS !== partition) continue;
			for (let from = 1; ; ) {
				const entries = await part.readWLog({ wsid, from, limit: 10_000 });
				for (const e of entries) {
					const json = JSON.stringify(e.event ?? {});
					for (const m of json.matchAll(/ov-\d+-\d+/g)) names.set(m[0], (names.get(m[0]) ?? 0) + 1);
				}
				if (entries.length < 10_000) break;
				from = (entries.at(-1)?.offset ?? from) + 1;
			}
		}
	}
	await cp.close();
	await storage.close();
	await rm(dir, { recursive: true, force: true });
	const shedNames = new Set(outcomes.filter((o) => o.shedNo).map((o) => o.sent.name));
	const shedWritten = [...shedNames].filter((n) => names.has(n));
	const twice = [...names].filter(([, n]) => n > 1);
	const problems = [
		...report.problems,
		...shedWritten.map(
			(n) => `shed command ${n} was answered 503 committed no, but its create is in the WLog`,
		),
		...twice.map(([n, c]) => `command ${n} is in the WLog ${c} times`),
		...(code === 0 ? [] : [`the host exited with code ${code}, not 0`]),
	];
	console.log(
		JSON.stringify({
			variant,
			loadAverage: { before: loadBefore, after: load() },
			capacityPerSec: Math.round(capacity.rate),
			unloadedP99Ms: Number(unloaded.p99.toFixed(2)),
			offeredPerSec: Math.round(offered / seconds),
			servedPerSec: Math.round(accepted.length / seconds),
			shed: shed.length,
			other: Object.fromEntries(otherKinds),
			acceptedP99Ms: Number(acceptedP99.toFixed(2)),
			p99Ratio: Number((acceptedP99 / unloaded.p99).toFixed(2)),
			rssMb: { min: Math.min(...rss), max: Math.max(...rss) },
			hostShed,
			hostCpuPercent: { p50: p(hostCpu, 0.5), max: Math.max(0, ...hostCpu) },
			clientCpuPercent: { p50: p(clientCpu, 0.5), max: Math.max(0, ...clientCpu) },
			metricsRoundTripMs: {
				p50: Number(p(metricsMs, 0.5).toFixed(1)),
				max: Number(Math.max(0, ...metricsMs).toFixed(1)),
			},
			acknowledged: acknowledged.length,
			shedChecked: shedNames.size,
			problems: problems.length,
		}),
	);
	if (problems.length > 0) {
		for (const line of problems.slice(0, 20)) log(`PROBLEM: ${line}`);
		process.exitCode = 1;
	}
}

for (const extra of VARIANTS) await main(extra);
