import type { BatchItem, Bytes, TTLStorage, WriteOptions } from "@vvm/ttlstorage";
import { fencedError } from "@vvm/ttlstorage";
import { createCassandraTTLStorage, ensureCassandraSchema } from "@vvm/ttlstorage-cas";
import { cassandraEnv, hostPort } from "@vvm/vitest-config/servers";
import { Client, policies, types } from "cassandra-driver";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Delegate } from "../src/delegate.ts";
import type { FaultProxy } from "../src/fault-proxy.ts";
import { startFaultProxy } from "../src/fault-proxy.ts";
import { describeWindow, summary, writeFailures } from "../src/report.ts";
import type { ProxiedStorage } from "../src/servers.ts";
import { cassandraGate, proxiedCassandra } from "../src/servers.ts";
import { runLincheck } from "../src/workload.ts";

const skip = await cassandraGate();

describe.skipIf(skip)("lincheck: cas behind the fault proxy", () => {
	let s: ProxiedStorage;
	beforeAll(async () => {
		s = await proxiedCassandra(22);
	});
	afterAll(async () => {
		await s?.close();
	});

	it("is linearizable", { timeout: 600_000 }, async () => {
		const report = await runLincheck(s.storage, {
			fencing: "ordered",
			atomicBatches: false,
			// The full mix: fenced puts, putBatch items and conditional writes race on one key (every
			// write is a lightweight transaction since issue 32; the driver's README has the proof).
			seed: 22,
			prefix: "cas",
			// A longer run (soak): LINCHECK_WINDOWS=200.
			windows: Number(process.env.LINCHECK_WINDOWS ?? 20),
			beforeWindow: () => s.proxy.startFaults(),
			afterWindow: () => s.proxy.stopFaults(),
		});
		console.log(summary("cas", report, s.proxy.counts()));
		for (const path of writeFailures("cas", report)) console.log(`violation: ${path}`);
		// The first violation in the log too (CI keeps no temp files).
		if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
		// Operations refused with UNAVAILABLE (a reconnecting client) are left out of the history.
		expect(report.ops).toBeGreaterThan(1500);
		expect(report.failed.map((f) => ({ window: f.window, verdict: f.verdict }))).toEqual([]);
	});
});

/**
 * The driver with its fenced puts (and fenced `putBatch` items) written as plain `UPDATE`s, as
 * before issue 32, instead of lightweight transactions on the stored stamp; every other call goes
 * to the real driver. A fenced write under an epoch below one raised through it is refused with
 * `TTLSTORAGE_FENCED`, as the driver does, so what the check finds is the order of plain writes
 * against Paxos rounds, not a missing fence.
 * - `"stamped"`: the old behaviour: `USING TIMESTAMP` a stamp from the middle of the current
 *   millisecond (above the last one), acknowledged once the clock has passed its millisecond;
 * - `"plain"`: the client's timestamp (`cassandra-driver`'s generator), no wait.
 */
class PlainFencedPuts extends Delegate {
	readonly #client: Client;
	readonly #cql: string;
	readonly #mode: "stamped" | "plain";
	readonly #epochs = new Map<string, bigint>();
	#last = 0n;

	constructor(inner: TTLStorage, client: Client, table: string, mode: "stamped" | "plain") {
		super(inner);
		this.#client = client;
		this.#mode = mode;
		this.#cql =
			mode === "stamped"
				? `UPDATE ${table} USING TTL ? AND TIMESTAMP ? SET value = ? WHERE p_key = ? AND c_col = ?`
				: `UPDATE ${table} USING TTL ? SET value = ? WHERE p_key = ? AND c_col = ?`;
	}

	protected override async doRaiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		const raised = await super.doRaiseFence(scope, epoch);
		const k = Buffer.from(scope).toString("hex");
		if (raised > (this.#epochs.get(k) ?? 0n)) this.#epochs.set(k, raised);
		return raised;
	}

	/**
	 * Refuses a superseded fence (before anything is written, as the driver does) and takes the
	 * item's stamp (`"stamped"`), synchronously at the call, as the driver did.
	 */
	#stampFor(fence: NonNullable<BatchItem["fence"]>, operation: string): bigint {
		const current = this.#epochs.get(Buffer.from(fence.scope).toString("hex")) ?? 0n;
		if (fence.epoch < current) throw fencedError("mutant", operation, fence.epoch, current);
		const now = BigInt(Date.now()) * 1000n;
		const floor = (now / 1000n) * 1000n + 500n;
		this.#last = floor > this.#last ? floor : this.#last + 1n;
		return this.#last;
	}

	/** The plain write, and (`"stamped"`) the commit wait until the clock passed its stamp. */
	async #plainPut(it: BatchItem, stamp: bigint): Promise<void> {
		const ttl = it.ttlSeconds === undefined || it.ttlSeconds === 0 ? 0 : it.ttlSeconds + 1;
		const key = [Buffer.from(it.value), Buffer.from(it.pKey), Buffer.from(it.cCols)];
		const options = { prepare: true, isIdempotent: false, consistency: types.consistencies.quorum };
		if (this.#mode === "plain") {
			await this.#client.execute(this.#cql, [ttl, ...key], options);
			return;
		}
		const stampLong = types.Long.fromString(stamp.toString());
		await this.#client.execute(this.#cql, [ttl, stampLong, ...key], options);
		while (BigInt(Date.now()) * 1000n < (stamp / 1000n + 1n) * 1000n)
			await new Promise((resolve) => setTimeout(resolve, 1));
	}

	override put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		if (options?.fence === undefined) return super.put(pKey, cCols, value, ttlSeconds, options);
		try {
			const stamp = this.#stampFor(options.fence, "put");
			return this.#plainPut({ pKey, cCols, value, ttlSeconds }, stamp);
		} catch (error) {
			return Promise.reject(error);
		}
	}

	override async putBatch(items: readonly BatchItem[]): Promise<void> {
		// Every fence checked and stamped before anything is written.
		const stamps = items.map((it) =>
			it.fence === undefined ? undefined : this.#stampFor(it.fence, "putBatch"),
		);
		for (const [i, it] of items.entries()) {
			const stamp = stamps[i];
			if (stamp === undefined) await super.put(it.pKey, it.cCols, it.value, it.ttlSeconds);
			else await this.#plainPut(it, stamp);
		}
	}
}

// Opt-in (about a minute of Cassandra per run): LINCHECK_CAS_MUTANT=plain or =stamped.
const mutant = process.env.LINCHECK_CAS_MUTANT;
const mutantSkip =
	skip ||
	(mutant === "plain" || mutant === "stamped"
		? undefined
		: "the mutant run is opt-in: LINCHECK_CAS_MUTANT=plain|stamped");

describe.skipIf(mutantSkip)(
	`lincheck: cas with fenced puts as plain writes is caught${mutantSkip ? ` [skipped: ${mutantSkip}]` : ""}`,
	() => {
		let admin: Client;
		let client: Client;
		let proxy: FaultProxy;
		const keyspace = `vvm_lincheck_mutant_${process.pid.toString(36)}${Date.now().toString(36)}`;
		beforeAll(async () => {
			const env = cassandraEnv();
			const { host, port } = hostPort(env.contactPoints[0] ?? "127.0.0.1:9042", 9042);
			admin = new Client(env);
			await admin.connect();
			await ensureCassandraSchema(admin, { keyspace });
			proxy = await startFaultProxy(host, port, { seed: 22, holdMs: 1_400 });
			client = new Client({
				contactPoints: [`127.0.0.1:${proxy.port}`],
				localDataCenter: env.localDataCenter,
				socketOptions: { readTimeout: 1_000, connectTimeout: 1_000 },
				policies: { reconnection: new policies.reconnection.ConstantReconnectionPolicy(100) },
			});
			await client.connect();
		});
		afterAll(async () => {
			await client?.shutdown().catch(() => {});
			await proxy?.close();
			await admin?.execute(`DROP KEYSPACE IF EXISTS ${keyspace}`).catch(() => {});
			await admin?.shutdown();
		});

		it("is found non-linearizable", { timeout: 600_000 }, async () => {
			const storage = new PlainFencedPuts(
				createCassandraTTLStorage({ client, keyspace }),
				client,
				`${keyspace}.ttl_values`,
				mutant as "plain" | "stamped",
			);
			const report = await runLincheck(storage, {
				fencing: "ordered",
				atomicBatches: false,
				seed: 22,
				prefix: `mutant-${mutant}`,
				windows: Number(process.env.LINCHECK_WINDOWS ?? 20),
				beforeWindow: () => proxy.startFaults(),
				afterWindow: () => proxy.stopFaults(),
			});
			console.log(summary(`cas mutant ${mutant}`, report, proxy.counts()));
			if (report.failed[0] !== undefined) console.log(describeWindow(report.failed[0]));
			expect(report.failed.length).toBeGreaterThan(0);
		});
	},
);
