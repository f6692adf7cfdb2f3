// Faults under elections on a real PostgreSQL, with the database's clock deciding expiry: injected
// faults (withFaults), backends killed by pg_terminate_backend, statement and client timeouts, and
// a server restarted (`pg_ctl restart -m immediate`) during renewals. In every one: never two
// leaders at once, and every error that surfaces carries a code.
import { execFile } from "node:child_process";
import { readFile, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { systemClock } from "@vvm/clock";
import type { LeadershipEvent } from "@vvm/ielections";
import { createElections, createElectionsStorage, ElectionsError } from "@vvm/ielections";
import { RecordingKiller } from "@vvm/ielections/testing";
import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { unusedPort } from "@vvm/vitest-config/servers";
import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPgTTLStorage, ensurePgSchema } from "../src/index.ts";
import { newPool, pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_faults", skip);
const run = `${process.pid}-${Date.now().toString(36)}`;
const sleep = (ms: number) => systemClock.sleep(ms);

/** What a fault run saw: acquisitions, overlaps of two leaders, and the code of every error. */
interface RaceReport {
	acquisitions: number;
	readonly overlaps: string[];
	readonly codes: Map<string, number>;
	readonly uncoded: unknown[];
}

function codeOf(error: unknown): string | undefined {
	if (TTLStorageError.is(error)) return error.code;
	if (ElectionsError.is(error)) return error.code;
	return undefined;
}

/**
 * Electors (one per storage, as separate processes would be) campaign for one key with
 * `durationSeconds` leaderships until `stop()`, each leader releasing after `holdMs` if given. At
 * every acquisition, no other elector may still
 * hold a lease: a leadership whose signal is not aborted and whose lease deadline is still ahead.
 */
function race(storages: readonly TTLStorage[], durationSeconds: number, holdMs?: number) {
	const key = `race/${run}/${Math.random().toString(36).slice(2)}`;
	const report: RaceReport = { acquisitions: 0, overlaps: [], codes: new Map(), uncoded: [] };
	let stopped = false;
	const record = (error: unknown): void => {
		const code = codeOf(error);
		if (code === undefined) report.uncoded.push(error);
		else report.codes.set(code, (report.codes.get(code) ?? 0) + 1);
	};
	const electors = storages.map((driver, i) => {
		const onEvent = (e: LeadershipEvent<string, string>): void => {
			if ("error" in e && e.error !== undefined) record(e.error);
			if (e.type !== "acquired") return;
			report.acquisitions++;
			const now = systemClock.monotonic();
			electors.forEach((other, j) => {
				const held = j === i ? undefined : other.elections.leadership(key);
				if (held !== undefined && !held.signal.aborted && held.leaseDeadline > now)
					report.overlaps.push(
						`elector ${i} acquired while elector ${j} held a lease for ${Math.round(held.leaseDeadline - now)} ms more`,
					);
			});
		};
		const elections = createElections(
			createElectionsStorage<string, string>(driver, {
				pKey: () => utf8(`faults/${run}`),
				cCols: utf8,
				encodeValue: utf8,
				decodeValue: fromUtf8,
			}),
			{ killer: new RecordingKiller(), onEvent },
		);
		return { elections };
	});
	// Each elector campaigns, and gives the leadership up after holding it for `holdMs` (so the
	// key changes hands under the faults too).
	const loops = electors.map(async ({ elections }, i) => {
		while (!stopped) {
			const held = elections.leadership(key);
			if (held === undefined)
				await elections.acquireLeadership(key, `elector-${i}`, durationSeconds);
			else if (holdMs !== undefined && systemClock.monotonic() - held.acquiredAt > holdMs)
				// A release whose delete failed rejects with the storage error (the record then expires).
				await elections.releaseLeadership(key).catch(record);
			await sleep(50); // the pace of the campaign, not a synchronisation
		}
	});
	return {
		key,
		report,
		async stop(): Promise<RaceReport> {
			stopped = true;
			await Promise.all(loops);
			// A release whose delete fails (an injected fault can hit it) makes cleanup() reject with
			// the storage errors (an AggregateError); they are recorded like the others.
			await Promise.all(
				electors.map(({ elections }) =>
					elections
						.cleanup()
						.catch((e: unknown) => (e instanceof AggregateError ? e.errors : [e]).forEach(record)),
				),
			);
			return report;
		},
	};
}

function expectSafe(report: RaceReport, codes: readonly string[]): void {
	// VVM_FAULTS_REPORT=1 prints what each run saw (for the README's numbers).
	if (process.env.VVM_FAULTS_REPORT === "1")
		process.stderr.write(
			`faults: ${expect.getState().currentTestName}: ${report.acquisitions} acquisitions, ${report.overlaps.length} overlaps, errors ${JSON.stringify(Object.fromEntries(report.codes))}\n`,
		);
	expect(report.overlaps).toEqual([]);
	expect(
		report.uncoded.map((e) => (e instanceof Error ? (e.stack ?? String(e)) : String(e))),
	).toEqual([]);
	for (const code of report.codes.keys()) expect(codes).toContain(code);
	expect(report.acquisitions).toBeGreaterThan(0);
}

async function rejection(p: Promise<unknown>): Promise<TTLStorageError> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e,
	);
	expect(TTLStorageError.is(error), `expected a TTLStorageError, got ${String(error)}`).toBe(true);
	return error as TTLStorageError;
}

/** Resolves once a session of `pool`'s server whose query contains `querying` waits for a lock. */
async function waitsForALock(pool: pg.Pool, querying: string): Promise<void> {
	for (;;) {
		const r = await pool.query(
			"SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE $1",
			[`%${querying}%`],
		);
		if (r.rows[0]?.n > 0) return;
		await new Promise((resolve) => setImmediate(resolve));
	}
}

/** A session holding a row lock on one record until `commit()`. */
async function lockRecord(pool: pg.Pool, schema: string, pKey: Uint8Array, cCols: Uint8Array) {
	const client = await pool.connect();
	await client.query("BEGIN");
	await client.query(
		`SELECT 1 FROM "${schema}".vvm_ttl WHERE p_key = $1 AND c_cols = $2 FOR UPDATE`,
		[Buffer.from(pKey), Buffer.from(cCols)],
	);
	return {
		async commit() {
			await client.query("COMMIT");
			client.release();
		},
	};
}

/** A deterministic PRNG (mulberry32), so a failing run can be replayed. */
function prng(seed: number): () => number {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

describe.skipIf(skip)(`ttlstorage-pg under faults${skip ? ` [skipped: ${skip}]` : ""}`, () => {
	it("injected faults (withFaults): unknown outcomes applied or not, unavailable, slow calls; never two leaders", async () => {
		const { pool, schema } = fixture();
		const seed = Number(process.env.VVM_FAULTS_SEED ?? 20_261_124);
		const random = prng(seed);
		const writes = ["insertIfNotExists", "compareAndSwap", "compareAndDelete"] as const;
		const storages = Array.from({ length: 3 }, () => {
			const s = withFaults(createPgTTLStorage({ pool, schema, sweepIntervalMs: 1_000 }));
			s.inject({ on: writes, match: () => random() < 0.1, action: faults.unknownOutcome(true) });
			s.inject({ on: writes, match: () => random() < 0.05, action: faults.unknownOutcome(false) });
			s.inject({
				on: "*",
				match: () => random() < 0.1,
				action: faults.fail("TTLSTORAGE_UNAVAILABLE"),
			});
			s.inject({ on: "*", match: () => random() < 0.1, action: faults.delay(300) });
			return s;
		});
		const r = race(storages, 2, 1_000);
		await sleep(8_000);
		const report = await r.stop();
		expectSafe(report, [
			"TTLSTORAGE_UNAVAILABLE",
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			"ELECTIONS_STORAGE_ERROR",
			"ELECTIONS_LOST",
		]);
		expect(report.codes.size, `seed ${seed}`).toBeGreaterThan(0);
		expect(report.acquisitions).toBeGreaterThan(1);
		await Promise.all(storages.map((s) => s.close()));
	}, 30_000);

	it("backends killed by pg_terminate_backend during renewals: never two leaders, errors coded", async () => {
		const { schema } = fixture();
		const app = `vvm-faults-${run}`;
		const pools = [newPool({ application_name: app }), newPool({ application_name: app })];
		const admin = newPool();
		try {
			const storages = pools.map((pool) =>
				createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 }),
			);
			const r = race(storages, 2, 1_000);
			let killed = 0;
			const until = performance.now() + 6_000;
			while (performance.now() < until) {
				const k = await admin.query(
					"SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity WHERE application_name = $1",
					[app],
				);
				killed += k.rows[0]?.n ?? 0;
				await sleep(100 + Math.floor(Math.random() * 200));
			}
			const report = await r.stop();
			expectSafe(report, [
				"TTLSTORAGE_UNAVAILABLE",
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				"ELECTIONS_STORAGE_ERROR",
				"ELECTIONS_LOST",
			]);
			expect(killed).toBeGreaterThan(0);
		} finally {
			await Promise.all([...pools, admin].map((p) => p.end()));
		}
	}, 30_000);

	it("a write whose backend is terminated mid-statement is OUTCOME_UNKNOWN, a read UNAVAILABLE; the storage goes on", async () => {
		const { pool, schema } = fixture();
		const app = `vvm-kill-${run}`;
		const victim = newPool({ application_name: app });
		try {
			const storage = createPgTTLStorage({ pool: victim, schema, sweepIntervalMs: 0 });
			const [p, c] = [utf8(`kill/${run}`), utf8("k")];
			await storage.put(p, c, utf8("v"));
			const lock = await lockRecord(pool, schema, p, c);
			const swap = rejection(storage.compareAndSwap(p, c, utf8("v"), utf8("w"), 5));
			await waitsForALock(pool, "UPDATE");
			await pool.query(
				"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
				[app],
			);
			const error = await swap;
			expect(error.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			expect(error.message).toMatch(/57P01|terminat/);
			await lock.commit();
			expect(fromUtf8((await storage.get(p, c)) ?? utf8("missing"))).toBe("v"); // rolled back
			expect(await storage.compareAndSwap(p, c, utf8("v"), utf8("w"), 5)).toBe(true);
		} finally {
			await victim.end();
		}
	});

	it("statement_timeout: a renewal stuck on a row lock fails with UNAVAILABLE, writes nothing, and the leadership ends before anyone else gets the key", async () => {
		const { schema } = fixture();
		const pools = [newPool({ statement_timeout: 250 }), newPool({ statement_timeout: 250 })];
		const admin = newPool();
		try {
			const storages = pools.map((pool) =>
				createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 }),
			);
			// Directly: a swap that times out wrote nothing.
			const [p, c] = [utf8(`timeout/${run}`), utf8("k")];
			await storages[0]?.put(p, c, utf8("v"));
			const lock = await lockRecord(admin, schema, p, c);
			const error = await rejection(
				storages[0]?.compareAndSwap(p, c, utf8("v"), utf8("w"), 5) ?? Promise.resolve(),
			);
			expect(error.code).toBe("TTLSTORAGE_UNAVAILABLE");
			expect(error.message).toMatch(/57014/);
			await lock.commit();
			expect(fromUtf8((await storages[0]?.get(p, c)) ?? utf8("missing"))).toBe("v");
			// Under elections: the leader's record is locked for 3 s (its renewals time out, and so do
			// the other's attempts to insert), then released.
			const r = race(storages, 2);
			for (;;) {
				const held = await admin.query(
					`SELECT p_key, c_cols FROM "${schema}".vvm_ttl WHERE p_key = $1 AND c_cols = $2`,
					[Buffer.from(`faults/${run}`), Buffer.from(r.key)],
				);
				if (held.rows.length > 0) {
					const row = held.rows[0] as { p_key: Buffer; c_cols: Buffer };
					const stuck = await lockRecord(admin, schema, row.p_key, row.c_cols);
					await sleep(3_000);
					await stuck.commit();
					break;
				}
				await sleep(50);
			}
			await sleep(3_000);
			const report = await r.stop();
			expectSafe(report, [
				"TTLSTORAGE_UNAVAILABLE",
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				"ELECTIONS_STORAGE_ERROR",
				"ELECTIONS_LOST",
			]);
			expect(report.codes.get("TTLSTORAGE_UNAVAILABLE") ?? 0).toBeGreaterThan(0);
		} finally {
			await Promise.all([...pools, admin].map((p) => p.end()));
		}
	}, 30_000);

	it("a client query_timeout is OUTCOME_UNKNOWN, never false: the swap lands once the lock is gone", async () => {
		const { pool, schema } = fixture();
		const impatient = newPool({ query_timeout: 250 });
		try {
			const storage = createPgTTLStorage({ pool: impatient, schema, sweepIntervalMs: 0 });
			const [p, c] = [utf8(`qtimeout/${run}`), utf8("k")];
			await storage.put(p, c, utf8("v"));
			const lock = await lockRecord(pool, schema, p, c);
			const error = await rejection(storage.compareAndSwap(p, c, utf8("v"), utf8("w"), 5));
			expect(error.code).toBe("TTLSTORAGE_OUTCOME_UNKNOWN");
			await lock.commit();
			// The statement was on the server all along: it runs as soon as the row is free.
			const direct = createPgTTLStorage({ pool, schema, sweepIntervalMs: 0 });
			for (;;) {
				const v = await direct.get(p, c);
				if (v !== undefined && fromUtf8(v) === "w") break;
				await sleep(20);
			}
		} finally {
			await impatient.end();
		}
	});
});

// --- a server of its own, restarted ---------------------------------------------------------------

const servers = join(dirname(fileURLToPath(import.meta.url)), "../../../tooling/servers/postgres");
const exec = promisify(execFile);

/**
 * The value of a record, read again while the read fails as unavailable (a pooled connection the
 * restart broke is found out only when used; the next one is new).
 */
async function readBack(storage: TTLStorage, pKey: Uint8Array, cCols: Uint8Array): Promise<string> {
	for (let attempt = 1; ; attempt++) {
		try {
			const value = await storage.get(pKey, cCols);
			return value === undefined ? "lost" : fromUtf8(value);
		} catch (error) {
			if (attempt >= 10 || !TTLStorageError.is(error) || error.code !== "TTLSTORAGE_UNAVAILABLE")
				throw error;
		}
	}
}

describe.skipIf(skip)(
	`ttlstorage-pg: server restarted during renewals${skip ? ` [skipped: ${skip}]` : ""}`,
	() => {
		// Its own PostgreSQL (tooling/servers/postgres with PG_INSTANCE), so restarting it leaves the
		// server of the other test files alone.
		let env: NodeJS.ProcessEnv = {};
		let port = 0;
		beforeAll(async () => {
			port = await unusedPort();
			env = {
				...process.env,
				PG_INSTANCE: `postgres-faults-${process.pid}`,
				PG_PORT: String(port),
			};
			await exec("bash", [join(servers, "start.sh")], { env });
		}, 120_000);
		afterAll(async () => {
			await exec("bash", [join(servers, "stop.sh")], { env });
			const work = join(servers, "../../../.servers", String(env.PG_INSTANCE));
			// Where the server's files went when its user could not reach the checkout (lib.sh).
			const runtime = await readFile(join(work, "runtime"), "utf8").catch(() => undefined);
			if (runtime !== undefined) await rm(runtime.trim(), { recursive: true, force: true });
			await rm(work, { recursive: true, force: true });
		}, 60_000);

		it("pg_ctl restart -m immediate twice while a leader renews: never two leaders, errors coded, acknowledged writes survive", async () => {
			const pools = [newPool({ port }), newPool({ port })];
			try {
				await ensurePgSchema(pools[0] as pg.Pool, { schema: "vvm" });
				const storages = pools.map((pool) =>
					createPgTTLStorage({ pool, schema: "vvm", sweepIntervalMs: 500 }),
				);
				const r = race(storages, 3, 1_500);
				await sleep(2_000);
				const marker = utf8(`restart/${run}`);
				for (let i = 0; i < 2; i++) {
					// An acknowledged write survives the crash (crash recovery replays the WAL).
					await storages[0]?.put(marker, utf8(`${i}`), utf8(`acknowledged ${i}`));
					const { stdout } = await exec("bash", [join(servers, "restart.sh")], { env });
					expect(stdout).toMatch(/restarted \(immediate\)/);
					await sleep(2_500);
					expect(await readBack(storages[1] as TTLStorage, marker, utf8(`${i}`))).toBe(
						`acknowledged ${i}`,
					);
				}
				const report = await r.stop();
				expectSafe(report, [
					"TTLSTORAGE_UNAVAILABLE",
					"TTLSTORAGE_OUTCOME_UNKNOWN",
					"ELECTIONS_STORAGE_ERROR",
					"ELECTIONS_LOST",
				]);
				expect(report.codes.size).toBeGreaterThan(0);
			} finally {
				await Promise.all(pools.map((p) => p.end()));
			}
		}, 60_000);
	},
);
