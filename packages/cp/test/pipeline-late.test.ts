// Pipelined numbering at SequencesTrustLevel 2: two pipelined creates A (offset k) and B (offset
// k+1) both lose their answers. B's batch requires A's bytes at k, which the re-actualization's
// rewrite of A puts there, so B can land after that actualization read the PLog. Before the fix
// only A (the first failure) was written again: B landed late, the next command took offset k+1
// with B's numbers, and at level 2 its fallback put replaced B's event while B's effects stayed; B's
// retry with its key was answered "replayed" with a record holding D's fields. Found by review of
// 98b2628; now every unknown write of the run is written again, in PLog order.
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
import type { CommandProcessor } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import type { CpError } from "../src/errors.ts";
import { PKEY_PREFIX_PLOG } from "../src/keys.ts";
import type { CommandResult } from "../src/request.ts";
import { checkCpStorage } from "../src/testing/checker.ts";
import { prefixOf, waitFor } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;

type Held = {
	offset: number;
	items: readonly ConditionalBatchItem[];
	resolve: (applied: boolean) => void;
	reject: (e: unknown) => void;
};

function gated(inner: TTLStorage) {
	const held: Held[] = [];
	let gating = false;
	const batchIf = (inner.putBatchIf as NonNullable<TTLStorage["putBatchIf"]>).bind(inner);
	const offsetOf = (items: readonly ConditionalBatchItem[]) =>
		(
			JSON.parse(Buffer.from((items[0] as ConditionalBatchItem).value).toString("utf8")) as {
				o: number;
			}
		).o;
	const storage: TTLStorage = {
		...(inner.supports === undefined ? {} : { supports: inner.supports }),
		raiseFence: (s: Bytes, e?: bigint) =>
			(inner.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(s, e),
		insertIfNotExists: (p, c, v, ttl, o?: WriteOptions) => inner.insertIfNotExists(p, c, v, ttl, o),
		compareAndSwap: (p, c, ov, nv, ttl, o?: WriteOptions) =>
			inner.compareAndSwap(p, c, ov, nv, ttl, o),
		compareAndDelete: (p, c, v, o?: WriteOptions) => inner.compareAndDelete(p, c, v, o),
		get: (p, c) => inner.get(p, c),
		read: (p, range) => inner.read(p, range),
		queryTTL: (p, c) => inner.queryTTL(p, c),
		put: (p, c, v, ttl, o?: WriteOptions) => inner.put(p, c, v, ttl, o),
		putBatch: (items: readonly BatchItem[]) => inner.putBatch(items),
		putBatchIf: (items: readonly ConditionalBatchItem[]) => {
			if (!gating || !items.some((i) => prefixOf(i.pKey) === PKEY_PREFIX_PLOG))
				return batchIf(items);
			return new Promise<boolean>((resolve, reject) => {
				held.push({ offset: offsetOf(items), items, resolve, reject });
			});
		},
		close: async () => {},
		[Symbol.asyncDispose]: async () => {},
	};
	const take = (offset: number): Held => {
		const i = held.findIndex((h) => h.offset === offset);
		if (i < 0) throw new Error(`no held write at ${offset}`);
		return held.splice(i, 1)[0] as Held;
	};
	return {
		storage,
		held,
		gate(on: boolean) {
			gating = on;
		},
		/** The answer is lost now (outcome unknown); nothing lands (yet). Returns the late landing. */
		/** The write goes to the storage now, and its answer back. */
		async pass(offset: number): Promise<void> {
			const h = take(offset);
			await batchIf(h.items).then(h.resolve, h.reject);
		},
		lose(offset: number): () => Promise<boolean> {
			const h = take(offset);
			h.reject(new TTLStorageError("TTLSTORAGE_OUTCOME_UNKNOWN", "timed out (simulated)"));
			return () => batchIf(h.items);
		},
	};
}

type Outcome = { ok: CommandResult } | { error: CpError };
const settle = (p: Promise<CommandResult>): Promise<Outcome> =>
	p.then(
		(ok) => ({ ok }),
		(error: CpError) => ({ error }),
	);

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

describe("pipelined level 2: the second of two unknown PLog writes lands late", () => {
	for (const [atomicBatches, lateLands] of [
		[true, true],
		[false, true],
		[true, false], // control: B never lands; passes
	] as const)
		it(`atomicBatches ${atomicBatches}, B ${lateLands ? "lands late" : "never lands (control)"}: no number handed out twice, no replay of an event the PLog lost`, async () => {
			const mem = createMemTTLStorage();
			const g = gated(mem);
			const cp = createCommandProcessor({
				storage: g.storage,
				appId: 1,
				partitions: 1,
				trustLevel: 2,
				atomicBatches,
				coalesceWrites: false,
				clock: new MockClock(),
				pipelineDepth: 8,
				sequencerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
			});
			processors.push(cp);
			const p = cp.deploy(0);
			await p.ready();
			const first = await p.createRecord({
				wsid: WSID,
				table: CUSTOMER,
				fields: { name: "First" },
			});
			g.gate(true);
			const a = settle(
				p.createRecord({
					wsid: WSID,
					table: CUSTOMER,
					fields: { name: "A" },
					idempotencyKey: "key-a",
				}),
			);
			const b = settle(
				p.createRecord({
					wsid: WSID,
					table: CUSTOMER,
					fields: { name: "B" },
					idempotencyKey: "key-b",
				}),
			);
			await waitFor(() => g.held.length === 2, "two PLog writes in flight");
			g.lose(2); // A: lost, never lands (its re-write settles offset 2)
			const landB = g.lose(3); // B: lost now, lands later
			const [ra, rb] = await Promise.all([a, b]);
			expect("error" in ra && ra.error.committed).toBe("unknown");
			expect("error" in rb && rb.error.committed).toBe("unknown");
			g.gate(false);
			// The re-actualization writes A again at 2, then B at 3 (B's batch requires A's bytes at 2,
			// which A's rewrite put there, so B could land after the PLog read), and reads the PLog: it
			// ends at 4. (Before the fix only A was written again and it ended at 3.)
			await waitFor(
				() => !p.sequencer.stats().actualizing && p.sequencer.stats().nextPLogOffset === 4,
				"re-actualized",
			);
			// B's original batch arrives now: A's event is at 2, so that condition holds, but B's own
			// event is at 3 already (its insert there is refused): it writes nothing. Before the fix
			// it landed (true), after the PLog read.
			if (lateLands) expect(await landB()).toBe(false);
			// The next command takes offset 4.
			const d = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "D" } });
			// B's client retries with its key.
			const retryB = await settle(
				p.createRecord({
					wsid: WSID,
					table: CUSTOMER,
					fields: { name: "B" },
					idempotencyKey: "key-b",
				}),
			);
			expect(d.plogOffset).toBe(4);
			// Dense, and B's event (written again, or landed late: the same bytes) at 3.
			const plog = await p.readPLog({ from: 1, limit: 10 });
			expect(plog.map((e) => e.offset)).toEqual([1, 2, 3, 4]);
			expect("ok" in retryB && retryB.ok.replayed === true && retryB.ok.plogOffset).toBe(3);
			if ("ok" in retryB && retryB.ok.replayed === true) {
				// B's client is told its create committed, with this record ID…
				const id = retryB.ok.NewIDs["1"] as number;
				const rec = await p.readRecord({ wsid: WSID, table: CUSTOMER, id });
				// …which must hold B's fields, and must not be D's too.
				expect(rec.name).toBe("B");
				expect(d.NewIDs["1"]).not.toBe(id);
			}
			await p.close();
			const acknowledged = [
				{ wsid: WSID, result: first },
				{ wsid: WSID, result: d },
			];
			if ("ok" in retryB) acknowledged.push({ wsid: WSID, result: retryB.ok });
			const { problems } = await checkCpStorage({
				storage: mem,
				appId: 1,
				partitions: 1,
				acknowledged,
			});
			expect(problems).toEqual([]);
		});

	it("A lost, B refused (A is not there), C lost: only A is written again, C never lands (no hole)", async () => {
		const mem = createMemTTLStorage();
		const g = gated(mem);
		const cp = createCommandProcessor({
			storage: g.storage,
			appId: 1,
			partitions: 1,
			trustLevel: 2,
			atomicBatches: true,
			coalesceWrites: false,
			clock: new MockClock(),
			pipelineDepth: 8,
			sequencerRetry: { baseDelayMs: 0, maxDelayMs: 0 },
		});
		processors.push(cp);
		const p = cp.deploy(0);
		await p.ready();
		const first = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "First" } });
		g.gate(true);
		const create = (name: string) =>
			settle(
				p.createRecord({
					wsid: WSID,
					table: CUSTOMER,
					fields: { name },
					idempotencyKey: `key-${name}`,
				}),
			);
		const [a, b, c] = [create("A"), create("B"), create("C")];
		await waitFor(() => g.held.length === 3, "three PLog writes in flight");
		g.lose(2); // A: lost, never lands
		await g.pass(3); // B: requires A's bytes at 2, which are not there: refused, nothing written
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
});
