// pipelineDepth > 1 (README, "Pipelined numbering"): a partition admits the next create once the
// previous command has issued its PLog write; effects and answers in PLog order; every failure
// of a command in flight gives each later one an honest answer, and the partition re-actualizes.
// The PLog writes are held at a gate until the test releases them, one by one, in any order.
import { MockClock } from "@vvm/clock";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	TTLStorage,
	WriteOptions,
} from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor, CommandProcessorOptions } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import type { CpError } from "../src/errors.ts";
import { PKEY_PREFIX_PLOG } from "../src/keys.ts";
import type { CommandResult } from "../src/request.ts";
import { checkCpStorage } from "../src/testing/checker.ts";
import { prefixOf, storedNextOffset, waitFor } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;

type Release = "land" | "refuse" | "lose-unapplied" | "lose-applied";

/** mem whose PLog-carrying `putBatchIf` calls wait at a gate until the test releases them. */
function gatedStorage(inner: TTLStorage) {
	const held: Array<{
		offset: number;
		release: (how: Release) => Promise<void>;
		/** Its answer is lost now (outcome unknown), nothing landed: resolves to its late landing. */
		loseLate: () => () => Promise<boolean>;
	}> = [];
	let gating = false;
	let seqWrites = 0;
	const isPLog = (p: Bytes) => prefixOf(p) === PKEY_PREFIX_PLOG;
	const offsetOf = (items: readonly ConditionalBatchItem[]): number => {
		// The command's own PLog entry is the first item (the predecessor's assertion follows).
		const first = items[0] as ConditionalBatchItem;
		return (JSON.parse(Buffer.from(first.value).toString("utf8")) as { o: number }).o;
	};
	const batchIf = (inner.putBatchIf as NonNullable<TTLStorage["putBatchIf"]>).bind(inner);
	const countSeq = (p: Bytes) => {
		const prefix = prefixOf(p);
		if (prefix === 2 || prefix === 3) seqWrites++;
	};
	const storage: TTLStorage = {
		...(inner.supports === undefined ? {} : { supports: inner.supports }),
		raiseFence: (s: Bytes, e?: bigint) =>
			(inner.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(s, e),
		insertIfNotExists: (p, c, v, ttl, o?: WriteOptions) => {
			countSeq(p);
			return inner.insertIfNotExists(p, c, v, ttl, o);
		},
		compareAndSwap: (p, c, ov, nv, ttl, o?: WriteOptions) => {
			countSeq(p);
			return inner.compareAndSwap(p, c, ov, nv, ttl, o);
		},
		compareAndDelete: (p, c, v, o?: WriteOptions) => inner.compareAndDelete(p, c, v, o),
		get: (p, c) => inner.get(p, c),
		read: (p, range) => inner.read(p, range),
		queryTTL: (p, c) => inner.queryTTL(p, c),
		put: (p, c, v, ttl, o?: WriteOptions) => {
			countSeq(p);
			return inner.put(p, c, v, ttl, o);
		},
		putBatch: (items: readonly BatchItem[]) => {
			for (const i of items) countSeq(i.pKey);
			return inner.putBatch(items);
		},
		putBatchIf: (items: readonly ConditionalBatchItem[]) => {
			if (!gating || !items.some((i) => isPLog(i.pKey))) return batchIf(items);
			return new Promise<boolean>((resolve, reject) => {
				held.push({
					offset: offsetOf(items),
					loseLate: () => {
						reject(new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "timed out; may land late"));
						return () => batchIf(items);
					},
					release: async (how) => {
						if (how === "refuse")
							return reject(new TTLStorageError("TTLSTORAGE_UNAVAILABLE", "refused, not sent"));
						if (how === "lose-unapplied")
							return reject(new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "timed out"));
						let ok: boolean;
						try {
							ok = await batchIf(items);
						} catch (error) {
							return reject(error);
						}
						if (how === "lose-applied")
							return reject(new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "answer lost"));
						resolve(ok);
					},
				});
			});
		},
		close: async () => {},
		[Symbol.asyncDispose]: async () => {},
	};
	const take = (offset: number) => {
		const i = held.findIndex((h) => h.offset === offset);
		if (i < 0) throw new Error(`no held PLog write at ${offset}`);
		return held.splice(i, 1)[0] as (typeof held)[number];
	};
	return {
		storage,
		held,
		gate(on: boolean) {
			gating = on;
		},
		get seqWrites() {
			return seqWrites;
		},
		/** Releases the held write of PLog offset `offset`. */
		async release(offset: number, how: Release = "land") {
			await take(offset).release(how);
		},
		/**
		 * The held write of PLog offset `offset` answers "unknown" now and lands only when the
		 * returned function is called (a request that timed out and arrives late).
		 */
		lose(offset: number): () => Promise<boolean> {
			return take(offset).loseLate();
		},
	};
}

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

function processor(storage: TTLStorage, extra: Partial<CommandProcessorOptions> = {}) {
	const cp = createCommandProcessor({
		storage,
		appId: 1,
		partitions: 1,
		trustLevel: 0,
		coalesceWrites: false,
		clock: new MockClock(),
		pipelineDepth: 8,
		sequencerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
		...extra,
	});
	processors.push(cp);
	return cp;
}

type Outcome = { ok: CommandResult } | { error: CpError };
const settle = (p: Promise<CommandResult>): Promise<Outcome> =>
	p.then(
		(ok) => ({ ok }),
		(error: CpError) => ({ error }),
	);

async function setup(extra: Partial<CommandProcessorOptions> = {}) {
	const mem = createMemTTLStorage();
	const g = gatedStorage(mem);
	const cp = processor(g.storage, extra);
	const p = cp.deploy(0);
	await p.ready();
	// One command before the gate: the workspace's numbers are cached.
	const first = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "First" } });
	g.gate(true);
	const order: number[] = [];
	const create = (name: string, idempotencyKey?: string) => {
		const run = p.createRecord({
			wsid: WSID,
			table: CUSTOMER,
			fields: { name },
			...(idempotencyKey === undefined ? {} : { idempotencyKey }),
		});
		const out = settle(run);
		void out.then((o) => {
			if ("ok" in o) order.push(o.ok.plogOffset as number);
			else order.push(-1);
		});
		return out;
	};
	return { mem, g, cp, p, first, create, order };
}

const acknowledged = (outs: Outcome[]) =>
	outs.flatMap((o) => ("ok" in o ? [{ wsid: WSID, result: o.ok }] : []));

/** What the checker finds in partition 0's storage, given the commands acknowledged in WSID. */
const problemsOf = async (storage: TTLStorage, results: CommandResult[]) =>
	(
		await checkCpStorage({
			storage,
			appId: 1,
			partitions: 1,
			acknowledged: results.map((result) => ({ wsid: WSID, result })),
		})
	).problems;

describe("pipelineDepth", () => {
	it("is validated: an integer in 1..32", () => {
		const storage = createMemTTLStorage();
		for (const pipelineDepth of [0, 33, 1.5, -1])
			expect(() =>
				createCommandProcessor({ storage, appId: 1, partitions: 1, pipelineDepth }),
			).toThrow(RangeError);
		expect(() =>
			createCommandProcessor({ storage, appId: 1, partitions: 1, pipelineDepth: 32 }),
		).not.toThrow();
	});

	it("issues the next create's PLog write before the previous one is confirmed; answers in offset order; the stored offset passes only applied events", async () => {
		const { mem, g, p, first, create, order } = await setup();
		expect(first.plogOffset).toBe(1);
		const a = create("A");
		const b = create("B");
		const c = create("C");
		// All three writes are at the storage at once (one group commit could carry them).
		await waitFor(() => g.held.length === 3, "three PLog writes in flight");
		expect(g.held.map((h) => h.offset)).toEqual([2, 3, 4]);
		const seqBefore = g.seqWrites;
		// The middle one's outcome first: it waits for the first one's answer.
		await g.release(2);
		const ra = await a;
		expect("ok" in ra && ra.ok.plogOffset).toBe(2);
		await g.release(3);
		await g.release(4);
		const [rb, rc] = await Promise.all([b, c]);
		expect(order).toEqual([2, 3, 4]);
		expect("ok" in rb && rb.ok.plogOffset).toBe(3);
		expect("ok" in rc && rc.ok.plogOffset).toBe(4);
		await waitFor(() => g.seqWrites > seqBefore, "the sequencer's flush");
		await p.close();
		expect(await storedNextOffset(mem, 1, 0)).toBeLessThanOrEqual(5);
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [{ wsid: WSID, result: first }, ...acknowledged([ra, rb, rc])],
		});
		expect(problems).toEqual([]);
	});

	it("holds the sequencer's write of an offset until every event below it is applied", async () => {
		const { mem, g, p, create } = await setup();
		const a = create("A");
		const b = create("B");
		await waitFor(() => g.held.length === 2, "two PLog writes in flight");
		// Both transactions are flushed in memory; nothing past offset 1 may be stored yet.
		await new Promise((r) => setTimeout(r, 20));
		expect(await storedNextOffset(mem, 1, 0)).toBeLessThanOrEqual(2);
		await g.release(2);
		await a;
		await waitFor(() => g.held.length === 1, "one left");
		expect(await storedNextOffset(mem, 1, 0)).toBeLessThanOrEqual(3);
		await g.release(3);
		await b;
		await p.close();
	});

	it("a refused PLog write (nothing written): it and every later command in flight answer committed no; the partition re-actualizes and reuses the offsets", async () => {
		const { mem, g, p, first, create } = await setup();
		const a = create("A");
		const b = create("B");
		const c = create("C");
		await waitFor(() => g.held.length === 3, "three in flight");
		await g.release(2, "refuse");
		await g.release(3);
		await g.release(4);
		const outs = await Promise.all([a, b, c]);
		for (const o of outs) {
			expect("error" in o && o.error.committed).toBe("no");
		}
		g.gate(false);
		await p.ready(); // the failure re-actualizes the partition, as at depth 1
		const d = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "D" } });
		expect(d.plogOffset).toBe(2);
		await p.close();
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [
				{ wsid: WSID, result: first },
				{ wsid: WSID, result: d },
			],
		});
		expect(problems).toEqual([]);
		// A restart continues after D.
		const cp2 = processor(mem);
		const p2 = cp2.deploy(0);
		await p2.ready();
		const e = await p2.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "E" } });
		expect(e.plogOffset).toBe(3);
	});

	it("an unknown outcome that did not land: unknown for it; the later ones are refused (nothing written); the re-actualization settles it and applies it once", async () => {
		const { mem, g, p, first, create } = await setup();
		const a = create("A", "key-a");
		const b = create("B");
		await waitFor(() => g.held.length === 2, "two in flight");
		await g.release(2, "lose-unapplied");
		await g.release(3);
		const [ra, rb] = await Promise.all([a, b]);
		expect("error" in ra && ra.error.committed).toBe("unknown");
		expect("error" in rb && rb.error.committed).toBe("no");
		g.gate(false);
		await p.ready(); // the failure re-actualizes the partition, as at depth 1
		const d = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "D" } });
		// A's event was written again at 2 before the PLog was read: D follows it.
		expect(d.plogOffset).toBe(3);
		// A retry of A's key answers A's first execution.
		const again = await p.createRecord({
			wsid: WSID,
			table: CUSTOMER,
			fields: { name: "A" },
			idempotencyKey: "key-a",
		});
		expect(again.replayed).toBe(true);
		expect(again.plogOffset).toBe(2);
		await p.close();
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [
				{ wsid: WSID, result: first },
				{ wsid: WSID, result: d },
			],
		});
		expect(problems).toEqual([]);
	});

	it("a lost answer of a write that landed: the read-back finds it, and later commands stand", async () => {
		const { mem, g, p, first, create } = await setup();
		const a = create("A");
		const b = create("B");
		await waitFor(() => g.held.length === 2, "two in flight");
		await g.release(2, "lose-applied");
		await g.release(3);
		const outs = await Promise.all([a, b]);
		expect(outs.map((o) => ("ok" in o ? o.ok.plogOffset : o.error.code))).toEqual([2, 3]);
		await p.close();
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [{ wsid: WSID, result: first }, ...acknowledged(outs)],
		});
		expect(problems).toEqual([]);
	});

	it("a later write evaluated before its predecessor's: refused by the storage (nothing written, no hole in the PLog)", async () => {
		const { mem, g, p, first, create } = await setup();
		const a = create("A");
		const b = create("B");
		await waitFor(() => g.held.length === 2, "two in flight");
		await g.release(3); // evaluated first: offset 2 is empty, so nothing of it lands
		await g.release(2);
		const [ra, rb] = await Promise.all([a, b]);
		expect("ok" in ra && ra.ok.plogOffset).toBe(2);
		expect("error" in rb && rb.error.code).toBe("CP_BUSY");
		expect("error" in rb && rb.error.committed).toBe("no");
		g.gate(false);
		await p.ready(); // the failure re-actualizes the partition, as at depth 1
		const c = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "C" } });
		expect(c.plogOffset).toBe(3);
		await p.close();
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [
				{ wsid: WSID, result: first },
				...acknowledged([ra]),
				{ wsid: WSID, result: c },
			],
		});
		expect(problems).toEqual([]);
	});

	it("an update waits until no command is in flight (it reads what they write)", async () => {
		const { g, p, first, create } = await setup();
		const id = first.NewIDs["1"] as number;
		const a = create("A");
		await waitFor(() => g.held.length === 1, "one in flight");
		let updated = false;
		const u = p
			.updateRecord({ wsid: WSID, table: CUSTOMER, id, fields: { vip: true } })
			.then((r) => {
				updated = true;
				return r;
			});
		await new Promise((r) => setTimeout(r, 20));
		expect(g.held.length).toBe(1);
		expect(updated).toBe(false);
		await g.release(2);
		await a;
		await waitFor(() => g.held.length === 1, "the update's write");
		await g.release(3);
		expect((await u).plogOffset).toBe(3);
		await p.close();
	});

	it("no more than pipelineDepth commands in flight", async () => {
		const { g, p, create } = await setup({ pipelineDepth: 2 });
		const outs = [create("A"), create("B"), create("C")];
		await waitFor(() => g.held.length === 2, "two in flight");
		await new Promise((r) => setTimeout(r, 20));
		expect(g.held.length).toBe(2);
		await g.release(2);
		await waitFor(() => g.held.length === 2, "the third issued");
		await g.release(3);
		await g.release(4);
		const rs = await Promise.all(outs);
		expect(rs.map((o) => ("ok" in o ? o.ok.plogOffset : o.error.code))).toEqual([2, 3, 4]);
		await p.close();
	});

	it("the lease ends while writes are in flight: confirmed ones answer unknown, nothing more is written, no flush follows", async () => {
		const mem = createMemTTLStorage();
		const g = gatedStorage(mem);
		let valid = true;
		const cp = processor(g.storage);
		const p = cp.deploy(0, { lease: { epoch: 5n, valid: () => valid } });
		await p.ready();
		await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "First" } });
		g.gate(true);
		const a = settle(p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "A" } }));
		const b = settle(p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "B" } }));
		await waitFor(() => g.held.length === 2, "two in flight");
		valid = false;
		const seqBefore = g.seqWrites;
		await g.release(2);
		await g.release(3);
		const [ra, rb] = await Promise.all([a, b]);
		expect("error" in ra && ra.error.committed).toBe("unknown");
		expect("error" in rb && rb.error.committed).toBe("unknown");
		await p.close();
		expect(g.seqWrites).toBe(seqBefore);
	});
	it("a newer holder raises the fence while writes are in flight: every one answers committed no, the partition undeploys, nothing is flushed", async () => {
		const mem = createMemTTLStorage();
		const g = gatedStorage(mem);
		const cp = processor(g.storage);
		const p = cp.deploy(0, { lease: { epoch: 5n, valid: () => true } });
		await p.ready();
		const first = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "First" } });
		g.gate(true);
		const a = settle(p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "A" } }));
		const b = settle(p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "B" } }));
		await waitFor(() => g.held.length === 2, "two in flight");
		const seqBefore = g.seqWrites;
		const newer = processor(mem).deploy(0, { lease: { epoch: 6n, valid: () => true } });
		await newer.ready();
		await g.release(2);
		await g.release(3);
		const [ra, rb] = await Promise.all([a, b]);
		expect("error" in ra && [ra.error.code, ra.error.committed]).toEqual(["CP_CLOSED", "no"]);
		expect("error" in rb && rb.error.committed).toBe("no");
		await p.close();
		expect(g.seqWrites).toBe(seqBefore);
		const c = await newer.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "C" } });
		expect(c.plogOffset).toBe(2);
		const { problems } = await checkCpStorage({
			storage: mem,
			appId: 1,
			partitions: 1,
			acknowledged: [
				{ wsid: WSID, result: first },
				{ wsid: WSID, result: c },
			],
		});
		expect(problems).toEqual([]);
	});
});

// Found by review of 98b2628 (the simulator's network blips find it too: seed 7224 at level 2).
// Two pipelined creates A (offset 2) and B (3) lose their answers; B's batch requires A's bytes at
// 2, which the re-actualization's rewrite of A puts there, so B could land after that
// actualization read the PLog. Only A used to be written again: B landed late, the next command
// took offset 3 with B's numbers, and at level 2 its fallback put replaced B's event while B's
// effects stayed; B's retry with its key was answered "replayed" with a record holding the next
// command's fields. Now every unknown write of the run is written again, in PLog order.
describe("pipelined level 2: a run of writes with unknown outcomes", () => {
	for (const [atomicBatches, lateLands] of [
		[true, true],
		[false, true],
		[true, false],
	] as const)
		it(`A and B lost${lateLands ? ", B's original lands after the re-actualization" : ", neither lands"} (atomicBatches ${atomicBatches}): both are written again, no offset or record ID handed out twice`, async () => {
			const { mem, g, p, first, create } = await setup({ trustLevel: 2, atomicBatches });
			const a = create("A", "key-a");
			const b = create("B", "key-b");
			await waitFor(() => g.held.length === 2, "two PLog writes in flight");
			g.lose(2);
			const landB = g.lose(3);
			const [ra, rb] = await Promise.all([a, b]);
			expect(["error" in ra && ra.error.committed, "error" in rb && rb.error.committed]).toEqual([
				"unknown",
				"unknown",
			]);
			g.gate(false);
			// A written again at 2, then B at 3, then the PLog read: it ends at 4 (it was 3).
			await waitFor(
				() => !p.sequencer.stats().actualizing && p.sequencer.stats().nextPLogOffset === 4,
				"re-actualized",
			);
			// B's original arrives now: A is at 2, but B's own event is at 3 already: it writes
			// nothing (before the fix it landed, after the PLog read).
			if (lateLands) expect(await landB()).toBe(false);
			const d = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "D" } });
			expect(d.plogOffset).toBe(4);
			const retryB = await create("B", "key-b");
			const plog = await p.readPLog({ from: 1, limit: 10 });
			expect(plog.map((e) => e.offset)).toEqual([1, 2, 3, 4]);
			// B's retry replays B's event at 3, whose record holds B's fields, not D's.
			if (!("ok" in retryB)) throw new Error(`B's retry failed: ${retryB.error.message}`);
			expect([retryB.ok.replayed, retryB.ok.plogOffset]).toEqual([true, 3]);
			const id = retryB.ok.NewIDs["1"] as number;
			expect(d.NewIDs["1"]).not.toBe(id);
			expect((await p.readRecord({ wsid: WSID, table: CUSTOMER, id })).name).toBe("B");
			await p.close();
			expect(await problemsOf(mem, [first, d, retryB.ok])).toEqual([]);
		});

	it("A lost, B refused (A is not there), C lost: only A is written again, C never lands (no hole)", async () => {
		const { mem, g, p, first, create } = await setup({ trustLevel: 2, atomicBatches: true });
		const [a, b, c] = [create("A", "key-a"), create("B", "key-b"), create("C", "key-c")];
		await waitFor(() => g.held.length === 3, "three PLog writes in flight");
		g.lose(2); // A: lost, never lands
		await g.release(3); // B: requires A's bytes at 2, which are not there: refused, nothing written
		const landC = g.lose(4); // C: lost; it requires B's bytes at 3, which never come
		const [ra, rb, rc] = await Promise.all([a, b, c]);
		expect(["error" in ra && ra.error.committed, "error" in rb && rb.error.committed]).toEqual([
			"unknown",
			"no",
		]);
		expect("error" in rc && rc.error.committed).not.toBe("yes");
		g.gate(false);
		// Only A is written again: writing C at 4 would leave 3 empty below it.
		await waitFor(
			() => !p.sequencer.stats().actualizing && p.sequencer.stats().nextPLogOffset === 3,
			"re-actualized",
		);
		expect(await landC()).toBe(false);
		const d = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "D" } });
		expect(d.plogOffset).toBe(3);
		const plog = await p.readPLog({ from: 1, limit: 10 });
		expect(plog.map((e) => e.offset)).toEqual([1, 2, 3]);
		await p.close();
		expect(await problemsOf(mem, [first, d])).toEqual([]);
	});
});
