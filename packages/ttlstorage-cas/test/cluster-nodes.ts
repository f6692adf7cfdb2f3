// Crash and restart nodes of the local cluster (tooling/servers/cassandra-cluster), for the
// fault tests: SIGKILL by the PID its start.sh recorded, restart with start.sh N (data kept).
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { isReachable } from "@vvm/vitest-config/servers";
import type { Client } from "cassandra-driver";
import { types } from "cassandra-driver";

/** A node of the local cluster: node N listens on 127.0.0.(N+1). */
export type NodeNumber = 1 | 2 | 3;

const REPO = fileURLToPath(new URL("../../../", import.meta.url));
const SCRIPTS = `${REPO}tooling/servers/cassandra-cluster`;
const WORK = `${REPO}.servers/cassandra-cluster`;

/** The CQL address of node `n`, as the driver names its host. */
export const nodeAddress = (n: NodeNumber): string => `127.0.0.${n + 1}:9042`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** True while `pid` is a live process (a zombie has already released its sockets). */
function alive(pid: number): boolean {
	try {
		const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
		const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
		return state !== "Z" && state !== "X";
	} catch {
		return false;
	}
}

/**
 * The PID of node `n`, checked against its command line, so a stale PID file can never make a
 * test kill another process.
 */
function nodePid(n: NodeNumber): number {
	const pidFile = `${WORK}/node${n}/pid`;
	let pid: number;
	try {
		pid = Number(readFileSync(pidFile, "utf8").trim());
	} catch {
		throw new Error(
			`node ${n} has no PID file ${pidFile}: the fault tests need the local cluster of \`bash tooling/servers/cassandra-cluster/start.sh\``,
		);
	}
	const config = `${WORK}/node${n}/cassandra.yaml`;
	let cmdline = "";
	try {
		cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8");
	} catch {
		// Not running: reported below.
	}
	if (!alive(pid) || !cmdline.includes(config)) {
		throw new Error(`node ${n} (PID file ${pidFile}: ${pid}) is not running`);
	}
	return pid;
}

/**
 * Waits until node `n`'s process `pid` is gone and its ports are closed (a killed JVM turns zombie
 * when its main thread exits, a moment before its other threads have closed its sockets).
 */
async function gone(n: NodeNumber, pid: number): Promise<void> {
	const deadline = performance.now() + 10_000;
	const host = `127.0.0.${n + 1}`;
	while (
		alive(pid) ||
		(await isReachable(host, 9042, 200)) ||
		(await isReachable(host, 7000, 200))
	) {
		if (performance.now() > deadline)
			throw new Error(`node ${n} (pid ${pid}) survived SIGKILL for 10 s`);
		await sleep(20);
	}
}

/** SIGKILLs node `n` (a crash: no drain, no goodbye) and waits until it is gone. */
export async function killNode(n: NodeNumber): Promise<void> {
	const pid = nodePid(n);
	process.kill(pid, "SIGKILL");
	await gone(n, pid);
}

/** Waits until `client` has noticed that nodes `nodes` are down (their connections closed). */
export async function waitClientSeesDown(
	client: Client,
	nodes: readonly NodeNumber[],
): Promise<void> {
	const deadline = performance.now() + 30_000;
	const addresses = new Set(nodes.map(nodeAddress));
	while ([...client.hosts.values()].some((h) => addresses.has(h.address) && h.isUp())) {
		if (performance.now() > deadline)
			throw new Error(`the client still sees nodes ${nodes.join(", ")} up after 30 s`);
		await sleep(20);
	}
}

/**
 * Returns a function that SIGKILLs node `n` at once, synchronously (for a kill timed against a
 * request in flight), and a promise for when it is gone.
 */
export function armKill(n: NodeNumber): { kill: () => void; gone: () => Promise<void> } {
	const pid = nodePid(n);
	return {
		kill: () => process.kill(pid, "SIGKILL"),
		gone: () => gone(n, pid),
	};
}

/**
 * Starts nodes of a running cluster again with their data (start.sh N...), which returns once
 * each accepts CQL and every node has seen it UP.
 */
export function startNodes(nodes: readonly NodeNumber[]): Promise<void> {
	return new Promise((resolve, reject) => {
		execFile(
			"bash",
			[`${SCRIPTS}/start.sh`, ...nodes.map(String)],
			{ timeout: 240_000 },
			(error, stdout, stderr) => {
				if (error)
					reject(
						new Error(`start.sh ${nodes.join(" ")} failed: ${error.message}\n${stdout}${stderr}`),
					);
				else resolve();
			},
		);
	});
}

/**
 * Waits until `client` sees all three nodes up and each one, as coordinator, completes a read at
 * consistency ALL of `keyspace.table`: every node then sees every other node UP.
 */
export async function waitHealthy(
	client: Client,
	keyspace: string,
	table = "ttl_values",
): Promise<void> {
	const deadline = performance.now() + 120_000;
	let last = "";
	for (;;) {
		const hosts = [...client.hosts.values()];
		try {
			if (hosts.length !== 3 || !hosts.every((h) => h.isUp())) {
				throw new Error(
					`the client sees ${hosts.filter((h) => h.isUp()).length} of ${hosts.length} hosts up`,
				);
			}
			for (const host of hosts) {
				await client.execute(`SELECT p_key FROM ${keyspace}.${table} LIMIT 1`, [], {
					host,
					consistency: types.consistencies.all,
				});
			}
			return;
		} catch (error) {
			last = error instanceof Error ? error.message : String(error);
		}
		if (performance.now() > deadline)
			throw new Error(`the cluster is not healthy after 120 s: ${last}`);
		await sleep(250);
	}
}

/**
 * Runs `body`, which kills some of `nodes`, then restarts those that are down and waits until the
 * cluster is healthy again, whatever `body` did: later tests see 3 nodes.
 */
export async function withNodesDown<T>(
	client: Client,
	keyspace: string,
	nodes: readonly NodeNumber[],
	body: () => Promise<T>,
): Promise<T> {
	try {
		return await body();
	} finally {
		const down = nodes.filter((n) => {
			try {
				nodePid(n);
				return false;
			} catch {
				return true;
			}
		});
		if (down.length > 0) await startNodes(down);
		await waitHealthy(client, keyspace);
	}
}

/**
 * The table IDs that nodes 1-3 ever created for `keyspace.table`, read from their data
 * directories (`<table>-<id without dashes>`, kept after Cassandra drops a table that lost a
 * schema conflict), as dashed UUIDs, sorted and without repeats.
 */
export function createdTableIds(keyspace: string, table: string): string[] {
	const ids = new Set<string>();
	for (const n of [1, 2, 3] as const) {
		let names: string[] = [];
		try {
			names = readdirSync(`${WORK}/node${n}/data/data/${keyspace}`);
		} catch {
			// No directory: this node created no table of the keyspace.
		}
		for (const name of names) {
			const hex = /^(.+)-([0-9a-f]{32})$/.exec(name);
			if (hex?.[1] !== table || hex[2] === undefined) continue;
			ids.add(new types.Uuid(Buffer.from(hex[2], "hex")).toString());
		}
	}
	return [...ids].sort();
}
