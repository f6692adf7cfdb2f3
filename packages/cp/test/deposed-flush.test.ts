// A deposed holder's flush (issue 32, review 4 case 1, beyond the copied case): the stored next
// PLog offset is written only once every event below it is applied, so a holder whose effects a
// newer holder's fence refused writes no offset and no numbers afterwards; over "ordered" fencing
// too (the copied case runs "epoch" fencing only), and a read on the deposed holder never answers
// from the state its refused effects left.
import type { TTLStorage } from "@vvm/ttlstorage";
import type { FaultCall, FaultyTTLStorage } from "@vvm/ttlstorage/testing";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor, CommandProcessorOptions } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import { CpError } from "../src/errors.ts";
import type { SequencesTrustLevel } from "../src/event-writer.ts";
import { checkCpStorage } from "../src/testing/checker.ts";
import { isSequencerWrite, storedNextOffset, touches, waitFor } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;
const APP = 1;
/** cp's WLog and record prefixes; `@vvm/seqstorage`'s next-PLog-offset prefix. */
const WLOG = 6;
const RECORDS = 7;
const OFFSET = 2;

const WRITES = ["put", "putBatch", "insertIfNotExists", "compareAndSwap", "putBatchIf"] as const;

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

function processor(storage: TTLStorage, extra: Partial<CommandProcessorOptions>): CommandProcessor {
	const cp = createCommandProcessor({
		storage,
		appId: APP,
		partitions: 1,
		coalesceWrites: false,
		sequencerRetry: { baseDelayMs: 1, maxDelayMs: 5 },
		...extra,
	});
	processors.push(cp);
	return cp;
}

function gate(): { promise: Promise<void>; open: () => void } {
	let open!: () => void;
	const promise = new Promise<void>((resolve) => {
		open = resolve;
	});
	return { promise, open };
}

const isEffect = (call: FaultCall): boolean => touches(call, WLOG) || touches(call, RECORDS);

/**
 * Holder A commits "Bob" (its PLog write confirmed inside its lease), its effects wait; its lease
 * ends; B deploys (raises its fence) and its first read of the stored offset waits; A's effects
 * land on B's fence; then B reads the offset and actualizes.
 */
async function race(
	fencing: "epoch" | "ordered",
	trustLevel: SequencesTrustLevel,
): Promise<{
	a: FaultyTTLStorage;
	aAnswer: string;
	aWritesAfterRelease: FaultCall[];
	readOnA: string;
	base: TTLStorage;
	bNames: unknown[];
	problems: readonly unknown[];
}> {
	const base = createMemTTLStorage({ fencing });
	const a = withFaults(base);
	const b = withFaults(base);
	// Separate writes of the event and its effects (as over PostgreSQL, Cassandra, DynamoDB).
	const extra = { trustLevel, conditionalBatches: false, atomicBatches: false } as const;
	let aValid = true;
	const pA = processor(a, extra).deploy(0, { lease: { epoch: 10n, valid: () => aValid } });
	await pA.ready();
	const first = await pA.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
	await waitFor(() => pA.stats().unflushedValues === 0, "A's first flush");

	const aHeld = gate();
	let aReached = false;
	a.inject({
		on: WRITES,
		match: isEffect,
		action: faults.hook(async () => {
			aReached = true;
			await aHeld.promise;
		}),
	});
	const command = pA.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Bob" } }).then(
		(r) => ({ ok: r }),
		(e: unknown) => ({ error: CpError.is(e) ? `${e.code}/${e.committed}` : String(e) }),
	);
	await waitFor(() => aReached, "A's effects at the gate");
	aValid = false;

	const bHeld = gate();
	let bReached = false;
	b.inject({
		on: "get",
		match: (call) => touches(call, OFFSET),
		times: 1,
		action: faults.hook(async () => {
			bReached = true;
			await bHeld.promise;
		}),
	});
	const pB = processor(b, extra).deploy(0, { lease: { epoch: 20n, valid: () => true } });
	await waitFor(() => bReached, "B's read of the stored offset");
	const released = a.calls.length;
	aHeld.open();
	const answer = await command;
	// A's reads answer now (before it closes); then, closed, A writes nothing more (its
	// sequencer is cleaned up): whatever it wrote after the release is in `a.calls`.
	const readOnA = await pA.readWLog({ wsid: WSID }).then(
		(entries) => `entries ${entries.map((e) => e.offset).join(",")}`,
		(e: unknown) => (CpError.is(e) ? e.code : String(e)),
	);
	await pA.close();
	const aWritesAfterRelease = a.calls
		.slice(released)
		.filter((c) => (WRITES as readonly string[]).includes(c.operation));
	bHeld.open();
	await pB.ready();
	const acknowledged = [{ wsid: WSID, result: first }];
	if ("ok" in answer) acknowledged.push({ wsid: WSID, result: answer.ok });
	const report = await checkCpStorage({ storage: base, appId: APP, partitions: 1, acknowledged });
	const wlog = await pB.readWLog({ wsid: WSID });
	return {
		a,
		aAnswer: "ok" in answer ? "ok" : answer.error,
		aWritesAfterRelease,
		readOnA,
		base,
		bNames: wlog.map((e) => e.event?.cuds[0]?.fields.name),
		problems: report.problems,
	};
}

describe("a deposed holder's flush", () => {
	it.each([0, 1, 2] as const)(
		'"epoch" fencing, level %i: after its effects were refused A writes no offset and no numbers, its reads answer CP_CLOSED, and B applies the event A acknowledged',
		async (level) => {
			const out = await race("epoch", level);
			expect(out.aAnswer).toBe("ok");
			// Its effects were refused; nothing of the sequencer's followed them.
			expect(out.aWritesAfterRelease.filter(isSequencerWrite)).toEqual([]);
			expect(await storedNextOffset(out.base, APP, 0)).toBeLessThanOrEqual(3);
			expect(out.readOnA).toBe("CP_CLOSED");
			expect(out.bNames).toEqual(["Ada", "Bob"]);
			expect(out.problems).toEqual([]);
		},
	);

	it.each([0, 1, 2] as const)(
		'"ordered" fencing, level %i: whatever A writes late, the stored offset never passes an event whose effects are missing',
		async (level) => {
			const out = await race("ordered", level);
			// A's effects may land below B's (ordered, not refused): then A may flush, and its
			// offset is one whose events are applied. The acknowledged event is applied either way.
			expect(out.bNames).toEqual(["Ada", "Bob"]);
			expect(out.problems).toEqual([]);
			if (out.aAnswer !== "ok") expect(out.aAnswer).toMatch(/^CP_(CLOSED|STORAGE)\//);
		},
	);
});

describe("a refused sequencer flush deposes the partition (found by review of 3ce9ef5)", () => {
	it("an idle partition whose numbers' flush a newer fence refuses closes at once, instead of retrying it for good", async () => {
		const base = createMemTTLStorage();
		const a = withFaults(base);
		const pA = processor(a, {}).deploy(0, { lease: { epoch: 10n, valid: () => true } });
		await pA.ready();
		// The numbers' flush of A's command waits at the gate, after its command was answered.
		const held = gate();
		let reached = false;
		a.inject({
			on: WRITES,
			match: isSequencerWrite,
			times: 1,
			action: faults.hook(async () => {
				reached = true;
				await held.promise;
			}),
		});
		await pA.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
		await waitFor(() => reached, "A's flush at the gate");
		// A newer holder raises the fence and is gone; A takes no more commands (idle).
		const pB = processor(withFaults(base), {}).deploy(0, {
			lease: { epoch: 20n, valid: () => true },
		});
		await pB.ready();
		await pB.close();
		held.open();
		// The flush is refused (TTLSTORAGE_FENCED): A is deposed and closes on its own, so what
		// deployed it gives its grant back; before, it retried the flush until undeployed.
		await waitFor(() => pA.closed.aborted, "A closed");
		expect(pA.stats().deposed).toBe(true);
		expect(pA.closed.reason).toMatchObject({ code: "CP_CLOSED" });
		expect(String((pA.closed.reason as Error).message)).toContain("newer holder");
	});
});
