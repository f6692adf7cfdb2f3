import { faults } from "@vvm/ttlstorage/testing";
import { expect } from "vitest";
import type { SequencesTrustLevel } from "../event-writer.ts";
import { PKEY_PREFIX_PLOG, PKEY_PREFIX_RECORDS } from "../keys.ts";
import type { CaseContext, CpSuiteCase } from "./case.ts";
import { created, crec, rejection, WS } from "./case.ts";
import { Harness, touches, waitFor } from "./harness.ts";

const CUSTOMER = "app1pkg.Customer";

/** A retry with the same key answers the first result and writes nothing, here and on the next holder. */
async function idempotentRetry(ctx: CaseContext, level: SequencesTrustLevel): Promise<void> {
	const h = new Harness({ ctx, trustLevel: level });
	try {
		const p = await h.deploy(1);
		const req = { wsid: WS, table: CUSTOMER, fields: { name: "Ada" }, idempotencyKey: "k-1" };
		const first = await p.createRecord(req);
		expect(first).toEqual(created(1, crec(0), 1));
		const again = await p.createRecord(req);
		expect(again).toEqual({ ...first, replayed: true });
		expect(p.stats()).toMatchObject({ commands: 1, replayed: 1, nextPLogOffset: 2 });
		// The same key with another request: refused, nothing written.
		const other = await rejection(p.createRecord({ ...req, fields: { name: "Bob" } }));
		expect([other.code, other.committed, other.field]).toEqual([
			"CP_IDEMPOTENCY_KEY_REUSED",
			"no",
			"idempotencyKey",
		]);
		// Another workspace may use the same key for its own command.
		const elsewhere = await p.createRecord({ ...req, wsid: WS + 4 });
		expect(elsewhere.replayed).toBeUndefined();
		// The next holder knows the key before it serves the partition.
		await h.crash();
		const q = await h.deploy(1);
		expect(await q.createRecord(req)).toEqual({ ...first, replayed: true });
		expect((await q.readWLog({ wsid: WS, from: 1 })).map((e) => e.offset)).toEqual([1]);
		// A new key is a new command.
		expect(await q.createRecord({ ...req, idempotencyKey: "k-2" })).toEqual(created(2, crec(1), 3));
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

/** The event is durable but its effects failed: the retry answers its result once recovery applied it. */
async function idempotentAfterCommittedFailure(
	ctx: CaseContext,
	level: SequencesTrustLevel,
): Promise<void> {
	// The effects apart from the event: no atomic level 2 batch, no conditional batch.
	const h = new Harness({
		ctx,
		trustLevel: level,
		extra: { atomicBatches: false, conditionalBatches: false },
	});
	try {
		const p = await h.deploy(1);
		const req = { wsid: WS, table: CUSTOMER, fields: { name: "Ada" }, idempotencyKey: "once" };
		h.faults.inject({
			on: ["putBatch", "insertIfNotExists", "put"],
			match: (c) => touches(c, PKEY_PREFIX_RECORDS),
			action: faults.fail(),
			times: 1,
		});
		const e = await rejection(p.createRecord(req));
		expect([e.code, e.committed]).toEqual(["CP_STORAGE", "yes"]);
		await p.ready();
		const retry = await p.createRecord(req);
		expect(retry).toEqual({ ...created(1, crec(0), 1), replayed: true });
		expect((await p.readRecord({ wsid: WS, id: crec(0) })).name).toBe("Ada");
		expect((await h.check()).problems).toEqual([]);
	} finally {
		await h.close();
	}
}

/** A retry while the first is still running is refused; once it answered, the retry replays it. */
async function idempotentInFlight(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p = await h.deploy(1);
		let release!: () => void;
		const gate = new Promise<void>((r) => {
			release = r;
		});
		let reached = false;
		h.faults.inject({
			on: ["insertIfNotExists", "put", "putBatch", "putBatchIf"],
			match: (c) => touches(c, PKEY_PREFIX_PLOG),
			action: faults.hook(async () => {
				reached = true;
				await gate;
			}),
			times: 1,
		});
		const req = { wsid: WS, table: CUSTOMER, fields: { name: "Ada" }, idempotencyKey: "slow" };
		const first = p.createRecord(req);
		await waitFor(() => reached, "the first command's PLog write");
		const e = await rejection(p.createRecord(req));
		expect([e.code, e.committed]).toEqual(["CP_IDEMPOTENCY_KEY_IN_FLIGHT", "no"]);
		release();
		const result = await first;
		expect(await p.createRecord(req)).toEqual({ ...result, replayed: true });
	} finally {
		await h.close();
	}
}

/**
 * The lease decides what a command may write and acknowledge: ended before its PLog write, nothing
 * is written (`committed: "no"`); ended while the write was on its way, the answer is
 * `committed: "unknown"` (the next holder may or may not have seen it).
 */
async function leaseEnds(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		let valid = true;
		const p = await h.deploy(1, { lease: { epoch: 5n, valid: () => valid } });
		expect(p.stats().epoch).toBe(ctx.storage.supports?.fencing === undefined ? undefined : "5");
		await h.create(p, WS, "a");
		valid = false;
		const before = await rejection(h.create(p, WS, "b"));
		expect([before.code, before.committed]).toEqual(["CP_CLOSED", "no"]);
		// A partition past its lease undeploys itself; the next lease deploys it again.
		await waitFor(() => h.cp.partition(1) === undefined, "the partition to undeploy");
		let valid2 = true;
		const q = await h.deploy(1, { lease: { epoch: 6n, valid: () => valid2 } });
		expect((await q.readPLog({ from: 2 })).length).toBe(0);
		h.faults.inject({
			on: ["insertIfNotExists", "putBatchIf"],
			match: (c) => touches(c, PKEY_PREFIX_PLOG),
			action: faults.hook(() => {
				valid2 = false; // the deadline passes while the write is at the storage
			}),
			times: 1,
		});
		const during = await rejection(h.create(q, WS, "c"));
		expect([during.code, during.committed]).toEqual(["CP_CLOSED", "unknown"]);
		await waitFor(() => h.cp.partition(1) === undefined, "the partition to undeploy");
		// Its event landed: the next holder applies it (a retry with an idempotency key would
		// have been answered with its result).
		const r = await h.deploy(1, { lease: { epoch: 7n, valid: () => true } });
		expect((await r.readRecord({ wsid: WS, id: crec(1) })).name).toBe("c");
	} finally {
		await h.close();
	}
}

/** A partition whose fence is above the lease's epoch belongs to a newer holder: it never serves. */
async function staleEpochRefused(ctx: CaseContext): Promise<void> {
	if (ctx.storage.supports?.fencing === undefined) return; // nothing to refuse without fences
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p = await h.deploy(1, { lease: { epoch: 9n, valid: () => true } });
		await h.create(p, WS, "a");
		await h.crash();
		const stale = h.cp.deploy(1, { lease: { epoch: 8n, valid: () => true } });
		const e = await rejection(stale.ready());
		expect(e.code).toBe("CP_CLOSED");
		expect(e.message).toMatch(/newer holder/);
		await waitFor(() => h.cp.partition(1) === undefined, "the stale partition to undeploy");
		const q = await h.deploy(1, { lease: { epoch: 10n, valid: () => true } });
		expect(await h.create(q, WS, "b")).toEqual(created(2, crec(1), 2));
	} finally {
		await h.close();
	}
}

/**
 * Undeploy while a command writes its event: that command finishes and is answered with its result;
 * a command still waiting in the queue fails `CP_CLOSED` with nothing written.
 */
async function undeployMidCommand(ctx: CaseContext): Promise<void> {
	const h = new Harness({ ctx, trustLevel: 0 });
	try {
		const p = await h.deploy(1);
		let release!: () => void;
		const gate = new Promise<void>((r) => {
			release = r;
		});
		let reached = false;
		h.faults.inject({
			on: ["insertIfNotExists", "putBatchIf"],
			match: (c) => touches(c, PKEY_PREFIX_PLOG),
			action: faults.hook(async () => {
				reached = true;
				await gate;
			}),
			times: 1,
		});
		const writing = p.createRecord({ wsid: WS, table: CUSTOMER, fields: { name: "a" } });
		await waitFor(() => reached, "the PLog write");
		// Its answer is taken at once: with pipelining it may fail while the first write is held.
		const queued = rejection(p.createRecord({ wsid: WS, table: CUSTOMER, fields: { name: "b" } }));
		const closed = p.close();
		release();
		expect(await writing).toEqual(created(1, crec(0), 1));
		const e = await queued;
		expect([e.code, e.committed]).toEqual(["CP_CLOSED", "no"]);
		await closed;
		const q = await h.deploy(1);
		expect((await q.readRecord({ wsid: WS, id: crec(0) })).name).toBe("a");
		expect((await q.readPLog({ from: 1 })).length).toBe(1);
	} finally {
		await h.close();
	}
}

/** @internal Idempotency keys, leases, fences and undeploy, on every driver. */
export function failoverCases(): CpSuiteCase[] {
	const cases: CpSuiteCase[] = [];
	for (const level of [0, 2] as const) {
		cases.push({
			name: `level ${level}: an idempotency key answers its first result, on this holder and the next, and writes nothing`,
			run: (ctx) => idempotentRetry(ctx, level),
		});
		cases.push({
			name: `level ${level}: an idempotency key whose command failed after its PLog write answers its result once recovered`,
			run: (ctx) => idempotentAfterCommittedFailure(ctx, level),
		});
	}
	cases.push(
		{
			name: "an idempotency key in flight: CP_IDEMPOTENCY_KEY_IN_FLIGHT, then the first result",
			run: idempotentInFlight,
		},
		{
			name: "the lease ends before the PLog write: nothing written (committed no); during it: committed unknown",
			run: leaseEnds,
		},
		{
			name: "a deploy under an epoch below the partition's fence is refused (a newer holder serves it)",
			run: staleEpochRefused,
		},
		{
			name: "undeploy while a command writes its event: it finishes with its result; queued ones fail CP_CLOSED, nothing written",
			run: undeployMidCommand,
		},
	);
	return cases;
}
