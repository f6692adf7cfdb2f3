// The child-process kill test of issue 15: the host (level storage on disk) is SIGKILLed at random
// moments under concurrent load and restarted, many times; then the storage must hold every
// acknowledged command, dense PLog and WLog offsets and no record ID handed out twice
// (`checkCpStorage` of @vvm/cp). VVM_KILL_TEST_KILLS sets the number of kills (200 in CI).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AcknowledgedCommand } from "@vvm/cp/testing";
import { checkCpStorage } from "@vvm/cp/testing";
import { vvmLeadershipStorage } from "@vvm/ielections";
import { unusedPort } from "@vvm/vitest-config/servers";
import { afterAll, expect, it } from "vitest";
import { HOST_APP_ID } from "../src/host.ts";
import type { HostProcess } from "./support/host-process.ts";
import { killHard, spawnHost } from "./support/host-process.ts";
import { withLevelStorage } from "./support/level-db.ts";

const KILLS = Number(process.env.VVM_KILL_TEST_KILLS ?? (process.env.CI ? 200 : 40));
const PARTITIONS = 4;
const WORKSPACES = 24;
const CLIENTS = 6;
const CUSTOMER = "app1pkg.Customer";

const spawned: HostProcess[] = [];
let dir = "";
afterAll(async () => {
	for (const h of spawned) killHard(h);
	if (dir !== "") await rm(dir, { recursive: true, force: true });
});

/**
 * The killed process is provably dead (its exit was observed), so its leader record is deleted
 * here: the restart leads at once instead of waiting out the record's TTL. Leadership safety is
 * tested elsewhere (failover, chaos); this test is about the command processor's durability.
 */
async function clearLeaderRecord(path: string): Promise<void> {
	await withLevelStorage(path, async (driver) => {
		const leaders = vvmLeadershipStorage(driver);
		const value = await leaders.get(1);
		if (value !== undefined) await leaders.compareAndDelete(1, value);
	});
}

interface Load {
	readonly acknowledged: AcknowledgedCommand[];
	/** Real IDs of acknowledged customers per workspace, for updates and reads. */
	readonly customers: Map<number, number[]>;
	stats: { sent: number; refused: number; failed: number; statuses: Map<number, number> };
	stop(): Promise<void>;
}

/** Concurrent clients that create, update and run sys.CUD against the host, across restarts. */
function startLoad(base: string): Load {
	const acknowledged: AcknowledgedCommand[] = [];
	const customers = new Map<number, number[]>();
	const stats = { sent: 0, refused: 0, failed: 0, statuses: new Map<number, number>() };
	let running = true;
	let seq = 0;
	const one = async (): Promise<void> => {
		const wsid = 1 + Math.floor(Math.random() * WORKSPACES);
		const ws = `${base}/api/v2/apps/vvm/demo/workspaces/${wsid}`;
		const known = customers.get(wsid) ?? [];
		const pick = Math.random();
		let url: string;
		let method = "POST";
		let body: unknown;
		if (pick < 0.15 && known.length > 0) {
			const id = known[Math.floor(Math.random() * known.length)] as number;
			url = `${ws}/docs/${CUSTOMER}/${id}`;
			method = "PATCH";
			body = { vip: Math.random() < 0.5, email: `u${seq++}@example.com` };
		} else if (pick < 0.35) {
			url = `${ws}/commands/sys.CUD`;
			body = {
				cuds: [
					{ fields: { "sys.ID": 1, "sys.QName": CUSTOMER, name: `c${seq++}` } },
					{
						fields: {
							"sys.ID": 2,
							"sys.QName": "app1pkg.Address",
							"sys.ParentID": 1,
							city: "Oslo",
						},
					},
				],
			};
		} else {
			url = `${ws}/docs/${CUSTOMER}`;
			body = { name: `n${seq++}` };
		}
		stats.sent++;
		let res: Response;
		try {
			res = await fetch(url, {
				method,
				body: JSON.stringify(body),
				headers: { "content-type": "application/json" },
				signal: AbortSignal.timeout(5_000),
			});
		} catch {
			stats.refused++; // the host is down or was killed mid-request: not acknowledged
			await new Promise((r) => setTimeout(r, 5));
			return;
		}
		let text: string;
		try {
			text = await res.text();
		} catch {
			stats.refused++;
			return;
		}
		stats.statuses.set(res.status, (stats.statuses.get(res.status) ?? 0) + 1);
		if (res.status !== 200 && res.status !== 201) {
			if (res.status !== 503) stats.failed++;
			await new Promise((r) => setTimeout(r, 5));
			return;
		}
		const answer = JSON.parse(text) as {
			CurrentWLogOffset: number;
			NewIDs: Record<string, number>;
		};
		const plogOffset = Number(res.headers.get("vvm-plog-offset"));
		acknowledged.push({ wsid, result: { ...answer, plogOffset } });
		const created = answer.NewIDs["1"];
		if (created !== undefined) customers.set(wsid, [...known, created]);
	};
	const clients = Array.from({ length: CLIENTS }, async () => {
		while (running) await one();
	});
	return {
		acknowledged,
		customers,
		stats,
		async stop() {
			running = false;
			await Promise.all(clients);
		},
	};
}

it(`acknowledged commands survive ${KILLS} SIGKILLs of the host under load`, {
	timeout: 15 * 60_000,
}, async () => {
	dir = await mkdtemp(join(tmpdir(), "vvm-host-kill-"));
	const port = await unusedPort();
	const base = `http://127.0.0.1:${port}`;
	const args = [
		"--storage",
		"level",
		"--data-dir",
		dir,
		"--http-port",
		String(port),
		"--partitions",
		String(PARTITIONS),
		"--leadership-seconds",
		"5",
		"--acquire-retry-ms",
		"50",
		"--acquire-timeout-ms",
		"30000",
		"--work-interval-ms",
		"0",
		"--log-level",
		"warn",
	];
	const load = startLoad(base);
	const started = performance.now();
	let killsUnderLoad = 0;
	try {
		for (let kill = 0; kill < KILLS; kill++) {
			const host = spawnHost(`kill-${kill}`, args);
			spawned.push(host);
			const acksBefore = load.acknowledged.length;
			// Most kills land while commands are acknowledged; one in five at any moment of start-up
			// and recovery (the partitions may be actualizing from the killed run's PLog).
			if (Math.random() < 0.2) {
				await new Promise((r) => setTimeout(r, Math.random() * 500));
			} else {
				const deadline = performance.now() + 20_000;
				while (load.acknowledged.length === acksBefore && performance.now() < deadline) {
					if (host.child.exitCode !== null) break;
					await new Promise((r) => setTimeout(r, 5));
				}
				expect(
					host.child.exitCode,
					`run ${kill} exited on its own: ${host.stderr.join("\n")}`,
				).toBeNull();
				expect(
					load.acknowledged.length,
					`run ${kill} acknowledged nothing within 20 s`,
				).toBeGreaterThan(acksBefore);
				await new Promise((r) => setTimeout(r, Math.random() * 150));
			}
			killHard(host);
			const exit = await host.exited;
			expect(exit.signal, `run ${kill}: ${host.stderr.join("\n")}`).toBe("SIGKILL");
			if (load.acknowledged.length > acksBefore) killsUnderLoad++;
			await clearLeaderRecord(dir);
		}
		// A last, graceful run: every acknowledged record reads back through the API.
		const last = spawnHost(
			"final",
			args.map((a) => (a === "warn" ? "info" : a)),
		);
		spawned.push(last);
		await last.waitFor((l) => l.event === "services-started", 30_000);
		await load.stop();
		const sample = load.acknowledged.filter((a) => a.result.NewIDs["1"] !== undefined).slice(-200);
		for (const a of sample) {
			const id = a.result.NewIDs["1"] as number;
			let res: Response;
			for (;;) {
				res = await fetch(
					`${base}/api/v2/apps/vvm/demo/workspaces/${a.wsid}/docs/${CUSTOMER}/${id}`,
				);
				if (res.status !== 503) break;
				await new Promise((r) => setTimeout(r, 20));
			}
			expect(res.status, `read of ${a.wsid}/${id}`).toBe(200);
			expect(((await res.json()) as Record<string, unknown>)["sys.ID"]).toBe(id);
		}
		last.child.kill("SIGTERM");
		expect((await last.exited).code).toBe(0);
	} finally {
		await load.stop();
	}
	const seconds = (performance.now() - started) / 1000;
	const report = await withLevelStorage(dir, (storage) =>
		checkCpStorage({
			storage,
			appId: HOST_APP_ID,
			partitions: PARTITIONS,
			acknowledged: load.acknowledged,
		}),
	);
	const statuses = Object.fromEntries(load.stats.statuses);
	console.log(
		`[kill] ${KILLS} SIGKILLs (${killsUnderLoad} with commands acknowledged in that run) in ${seconds.toFixed(1)} s; ` +
			`${load.acknowledged.length} acknowledged commands of ${load.stats.sent} sent (${load.stats.refused} cut off); ` +
			`answers ${JSON.stringify(statuses)}; storage: ${report.events} events, ${report.markers} marked, ` +
			`${report.workspaces} workspaces, ${report.records} records`,
	);
	expect(report.problems).toEqual([]);
	expect(report.ok).toBe(true);
	expect(report.acknowledged).toBe(load.acknowledged.length);
	expect(report.events).toBeGreaterThanOrEqual(load.acknowledged.length);
	expect(load.stats.failed, `unexpected answers ${JSON.stringify(statuses)}`).toBe(0);
	expect(killsUnderLoad).toBeGreaterThan(KILLS / 2);
});
