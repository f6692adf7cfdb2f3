// Admission by time (issue 34 item 4): a partition's queue is bounded by the estimated wait of a
// newcomer (commands ahead x measured service time), not only by count; a command past the bound
// is answered CP_BUSY at once, committed "no", before it reads or writes anything, with the
// backlog's drain time as its retryAfterMs. Time goes through the processor's clock (MockClock).
import { MockClock } from "@vvm/clock";
import type { FaultyTTLStorage } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor, CommandProcessorOptions } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import { CpError } from "../src/errors.ts";
import { PKEY_PREFIX_PLOG } from "../src/keys.ts";
import { touches, waitFor } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

function processor(
	storage: FaultyTTLStorage,
	extra: Partial<CommandProcessorOptions>,
): CommandProcessor {
	const cp = createCommandProcessor({
		storage,
		appId: 1,
		partitions: 1,
		trustLevel: 0,
		coalesceWrites: false,
		...extra,
	});
	processors.push(cp);
	return cp;
}

/** Holds every PLog write until {@link Gate.open}; counts the writes that arrived. */
class Gate {
	arrived = 0;
	#open!: () => void;
	#gate: Promise<void> = Promise.resolve();
	constructor(storage: FaultyTTLStorage) {
		storage.inject({
			on: ["putBatchIf", "insertIfNotExists", "put", "putBatch"],
			match: (call) => touches(call, PKEY_PREFIX_PLOG),
			action: faults.hook(() => {
				this.arrived++;
				return this.#gate;
			}),
		});
	}
	close(): void {
		this.#gate = new Promise((resolve) => {
			this.#open = resolve;
		});
	}
	open(): void {
		this.#open();
	}
}

const outcome = (e: unknown): string =>
	CpError.is(e) ? `${e.code}/${e.committed}/${e.retryAfterMs}` : String(e);

describe("admission by estimated queue wait", () => {
	it("sheds past maxQueueWaitMs at once (CP_BUSY, committed no, retryAfterMs the backlog) without touching the storage; a stalled command sheds newcomers; a shed key runs once later", async () => {
		const clock = new MockClock();
		const s = withFaults(createMemTTLStorage());
		const gate = new Gate(s);
		const cp = processor(s, { clock, maxQueueWaitMs: 100, queueWaitTargetMs: 100 });
		const p = cp.deploy(0);
		await p.ready();
		const create = (name: string, idempotencyKey?: string) =>
			p.createRecord({
				wsid: WSID,
				table: CUSTOMER,
				fields: { name },
				...(idempotencyKey === undefined ? {} : { idempotencyKey }),
			});

		// One command of 20 ms: the partition's pace.
		gate.close();
		const first = create("first");
		await waitFor(() => gate.arrived === 1, "the first PLog write");
		clock.advance(20);
		gate.open();
		await first;
		expect(p.stats().serviceMs).toBe(20);

		// The next one holds at its PLog write; five more queue behind it (waits 20..100 ms).
		gate.close();
		const admitted = [create("c0")];
		await waitFor(() => gate.arrived === 2, "c0's PLog write");
		for (let i = 1; i <= 5; i++) admitted.push(create(`c${i}`));
		expect(p.stats().queued).toBe(6);
		expect(p.stats().queueWaitMs).toBe(120);
		const calls = s.calls.length;
		expect(await create("shed1", "k-shed").then(() => "ok", outcome)).toBe("CP_BUSY/no/120");
		// Nothing read, nothing written, nothing queued.
		expect(s.calls.length).toBe(calls);
		expect(p.stats().queued).toBe(6);

		// c0 stalls at the storage: 200 ms in, the pace is at least that.
		clock.advance(200);
		expect(await create("shed2").then(() => "ok", outcome)).toBe("CP_BUSY/no/1200");
		expect(s.calls.length).toBe(calls);
		expect(p.stats()).toMatchObject({ shed: 2, busy: 2, failed: 2 });

		gate.open();
		await Promise.all(admitted);
		expect(p.stats().queued).toBe(0);
		// The shed key was never taken: it runs now, once.
		const retried = await create("shed1", "k-shed");
		expect(retried.replayed).toBeUndefined();
		const names = (await p.readWLog({ wsid: WSID })).map((e) => e.event?.cuds[0]?.fields.name);
		expect(names).toEqual(["first", "c0", "c1", "c2", "c3", "c4", "c5", "shed1"]);
		expect(p.stats()).toMatchObject({ shed: 2, commands: 8 });
	});

	it("past maxQueuedCommands it sheds too; with no measured pace yet the hint is retryAfterMs", async () => {
		const s = withFaults(createMemTTLStorage());
		const gate = new Gate(s);
		const cp = processor(s, { clock: new MockClock(), maxQueuedCommands: 2, retryAfterMs: 700 });
		const p = cp.deploy(0);
		await p.ready();
		gate.close();
		const admitted = [0, 1].map((i) =>
			p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: `a${i}` } }),
		);
		await waitFor(() => gate.arrived === 1, "the first PLog write");
		const shed = await p
			.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "b" } })
			.then(() => "ok", outcome);
		expect(shed).toBe("CP_BUSY/no/700");
		gate.open();
		await Promise.all(admitted);
		expect(p.stats()).toMatchObject({ shed: 1, commands: 2 });
	});

	it("validates its options", () => {
		const s = withFaults(createMemTTLStorage());
		expect(() => processor(s, { maxQueueWaitMs: 0 })).toThrow(/maxQueueWaitMs/);
		expect(() => processor(s, { maxQueueWaitMs: 1.5 })).toThrow(/maxQueueWaitMs/);
		expect(() => processor(s, { queueWaitTargetMs: -1 })).toThrow(/queueWaitTargetMs/);
		expect(() => processor(s, { maxQueueWaitMs: 100, queueWaitTargetMs: 101 })).toThrow(
			/queueWaitTargetMs 101 must be at most maxQueueWaitMs \(100\)/,
		);
		// The target's default follows a lower bound.
		expect(() => processor(s, { maxQueueWaitMs: 30 })).not.toThrow();
		expect(() => processor(s, { queueWaitTargetMs: 0 })).not.toThrow();
	});
});
