// Two and more real host processes on one DynamoDB Local table: kill -9 failover, SIGSTOP beyond
// the killer deadline, a storage that stops answering (services refuse after the local lease
// deadline before the killer fires), and a stolen record (exit 1). Checks from the processes'
// own logs that no two lease intervals of slot 1 overlap and that nobody acted after its deadline.
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { parseLeaderValue } from "@vvm/orch";
import { createDynamoTTLStorage } from "@vvm/ttlstorage-dyn";
import { hostPort, requireServer } from "@vvm/vitest-config/servers";
import { afterAll, describe, expect, it } from "vitest";
import type { HostProcess, LogLine } from "./support/host-process.ts";
import { killHard, spawnHost } from "./support/host-process.ts";
import type { PausableProxy } from "./support/pausable-proxy.ts";
import { startPausableProxy } from "./support/pausable-proxy.ts";

const ENDPOINT = process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000";
const { host: DYN_HOST, port: DYN_PORT } = hostPort(ENDPOINT, 8000);
const skip = await requireServer({
	name: "DynamoDB Local",
	host: DYN_HOST,
	port: DYN_PORT,
	enabledVar: "DYNAMODB_TESTS_ENABLED",
	startHint: "bash tooling/servers/dynamodb/start.sh",
});

const D_SECONDS = 4;
const D = D_SECONDS * 1000;
const TABLE = `vvm_failover_${process.pid}_${Date.now()}`;
const spawned: HostProcess[] = [];
const proxies: PausableProxy[] = [];

const client = new DynamoDBClient({
	endpoint: ENDPOINT,
	region: "us-east-1",
	credentials: { accessKeyId: "local", secretAccessKey: "local" },
});

afterAll(async () => {
	for (const h of spawned) killHard(h);
	for (const p of proxies) await p.close();
	if (!skip) await client.send(new DeleteTableCommand({ TableName: TABLE })).catch(() => {});
	client.destroy();
});

/** A host on DynamoDB Local (the host refuses a flag given twice: `table` instead of an extra). */
function start(
	name: string,
	endpoint = ENDPOINT,
	extra: string[] = [],
	table = TABLE,
): HostProcess {
	const host = spawnHost(name, [
		"--storage",
		"dyn",
		"--dyn-endpoint",
		endpoint,
		"--dyn-table",
		table,
		"--http-port",
		"0",
		"--leadership-seconds",
		String(D_SECONDS),
		"--acquire-retry-ms",
		"100",
		"--acquire-timeout-ms",
		"60000",
		"--work-interval-ms",
		"50",
		"--log-level",
		"debug",
		...extra,
	]);
	spawned.push(host);
	return host;
}

const ev = (name: string) => (l: LogLine) => l.event === name;

interface Lease {
	readonly name: string;
	readonly start: number;
	readonly end: number;
}

/**
 * Lease interval of one process, from its own log: from its acquisition to its last known local
 * lease deadline, or earlier to the moment it stopped its services (shutdown or a problem: the
 * services' signal aborts then, and the record is released only after they stopped).
 */
function leaseOf(host: HostProcess): Lease | undefined {
	const acquired = host.lines.find(ev("acquired"));
	if (acquired === undefined) return undefined;
	// leaseUntil: the wall time of the (monotonic) lease deadline when it was logged; the hosts
	// share this machine's wall clock, so their intervals compare.
	let end = acquired.leaseUntil as number;
	for (const l of host.lines) {
		if (l.event === "renewed" && (l.leaseUntil as number) > end) end = l.leaseUntil as number;
	}
	const stopped = host.lines.find((l) => l.event === "shutdown-started" || l.event === "problem");
	if (stopped !== undefined && stopped.time < end) end = stopped.time;
	return { name: host.name, start: acquired.time, end };
}

describe.skipIf(skip)("failover between host processes on DynamoDB Local", () => {
	it("kill -9, SIGSTOP and a silent storage: one leader at a time, services refuse after the local deadline", {
		timeout: 120_000,
	}, async () => {
		const numbers: Record<string, number | string> = {};

		// 1. A leads, B waits.
		const a = start("A");
		await a.waitFor(ev("services-started"));
		const b = start("B");
		await b.waitFor(ev("acquire-failed"));
		const bReady = await fetch(`http://127.0.0.1:${await b.port()}/readyz`);
		expect(bReady.status).toBe(503);

		// 2. kill -9 A: B leads within duration + duration/4.
		const killedAt = Date.now();
		process.kill(a.pid, "SIGKILL");
		const bLeader = await b.waitFor(ev("leader"));
		numbers.killFailoverMs = bLeader.time - killedAt;
		expect(bLeader.time - killedAt).toBeLessThanOrEqual(D + D / 4);
		expect((await a.exited).signal).toBe("SIGKILL");

		// 3. C waits; SIGSTOP B for longer than its killer deadline; C leads; B dies when resumed.
		const c = start("C", ENDPOINT);
		await c.waitFor(ev("acquire-failed"));
		const stoppedAt = Date.now();
		process.kill(b.pid, "SIGSTOP");
		const cLeader = await c.waitFor(ev("leader"));
		numbers.stopFailoverMs = cLeader.time - stoppedAt;
		// make sure the stop outlasted B's killer deadline (0.8 d after its last renewal) by a margin
		const bLease = leaseOf(b) as Lease;
		while (Date.now() < bLease.end + 500) await new Promise((r) => setTimeout(r, 50));
		const resumedAt = Date.now();
		process.kill(b.pid, "SIGCONT");
		const bExit = await b.exited;
		numbers.resumedDeadAfterMs = bExit.at - resumedAt;
		numbers.resumedExit = bExit.signal ?? `code ${bExit.code}`;
		expect(bExit.signal === "SIGKILL" || bExit.code === 1).toBe(true);
		expect(b.lines.filter(ev("work")).every((l) => l.time < bLease.end)).toBe(true);
		// C logs "leader" before its services (the command processor's partitions) have started;
		// /readyz says ready from "services-started" on: wait for that event, not for a moment.
		await c.waitFor(ev("services-started"));
		expect((await fetch(`http://127.0.0.1:${await c.port()}/readyz`)).status).toBe(200);

		// 4. D waits; C's storage stops answering (a paused proxy in front of DynamoDB for C only).
		//    After its local lease deadline E refuses to act while still alive; then it dies; D leads.
		const proxy = await startPausableProxy(DYN_HOST, DYN_PORT);
		proxies.push(proxy);
		const e = start("E", `http://127.0.0.1:${proxy.port}`);
		// E must be the leader behind the proxy: C steps down gracefully first.
		await e.waitFor(ev("acquire-failed"));
		c.child.kill("SIGTERM");
		expect((await c.exited).code).toBe(0);
		await e.waitFor(ev("services-started"));
		const d = start("D");
		await d.waitFor(ev("acquire-failed"));
		await e.waitFor(ev("renewed"));
		const pausedAt = Date.now();
		proxy.pause();
		// Once E's local lease deadline has passed (its renewals hang, so it cannot move), E is
		// still alive (its killer fires only 0.75 d after the hanging renewal was sent) but refuses.
		const eLease = leaseOf(e) as Lease;
		const renewalsBefore = e.lines.filter(ev("renewed")).length;
		await new Promise((r) => setTimeout(r, Math.max(0, eLease.end - Date.now()) + 20));
		const work = await fetch(`http://127.0.0.1:${await e.port()}/work`, { method: "POST" });
		expect(work.status).toBe(503);
		const refused = await e.waitFor((l) => l.event === "refused" && l.source === "http");
		expect(refused.at as number).toBeGreaterThanOrEqual(eLease.end);
		// no renewal got through meanwhile
		expect(e.lines.filter(ev("renewed")).length).toBe(renewalsBefore);
		const eExit = await e.exited;
		expect(eExit.at).toBeGreaterThan(refused.time); // it refused while alive, then died
		const killerLine = e.lines.find(ev("killer"));
		if (killerLine !== undefined) expect(refused.time).toBeLessThan(killerLine.time);
		numbers.silentStorageExit = eExit.signal ?? `code ${eExit.code}`;
		numbers.refusedAfterDeadlineMs = (refused.at as number) - eLease.end;
		numbers.leaseDeadlineToDeathMs = eExit.at - eLease.end;
		const dLeader = await d.waitFor(ev("leader"));
		numbers.silentFailoverMs = dLeader.time - pausedAt;

		// 5. Safety from the logs: lease intervals of slot 1 never overlap; no work after a deadline.
		const hosts = [a, b, c, e, d];
		// Every leader value is <address>#<nonce>, and no two processes wrote the same one.
		const holders = hosts.map((h) => {
			const acquired = h.lines.find(ev("acquired")) as LogLine;
			const holder = acquired.holder as string;
			expect(parseLeaderValue(holder).address).toBe(acquired.address);
			expect(parseLeaderValue(holder).nonce).toMatch(/^[0-9a-f]{12}$/);
			return holder;
		});
		expect(new Set(holders).size).toBe(hosts.length);
		const leases = hosts.map(leaseOf).filter((l): l is Lease => l !== undefined);
		expect(leases.map((l) => l.name).sort()).toEqual(["A", "B", "C", "D", "E"]);
		leases.sort((x, y) => x.start - y.start);
		for (let i = 1; i < leases.length; i++) {
			const prev = leases[i - 1] as Lease;
			const next = leases[i] as Lease;
			expect(
				next.start,
				`${next.name} started before ${prev.name}'s lease ended`,
			).toBeGreaterThanOrEqual(prev.end);
		}
		for (const h of hosts) {
			for (const w of h.lines.filter(ev("work"))) {
				expect(w.leaseLeftMs as number, `${h.name} acted after its lease deadline`).toBeGreaterThan(
					0,
				);
			}
			for (const l of h.lines) expect(typeof l.time).toBe("number");
		}
		numbers.minGapBetweenLeasesMs = Math.min(
			...leases.slice(1).map((l, i) => l.start - (leases[i] as Lease).end),
		);
		console.log(`[failover] d=${D_SECONDS}s ${JSON.stringify(numbers)}`);
		d.child.kill("SIGTERM");
		expect((await d.exited).code).toBe(0);
	});

	it("a leader whose record is taken exits 1 saying the leadership was lost", {
		timeout: 60_000,
	}, async () => {
		const host = start("thief-victim", ENDPOINT, [], `${TABLE}_b`);
		const leader = await host.waitFor(ev("leader"));
		const storage = vvmLeadershipStorage(
			createDynamoTTLStorage({ client, tableName: `${TABLE}_b` }),
		);
		// the record holds address#nonce (the holder), not the bare address
		expect(await storage.get(1)).toBe(leader.holder);
		expect(await storage.compareAndSwap(1, leader.address as string, "intruder", 60)).toBe(false);
		expect(await storage.compareAndSwap(1, leader.holder as string, "intruder", 60)).toBe(true);
		const exit = await host.exited;
		expect(exit.code).toBe(1);
		expect(host.stderr.join("\n")).toContain("leadership lost");
		expect(await storage.get(1)).toBe("intruder"); // the loser never deletes another's record
		await client.send(new DeleteTableCommand({ TableName: `${TABLE}_b` })).catch(() => {});
	});
});
