// The Redis driver against one Redis server, in one run, rounds interleaved (every contender once per
// round, so a noisy neighbour hits them alike):
//  1. compareAndSwap (a renewal with the same value, TTL 1 h, as elections do) through the driver
//     at each concurrency (one ioredis client; concurrency = operations in flight), beside
//     redis-benchmark sending the very same command (the driver's EVALSHA, its keys and arguments,
//     captured from the driver) on as many connections: the server's limit for that script;
//  2. a lock cycle (take a free lock, give it back) at each concurrency, one key per worker:
//     @vvm/ielections (acquireLeadership + releaseLeadership: insert, fencing token read + CAS,
//     compare-and-delete, its killer armed and disarmed), the driver alone (insertIfNotExists +
//     compareAndDelete), and redlock 4 (lock + unlock: SET NX PX and a delete script, by EVAL).
// CPU per operation: the client (this process; for redis-benchmark, its own, from /proc/self/stat's
// children times) and the redis-server (/proc/<pid>/stat, when the server runs on this machine).
//   pnpm --filter @vvm/ttlstorage-redis bench   (a Redis from tooling/servers/redis must be running)
// Env: REDIS_URL (default redis://127.0.0.1:$REDIS_PORT, port 6390), BENCH_OPS (CAS per row and
// round; default 5000), BENCH_CYCLES (lock cycles per row and round; default 1000), BENCH_ROUNDS
// (default 3), BENCH_CONCURRENCY (default "1,16"), REDIS_BENCHMARK (default redis-benchmark).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { availableParallelism, cpus } from "node:os";
import { createElections, createElectionsStorage } from "@vvm/ielections";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import { Redis } from "ioredis";
import Redlock from "redlock";
import type { RedisArg, RedisClient } from "../src/index.ts";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "../src/index.ts";

const url = process.env.REDIS_URL ?? `redis://127.0.0.1:${process.env.REDIS_PORT ?? 6390}`;
const casOps = Number(process.env.BENCH_OPS ?? 5000);
const lockCycles = Number(process.env.BENCH_CYCLES ?? 1000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
const levels = (process.env.BENCH_CONCURRENCY ?? "1,16").split(",").map(Number);
const redisBenchmark = process.env.REDIS_BENCHMARK ?? "redis-benchmark";
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU time in 1/100 s
const run = `${process.pid.toString(36)}${Date.now().toString(36)}`;
const prefix = `vvm_bench_${run}:`;
// A pKey of 260 bytes: the driver's keys carry the pKey's length in two bytes, and redis-benchmark
// takes the command from its argv, where no NUL byte can go; from 257 bytes on neither byte is 0
// (260 = 0x01 0x04). The driver rows use the same keys.
const pKeyOf = (name: string) => utf8(name.padEnd(260, "k"));
const VALUE = utf8("vvm-host-127.0.0.1:8080#1");
// The CAS records' TTL: long enough that a record renewed only in the rows of high concurrency
// outlives a slow run (a renewal of an expired record fails, and the run with it).
const TTL = 3_600;

/** One measured run of one contender. */
interface Sample {
	readonly ops: number;
	readonly ms: number;
	readonly clientCpuS: number;
	readonly serverCpuS: number | undefined;
	readonly latenciesMs: readonly number[];
	/** redis-benchmark's own percentiles (it reports no samples). */
	readonly p50?: number;
	readonly p99?: number;
}

/** Whose rows these are, and their samples over the rounds. */
interface Row {
	readonly bench: string;
	readonly contender: string;
	readonly concurrency: number;
	readonly samples: Sample[];
}

/** utime + stime (or the reaped children's, cutime + cstime) of a process, seconds. */
function cpuSeconds(pid: number | "self", children = false): number | undefined {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
		const i = children ? 13 : 11;
		return (Number(f[i]) + Number(f[i + 1])) / TICKS;
	} catch {
		return undefined;
	}
}

function percentile(sorted: readonly number[], p: number): number {
	return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

/** Runs `op` `total` times over `concurrency` workers (worker `w` passes `w`), timed. */
async function measure(
	total: number,
	concurrency: number,
	serverPid: number | undefined,
	op: (worker: number) => Promise<void>,
): Promise<Sample> {
	const latencies = new Array<number>(total);
	let next = 0;
	const server0 = serverPid === undefined ? undefined : cpuSeconds(serverPid);
	const cpu0 = process.cpuUsage();
	const t0 = performance.now();
	await Promise.all(
		Array.from({ length: concurrency }, async (_, w) => {
			for (;;) {
				const i = next++;
				if (i >= total) return;
				const s = performance.now();
				await op(w);
				latencies[i] = performance.now() - s;
			}
		}),
	);
	const ms = performance.now() - t0;
	const cpu = process.cpuUsage(cpu0);
	const server1 = serverPid === undefined ? undefined : cpuSeconds(serverPid);
	return {
		ops: total,
		ms,
		clientCpuS: (cpu.user + cpu.system) / 1e6,
		serverCpuS: server0 === undefined || server1 === undefined ? undefined : server1 - server0,
		latenciesMs: latencies,
	};
}

/** redis-benchmark sending `command` `total` times on `concurrency` connections. */
function redisBenchmarkRun(
	command: readonly string[],
	total: number,
	concurrency: number,
	serverPid: number | undefined,
): Sample {
	const { hostname, port } = new URL(url);
	const args = ["-h", hostname, "-p", port || "6379", "-n", String(total)];
	args.push("-c", String(concurrency), "--csv", ...command);
	const server0 = serverPid === undefined ? undefined : cpuSeconds(serverPid);
	const children0 = cpuSeconds("self", true);
	const r = spawnSync(redisBenchmark, args, { encoding: "utf8" });
	const children1 = cpuSeconds("self", true);
	const server1 = serverPid === undefined ? undefined : cpuSeconds(serverPid);
	if (r.status !== 0) throw new Error(`${redisBenchmark} failed: ${r.error ?? r.stderr}`);
	// "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms",…
	const line = r.stdout.trim().split("\n").at(-1) ?? "";
	const cols = line.split(",").map((c) => Number(c.replaceAll('"', "")));
	const rps = cols[1] ?? Number.NaN;
	if (!(rps > 0)) throw new Error(`${redisBenchmark}: no result in ${JSON.stringify(r.stdout)}`);
	return {
		ops: total,
		ms: (total / rps) * 1000, // its own timing, without its start-up
		clientCpuS: children0 === undefined || children1 === undefined ? 0 : children1 - children0,
		serverCpuS: server0 === undefined || server1 === undefined ? undefined : server1 - server0,
		latenciesMs: [],
		p50: cols[4] ?? 0,
		p99: cols[6] ?? 0,
	};
}

/** A client that records the arguments of the last command the driver sent through it. */
function recording(client: Redis): { client: RedisClient; last: () => RedisArg[] } {
	let last: RedisArg[] = [];
	const wrapper: RedisClient = {
		get status() {
			return client.status;
		},
		options: client.options,
		callBuffer: (command, ...args) => {
			last = [command, ...args];
			return client.callBuffer(command, ...args);
		},
	};
	return { client: wrapper, last: () => last };
}

/** An argument as redis-benchmark can take it from argv: text without NUL bytes. */
function argvText(arg: RedisArg): string {
	const text = Buffer.isBuffer(arg) ? arg.toString("latin1") : String(arg);
	if (/[\0\x80-\xff]/.test(text))
		throw new Error(`an argument argv cannot carry: ${JSON.stringify(text)}`);
	return text;
}

async function main(): Promise<void> {
	const client = new Redis(url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
	client.on("error", () => {});
	await client.connect();
	const serverInfo = String(await client.info("server"));
	const persistence = (await client.config("GET", "appendfsync")) as string[];
	const appendonly = (await client.config("GET", "appendonly")) as string[];
	const field = (name: string) => serverInfo.match(new RegExp(`^${name}:(.*)$`, "m"))?.[1]?.trim();
	const host = new URL(url).hostname;
	const pid = Number(field("process_id"));
	const serverPid =
		["127.0.0.1", "localhost", "::1", "[::1]"].includes(host) && cpuSeconds(pid) !== undefined
			? pid
			: undefined;

	const rec = recording(client);
	const storage = createRedisTTLStorage({
		client: rec.client,
		keyPrefix: prefix,
		sweepIntervalMs: 0,
	});
	const redlock = new Redlock([client as unknown as Redlock.CompatibleRedisClient], {
		retryCount: 0,
	});
	const elections = createElections(
		createElectionsStorage<string, string>(storage, {
			pKey: () => pKeyOf("leaders"),
			cCols: utf8,
			encodeValue: utf8,
			decodeValue: fromUtf8,
		}),
	);
	const rows = new Map<string, Row>();
	const add = (bench: string, contender: string, concurrency: number, s: Sample) => {
		const id = `${bench}/${contender}/${concurrency}`;
		const row = rows.get(id) ?? { bench, contender, concurrency, samples: [] };
		row.samples.push(s);
		rows.set(id, row);
	};

	// The CAS keys (one per worker) and the command redis-benchmark sends: the driver's own.
	const maxC = Math.max(...levels);
	const casKeys = Array.from({ length: maxC }, (_, w) => ({
		p: pKeyOf(`cas/${w}`),
		c: utf8("leader"),
	}));
	for (const k of casKeys) await storage.put(k.p, k.c, VALUE, TTL);
	const first = casKeys[0];
	if (first === undefined) throw new Error("BENCH_CONCURRENCY: no level");
	await storage.compareAndSwap(first.p, first.c, VALUE, VALUE, TTL);
	const command = rec.last().map(argvText);
	if (command[0] !== "EVALSHA") throw new Error(`the driver sent ${command[0]}, not EVALSHA`);
	const cas = (w: number) => async () => {
		const k = casKeys[w];
		if (k === undefined || !(await storage.compareAndSwap(k.p, k.c, VALUE, VALUE, TTL)))
			throw new Error("a renewal failed");
	};

	const lockKey = (w: number) => `lock/${w}`;
	const lockers: Record<string, (w: number) => Promise<void>> = {
		"@vvm/ielections": async (w) => {
			const signal = await elections.acquireLeadership(lockKey(w), "bench", 20);
			if (signal === undefined) throw new Error("ielections: not acquired");
			await elections.releaseLeadership(lockKey(w));
		},
		"driver (insertIfNotExists + compareAndDelete)": async (w) => {
			const [p, c] = [pKeyOf("locks"), utf8(lockKey(w))];
			if (!(await storage.insertIfNotExists(p, c, VALUE, 20))) throw new Error("driver: taken");
			if (!(await storage.compareAndDelete(p, c, VALUE))) throw new Error("driver: not deleted");
		},
		"redlock 4.2.0 (lock + unlock)": async (w) => {
			const lock = await redlock.lock(`${prefix}redlock/${lockKey(w)}`, 20_000);
			await lock.unlock();
		},
	};

	try {
		// Warm-up: the scripts loaded, the JIT warm, the connections open.
		for (const c of levels) {
			await measure(Math.ceil(casOps / 10), c, undefined, (w) => cas(w)());
			redisBenchmarkRun(command, Math.ceil(casOps / 10), c, undefined);
			for (const op of Object.values(lockers))
				await measure(Math.ceil(lockCycles / 10), c, undefined, op);
		}
		for (let round = 1; round <= rounds; round++) {
			for (const c of levels) {
				add(
					"compareAndSwap",
					"driver (ioredis, 1 connection)",
					c,
					await measure(casOps, c, serverPid, (w) => cas(w)()),
				);
				add(
					"compareAndSwap",
					`redis-benchmark (same EVALSHA, ${c} connection${c === 1 ? "" : "s"})`,
					c,
					redisBenchmarkRun(command, casOps, c, serverPid),
				);
				for (const [name, op] of Object.entries(lockers))
					add("lock cycle", name, c, await measure(lockCycles, c, serverPid, op));
			}
			console.error(`round ${round}/${rounds} done`);
		}
	} finally {
		await elections.cleanup();
		await storage.close();
		// Delete the bench's keys (its prefix only).
		let cursor = "0";
		do {
			const [next, keys] = await client.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
			cursor = next;
			if (keys.length > 0) await client.del(...keys);
		} while (cursor !== "0");
		client.disconnect();
	}

	console.log(
		`\nRedis ${field("redis_version")} on ${host} (appendonly ${appendonly[1]}, appendfsync ${persistence[1]}), ioredis ${ioredisVersion()}, ${rounds} rounds interleaved of ${casOps} CAS / ${lockCycles} lock cycles per row; ${availableParallelism()} cores (${cpus()[0]?.model ?? "?"}), Node ${process.version}. ops/s: all rounds together (the rounds' lowest–highest); CPU µs per operation (a lock cycle is one operation).\n`,
	);
	console.log(
		"| benchmark | contender | concurrency | ops/s | rounds | p50 ms | p99 ms | client CPU µs/op | server CPU µs/op |",
	);
	console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
	for (const r of rows.values()) {
		const ops = r.samples.reduce((a, s) => a + s.ops, 0);
		const ms = r.samples.reduce((a, s) => a + s.ms, 0);
		const perRound = r.samples.map((s) => Math.round((s.ops / s.ms) * 1000));
		const lat = r.samples.flatMap((s) => s.latenciesMs).sort((a, b) => a - b);
		const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
		const p50 = lat.length > 0 ? percentile(lat, 50) : median(r.samples.map((s) => s.p50 ?? 0));
		const p99 = lat.length > 0 ? percentile(lat, 99) : median(r.samples.map((s) => s.p99 ?? 0));
		const client = (r.samples.reduce((a, s) => a + s.clientCpuS, 0) * 1e6) / ops;
		const server = r.samples.every((s) => s.serverCpuS !== undefined)
			? (r.samples.reduce((a, s) => a + (s.serverCpuS ?? 0), 0) * 1e6) / ops
			: undefined;
		const fmt = (n: number) => n.toLocaleString("en-US");
		console.log(
			`| ${r.bench} | ${r.contender} | ${r.concurrency} | ${fmt(Math.round((ops / ms) * 1000))} | ${fmt(Math.min(...perRound))}–${fmt(Math.max(...perRound))} | ${p50.toFixed(3)} | ${p99.toFixed(3)} | ${client.toFixed(0)} | ${server === undefined ? "–" : server.toFixed(0)} |`,
		);
	}
}

function ioredisVersion(): string {
	try {
		const dir = new URL("../node_modules/ioredis/package.json", import.meta.url);
		return String(JSON.parse(readFileSync(dir, "utf8")).version);
	} catch {
		return "?";
	}
}

await main();
