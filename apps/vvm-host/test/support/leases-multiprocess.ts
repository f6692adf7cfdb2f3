// Three host processes with --placement leases on one shared storage (a DynamoDB Local table, and
// a keyspace of the real Cassandra), 12 partitions, load
// on every partition (following 421s to the holder), while the test kills hosts (SIGKILL, then a
// replacement starts) and pauses them (SIGSTOP/SIGCONT). From the hosts' own `served` log lines:
// no partition was ever served by two hosts at overlapping times, and how long the partitions of
// a dead or paused host stayed dark.
import { execFileSync } from "node:child_process";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { hostPort, requireServer } from "@vvm/vitest-config/servers";
import { afterAll, describe, expect, it } from "vitest";
import { systemMonotonicMs } from "../../src/logger.ts";
import type { HostProcess, LogLine } from "./host-process.ts";
import { APP_DIR, killHard, spawnHost } from "./host-process.ts";
import { measureMachine } from "./machine-budget.ts";
import type { ServedLine } from "./served-log.ts";
import { checkNoOverlap, summarize } from "./served-log.ts";

const ENDPOINT = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const DYN = hostPort(ENDPOINT, 8000);
const CAS_POINTS = process.env.CASSANDRA_CONTACT_POINTS ?? "127.0.0.1:9042";
const CAS = hostPort(CAS_POINTS.split(",")[0] ?? "127.0.0.1:9042", 9042);
const RUN = `${process.pid.toString(36)}${Date.now().toString(36)}`;

/** A storage shared by host processes: DynamoDB Local, or the real Cassandra. */
/** Which storage a file of this suite runs on. */
export type BackendName = "dyn" | "cas";

interface Backend {
	readonly name: string;
	readonly skip: false | string;
	readonly args: readonly string[];
	cleanup(): Promise<void>;
}

const TABLE = `vvm_leases_mp_${RUN}`;
const KEYSPACE = `vvm_leases_mp_${RUN}`;
/** The backends, each built (its server checked) only when its file runs. */
const backends: Record<BackendName, () => Promise<Backend>> = {
	dyn: async () => ({
		name: "DynamoDB Local",
		skip: await requireServer({
			name: "DynamoDB Local",
			host: DYN.host,
			port: DYN.port,
			enabledVar: "DYNAMODB_TESTS_ENABLED",
			startHint: "bash tooling/servers/dynamodb/start.sh",
		}),
		args: ["--storage", "dyn", "--dyn-endpoint", ENDPOINT, "--dyn-table", TABLE],
		async cleanup() {
			const client = new DynamoDBClient({
				endpoint: ENDPOINT,
				region: "us-east-1",
				credentials: { accessKeyId: "local", secretAccessKey: "local" },
			});
			await client.send(new DeleteTableCommand({ TableName: TABLE })).catch(() => {});
			client.destroy();
		},
	}),
	cas: async () => ({
		name: "Cassandra",
		skip: await requireServer({
			name: "Cassandra",
			host: CAS.host,
			port: CAS.port,
			enabledVar: "CASSANDRA_TESTS_ENABLED",
			startHint: "bash tooling/servers/cassandra/start.sh",
		}),
		args: ["--storage", "cas", "--cas-contact-points", CAS_POINTS, "--cas-keyspace", KEYSPACE],
		async cleanup() {
			// In a plain Node child: cassandra-driver does not load under vitest's module graph.
			const script = `const c = require("cassandra-driver"); const client = new c.Client({ contactPoints: ${JSON.stringify(CAS_POINTS.split(","))}, localDataCenter: ${JSON.stringify(process.env.CASSANDRA_LOCAL_DC ?? "datacenter1")} }); client.execute("DROP KEYSPACE IF EXISTS ${KEYSPACE}").finally(() => client.shutdown());`;
			execFileSync(process.execPath, ["-e", script], { cwd: APP_DIR, stdio: "ignore" });
		},
	}),
};

const PARTITIONS = 12;
/**
 * The machine's contention when this file started: every duration below is scaled by it, so a
 * busy machine gets wider leases (a host with a third of a core renews late) and the suite still
 * checks the same claims. Printed with the results.
 */
const BUDGET = measureMachine();
const LEASE_MS = Math.round(2_000 * BUDGET.scale);
const SKEW_MS = 100;
const TICK_MS = LEASE_MS / 10; // tick, poll and heartbeat: a tenth of the lease
/** The seed's failover bound, plus the poll of a holder in another process than the driver. */
const BOUND_MS = LEASE_MS + TICK_MS + TICK_MS;
const spawned: HostProcess[] = [];

/** The backend of the file that runs (one per file). */
const built: Backend[] = [];

afterAll(async () => {
	for (const h of spawned) killHard(h);
	for (const b of built) if (!b.skip) await b.cleanup().catch(() => {});
});

interface Host {
	readonly proc: HostProcess;
	readonly address: string;
}

let started = 0;
async function startHost(backend: Backend): Promise<Host> {
	const proc = spawnHost(`H${++started}`, [
		...backend.args,
		...["--http-port", "0", "--log-level", "debug", "--placement", "leases"],
		...["--partitions", String(PARTITIONS), "--lease-interval-ms", String(LEASE_MS)],
		...["--lease-max-clock-skew-ms", String(SKEW_MS)],
	]);
	spawned.push(proc);
	const port = await proc.port(20_000 * BUDGET.scale);
	await proc.waitFor((l) => l.event === "placement-started", 20_000 * BUDGET.scale);
	return { proc, address: `127.0.0.1:${port}` };
}

interface LeasesBody {
	readonly served: number[];
	readonly metrics: { readonly placementDriverActive: boolean };
}

async function leasesOf(host: Host): Promise<LeasesBody> {
	const res = await fetch(`http://${host.address}/leases`, {
		signal: AbortSignal.timeout(2_000 * BUDGET.scale),
	});
	return (await res.json()) as LeasesBody;
}

/** Polls the hosts' /leases until every one serves its share (4 of 12 with 3 hosts). */
async function untilBalanced(
	hosts: readonly Host[],
	maxMs = 40_000 * BUDGET.scale,
): Promise<LeasesBody[]> {
	const start = Date.now();
	for (;;) {
		// A slow answer (a loaded machine: the whole suite runs in parallel) is asked again.
		const views = await Promise.all(hosts.map(leasesOf)).catch((error: unknown) => error);
		const counts = Array.isArray(views) ? views.map((v: LeasesBody) => v.served.length) : [];
		if (Array.isArray(views) && counts.every((c) => c === PARTITIONS / hosts.length)) return views;
		if (Date.now() - start > maxMs)
			throw new Error(`not balanced: ${Array.isArray(views) ? counts.join("/") : String(views)}`);
		await new Promise((r) => setTimeout(r, 100));
	}
}

/** What the load sent and got: probe requests, and command-processor creates answered 201. */
interface LoadTotals {
	readonly requests: number;
	readonly creates: number;
}

/**
 * Load on every partition: each partition's loop alternates POST /work?partition=p (the probe
 * whose `served` lines the overlap check reads) and a command-processor create in one of the
 * partition's workspaces (`wsid mod PARTITIONS = p`), so a partition's PLog grows and its next
 * holder's sequencer has something to actualize. It sends both to the host it believes serves
 * the partition, follows a 421 to the named holder, and tries another live host after a 503, a
 * refused connection or a timeout (a paused host). Pacing, not synchronisation.
 */
function startLoad(live: () => readonly Host[]): { stop: () => Promise<LoadTotals> } {
	let running = true;
	let requests = 0;
	let creates = 0;
	const loops = Array.from({ length: PARTITIONS }, async (_, p) => {
		let target: string | undefined;
		let rotate = p;
		for (let n = 0; running; n++) {
			const hosts = live();
			if (target === undefined || !hosts.some((h) => h.address === target)) {
				target = hosts[rotate++ % hosts.length]?.address;
			}
			const create = n % 2 === 1;
			const wsid = 1_000 * PARTITIONS + p + PARTITIONS * (n % 4); // four workspaces per partition
			const url = create
				? `http://${target}/api/v2/apps/vvm/demo/workspaces/${wsid}/docs/app1pkg.Customer`
				: `http://${target}/work?partition=${p}`;
			try {
				requests++;
				const res = await fetch(url, {
					method: "POST",
					signal: AbortSignal.timeout(300 * BUDGET.scale),
					...(create ? { body: JSON.stringify({ name: `n${n}` }) } : {}),
				});
				const body = (await res.json()) as { holder?: string };
				if (res.status === 421) target = body.holder;
				else if (res.status === 201) creates++;
				else if (res.status !== 200) target = undefined;
			} catch {
				target = undefined;
			}
			await new Promise((r) => setTimeout(r, 40));
		}
	});
	return {
		stop: async () => {
			running = false;
			await Promise.all(loops);
			return { requests, creates };
		},
	};
}

const servedLines = (hosts: readonly HostProcess[]): ServedLine[] =>
	hosts.flatMap((h) =>
		h.lines
			.filter((l: LogLine) => l.event === "served")
			.map((l) => ({
				host: h.name,
				partition: l.partition as number,
				mono: l.mono as number,
				incarnation: l.incarnation as string,
				fencingToken: l.fencingToken as number,
			})),
	);

/** `mono` of the first line of another host than `gone` for partition `p` after `fromMono`. */
function firstElsewhere(
	gone: HostProcess,
	event: string,
	p: number,
	fromMono: number,
): number | undefined {
	let first: number | undefined;
	for (const h of spawned) {
		if (h === gone) continue;
		for (const l of h.lines) {
			if (l.event !== event || l.partition !== p) continue;
			const mono = l.mono as number;
			if (mono > fromMono && (first === undefined || mono < first)) first = mono;
		}
	}
	return first;
}

/** How long the partitions of a dead or paused host stayed dark, by two measures. */
interface Dark {
	/**
	 * Until another host deployed every one of them and its sequencer actualized from the PLog
	 * (`partition-ready`: servable from then on).
	 */
	readonly deployedMs: number;
	/** Until another host served a command on every one of them (adds the load's own pacing). */
	readonly servedMs: number;
	/** The longest deployment of one of them there (`partition-deployed` to `partition-ready`). */
	readonly actualizeMs: number;
}

const show = (d: Dark): string =>
	`ready elsewhere after ${Math.round(d.deployedMs)} ms (longest actualization ${Math.round(d.actualizeMs)} ms), served after ${Math.round(d.servedMs)} ms`;

/**
 * From `fromMono` until every partition in `partitions` was deployed, and served, by another
 * host than `gone`, from the hosts' logs; resolves once all were.
 */
async function darkTime(
	gone: HostProcess,
	partitions: readonly number[],
	fromMono: number,
	maxMs = 5 * LEASE_MS,
): Promise<Dark> {
	const deadline = Date.now() + maxMs;
	for (;;) {
		const at = (event: string) => partitions.map((p) => firstElsewhere(gone, event, p, fromMono));
		const deployed = at("partition-ready");
		const started = at("partition-deployed");
		const served = at("served");
		const all = [...deployed, ...started, ...served];
		if (all.every((m) => m !== undefined)) {
			const latest = (ms: Array<number | undefined>) => Math.max(...(ms as number[])) - fromMono;
			const actualizeMs = Math.max(
				...deployed.map((ready, i) => (ready as number) - (started[i] as number)),
			);
			return { deployedMs: latest(deployed), servedMs: latest(served), actualizeMs };
		}
		if (Date.now() > deadline) throw new Error(`partitions still dark: ${all.join(",")}`);
		await new Promise((r) => setTimeout(r, 50));
	}
}

/**
 * The suite on one backend (one test file each, so CI runs the two side by side):
 * `await leasesAcrossProcesses("dyn")` at the top of a test file.
 */
export async function leasesAcrossProcesses(which: BackendName): Promise<void> {
	const backend = await backends[which]();
	built.push(backend);
	describe(`leases across host processes on ${backend.name}`, () => {
		it.skipIf(backend.skip)(
			"3 hosts, 12 partitions, SIGKILL and SIGSTOP: never served twice at once; the dead host's partitions serve again elsewhere",
			{
				timeout: 240_000 * BUDGET.scale,
			},
			async () => {
				// The first host creates the table or keyspace alone; the others join it together.
				const mine = spawned.length; // this backend's hosts are spawned from here on
				const first = await startHost(backend);
				let live: Host[] = [
					first,
					...(await Promise.all([startHost(backend), startHost(backend)])),
				];
				const load = startLoad(() => live);
				await untilBalanced(live);
				const kills: Dark[] = [];
				const pauses: Dark[] = [];
				const rounds: string[] = [];

				// Three kills: the active placement driver's host first, then plain holders.
				for (let round = 0; round < 3; round++) {
					const views = await untilBalanced(live);
					const index =
						round === 0 ? views.findIndex((v) => v.metrics.placementDriverActive) : round % 3;
					const victim = live[index] as Host;
					const held = (views[index] as LeasesBody).served;
					const killedAt = systemMonotonicMs();
					process.kill(victim.proc.pid, "SIGKILL");
					live = live.filter((h) => h !== victim);
					const dark = await darkTime(victim.proc, held, killedAt);
					kills.push(dark);
					rounds.push(`kill ${victim.proc.name}${round === 0 ? " (driver)" : ""}: ${show(dark)}`);
					expect((await victim.proc.exited).signal).toBe("SIGKILL");
					live = [...live, await startHost(backend)];
				}

				// Two pauses of twice the lease interval: a plain holder, then the active driver's host.
				for (let round = 0; round < 2; round++) {
					const views = await untilBalanced(live);
					const driver = views.findIndex((v) => v.metrics.placementDriverActive);
					const index = round === 0 ? (driver + 1) % live.length : driver;
					const victim = live[index] as Host;
					const held = (views[index] as LeasesBody).served;
					const stoppedAt = systemMonotonicMs();
					process.kill(victim.proc.pid, "SIGSTOP");
					const dark = await darkTime(victim.proc, held, stoppedAt);
					pauses.push(dark);
					rounds.push(`pause ${victim.proc.name}${round === 1 ? " (driver)" : ""}: ${show(dark)}`);
					const sinceStop = systemMonotonicMs() - stoppedAt;
					await new Promise((r) => setTimeout(r, Math.max(0, 2 * LEASE_MS - sinceStop)));
					process.kill(victim.proc.pid, "SIGCONT");
				}
				await untilBalanced(live);
				const totals = await load.stop();

				for (const h of live) process.kill(h.proc.pid, "SIGTERM");
				for (const h of live) expect((await h.proc.exited).code).toBe(0);

				// Never two hosts serving one partition at overlapping times: the hosts share this
				// machine's CLOCK_MONOTONIC (skew 0), so the check is strict; the stated skew bound is how
				// much earlier than its lease's expiry a holder stops.
				const served = servedLines(spawned.slice(mine));
				const check = checkNoOverlap(served);
				expect(check.overlaps).toEqual([]);
				expect(check.tokenRegressions).toEqual([]);
				// The test did exercise handovers: every kill and pause moved partitions.
				expect(check.handovers).toBeGreaterThanOrEqual(kills.length + pauses.length);
				for (let p = 0; p < PARTITIONS; p++) {
					expect(served.some((s) => s.partition === p)).toBe(true);
				}
				// The command processor took writes, so the partitions that moved had a PLog to actualize.
				expect(totals.creates).toBeGreaterThan(PARTITIONS);
				const stats = (ds: Dark[], k: keyof Dark) =>
					summarize(ds.map((d) => d[k]))
						.map((x) => Math.round(x))
						.join("/");
				console.log(
					`[leases-failover] ${backend.name}: ${rounds.join("; ")}. Min/median/max ms until deployed and actualized elsewhere | until a command was served there: kills ${stats(kills, "deployedMs")} | ${stats(kills, "servedMs")}, pauses ${stats(pauses, "deployedMs")} | ${stats(pauses, "servedMs")}; actualization of one partition ${stats([...kills, ...pauses], "actualizeMs")}; bound ${BOUND_MS} ms (lease ${LEASE_MS} + tick ${TICK_MS} + poll ${TICK_MS}; machine scale ${BUDGET.scale}: CPU share ${BUDGET.cpuShare.toFixed(2)}, load per core ${BUDGET.loadPerCore.toFixed(2)}); ${served.length} probes served and ${totals.creates} records created of ${totals.requests} requests, ${check.handovers} handovers, smallest gap between two holders ${Math.round(check.minGapMs)} ms`,
				);
			},
		);
	});
}
