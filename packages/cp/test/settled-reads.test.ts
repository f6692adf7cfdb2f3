// Reads see every committed event (issue 32, review 4 case 5, beyond the copied case): a record or
// WLog read waits until the partition has applied what it knows is committed: its own event whose
// effects failed (re-applied by the read), and an earlier holder's PLog tail (its first
// actualization, waited for at most `readWaitMs`, then CP_BUSY). On the usual path a read costs
// one storage read, as before.
import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor, CommandProcessorOptions } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import { CpError } from "../src/errors.ts";
import { touches } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;
/** cp's WLog and record prefixes; `@vvm/seqstorage`'s next-PLog-offset prefix. */
const WLOG = 6;
const RECORDS = 7;
const OFFSET = 2;
const WRITES = ["put", "putBatch", "insertIfNotExists", "compareAndSwap"] as const;

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close().catch(() => {});
});

function processor(storage: TTLStorage, extra: Partial<CommandProcessorOptions>): CommandProcessor {
	const cp = createCommandProcessor({
		storage,
		appId: 1,
		partitions: 1,
		trustLevel: 0,
		conditionalBatches: false,
		coalesceWrites: false,
		sequencerRetry: { baseDelayMs: 1, maxDelayMs: 5 },
		...extra,
	});
	processors.push(cp);
	return cp;
}

const codeOf = (e: unknown): string => (CpError.is(e) ? e.code : String(e));

/**
 * A PLog whose last event (creating "Bob") is committed but not applied: its holder's effect
 * writes failed, and it closed before recovery could apply them.
 */
async function committedNotApplied(base: TTLStorage): Promise<void> {
	const a = withFaults(base);
	const pA = processor(a, {}).deploy(0);
	await pA.ready();
	await pA.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
	a.inject({
		on: WRITES,
		match: (call) => touches(call, WLOG) || touches(call, RECORDS),
		action: faults.fail(),
	});
	const bob = await pA.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Bob" } }).then(
		() => "ok",
		(e: unknown) => (CpError.is(e) ? `${e.code}/${e.committed}` : String(e)),
	);
	expect(bob).toBe("CP_STORAGE/yes");
	// The holder cannot apply it (its effect writes keep failing): a read there says so honestly.
	expect(await pA.readWLog({ wsid: WSID }).then(() => "read", codeOf)).toBe("CP_STORAGE");
	await pA.close();
	expect(await pA.readWLog({ wsid: WSID }).then(() => "read", codeOf)).toBe("CP_CLOSED");
}

describe("reads after a committed event", () => {
	it("a read before the partition caught up with its PLog waits for it (at most readWaitMs, then CP_BUSY) and then sees the earlier holder's committed event", async () => {
		const base = createMemTTLStorage();
		await committedNotApplied(base);
		const clock = new MockClock();
		const b = withFaults(base);
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		b.inject({
			on: "get",
			match: (call) => touches(call, OFFSET),
			times: 1,
			action: faults.hook(() => held),
		});
		const pB = processor(b, { clock, readWaitMs: 500 }).deploy(0);
		const tooLong = pB.readWLog({ wsid: WSID }).then(() => "read", codeOf);
		clock.advance(499);
		const patient = pB.readWLog({ wsid: WSID });
		clock.advance(1);
		expect(await tooLong).toBe("CP_BUSY");
		release();
		const entries = await patient;
		expect(entries.map((e) => e.event?.cuds[0]?.fields.name)).toEqual(["Ada", "Bob"]);
	});

	it("readWaitMs 0 answers CP_BUSY at once until the partition caught up; a negative one is refused", async () => {
		const base = createMemTTLStorage();
		const b = withFaults(base);
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		b.inject({
			on: "get",
			match: (call) => touches(call, OFFSET),
			times: 1,
			action: faults.hook(() => held),
		});
		const p = processor(b, { readWaitMs: 0 }).deploy(0);
		expect(await p.readWLog({ wsid: WSID }).then(() => "read", codeOf)).toBe("CP_BUSY");
		release();
		await p.ready();
		expect(await p.readWLog({ wsid: WSID })).toEqual([]);
		expect(() => processor(base, { readWaitMs: -1 })).toThrow(RangeError);
	});

	it("a read re-applies the holder's own committed event whose effects failed, once for the read and the recovery; the usual read costs one storage get", async () => {
		const base = createMemTTLStorage();
		const s = withFaults(base);
		const p = processor(s, {}).deploy(0);
		await p.ready();
		const ada = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
		const id = ada.NewIDs["1"] as number;
		// The usual path: one get, nothing else.
		const before = s.calls.length;
		await p.readRecord({ wsid: WSID, id });
		expect(s.calls.slice(before).map((c) => c.operation)).toEqual(["get"]);

		// The update's record swap fails once; the re-actualization's offset read is held, so only
		// the read can apply the event before it answers.
		s.inject({
			on: "compareAndSwap",
			match: (call) => touches(call, RECORDS),
			times: 1,
			action: faults.fail(),
		});
		let release!: () => void;
		const held = new Promise<void>((resolve) => {
			release = resolve;
		});
		s.inject({
			on: "get",
			match: (call) => touches(call, OFFSET),
			times: 1,
			action: faults.hook(() => held),
		});
		const update = await p
			.updateRecord({ wsid: WSID, table: CUSTOMER, id, fields: { name: "Ada L." } })
			.then(
				() => "ok",
				(e: unknown) => (CpError.is(e) ? `${e.code}/${e.committed}` : String(e)),
			);
		expect(update).toBe("CP_STORAGE/yes");
		const [r1, r2] = await Promise.all([
			p.readRecord({ wsid: WSID, id }),
			p.readRecord({ wsid: WSID, id }),
		]);
		expect([r1.name, r2.name]).toEqual(["Ada L.", "Ada L."]);
		const reapplied = p.stats().reappliedEvents;
		expect(reapplied).toBe(1);
		release();
		await p.ready();
		// Recovery found the event applied: no second re-application.
		expect(p.stats().reappliedEvents).toBe(reapplied);
		const next = await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Bob" } });
		expect(next.CurrentWLogOffset).toBe(3);
	});
});
