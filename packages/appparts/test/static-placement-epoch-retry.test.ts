// Issue 33: a storage error while the static placement takes a partition's epoch must not leave
// the partition dark for the rest of the leadership. The take is retried on the placement's clock
// (100 ms doubling to 5 s by default) until the leadership ends, each failure logged and counted;
// `epochRetry.giveUpAfterMs` gives the slot up instead.
import { MockClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import type { VVMLeadership } from "@vvm/orch";
import type { TTLStorage } from "@vvm/ttlstorage";
import { fromUtf8 } from "@vvm/ttlstorage";
import { faults, withFaults } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it } from "vitest";
import type { EpochRetryOptions, PlacementHandlers } from "../src/index.ts";
import {
	EPOCH_RETRY_DEFAULTS,
	PartitionEpochUnavailableError,
	readPartitionEpoch,
	resolveEpochRetry,
} from "../src/index.ts";
import { epochRetryDelay } from "../src/options.ts";
import { createStaticPlacement } from "../src/static-placement.ts";
import { stubLeadership } from "./leadership.ts";

const NS = "t33";

const leadership = (slot: number): VVMLeadership => stubLeadership(slot, 3);

/** A logger that keeps every line (level, object, message). */
function recordingLogger() {
	const lines: { level: string; obj: Record<string, unknown>; msg: string }[] = [];
	const at =
		(level: string) =>
		(obj: unknown, msg?: string): void => {
			lines.push({ level, obj: obj as Record<string, unknown>, msg: msg ?? "" });
		};
	const logger = {
		error: at("error"),
		warn: at("warn"),
		info: at("info"),
		debug: at("debug"),
	} as unknown as Logger;
	return { logger, lines };
}

function setup(options: { partitions: number; epochRetry?: EpochRetryOptions }) {
	const clock = new MockClock(1_000_000);
	const storage = withFaults(createMemTTLStorage({ clock }), { clock });
	const granted = new Map<number, bigint | undefined>();
	const ended: [number, string][] = [];
	const handlers: PlacementHandlers = {
		async onGranted(partition, grant) {
			granted.set(partition, grant.fencingToken);
		},
		onEnded(partition, reason) {
			ended.push([partition, reason]);
		},
	};
	const log = recordingLogger();
	const placement = createStaticPlacement({
		partitions: options.partitions,
		numVVM: 1,
		handlers,
		leadership: () => leadership(1),
		leaderOf: async () => undefined,
		storage,
		namespace: NS,
		clock,
		logger: log.logger,
		...(options.epochRetry === undefined ? {} : { epochRetry: options.epochRetry }),
	});
	const lease = { valid: true };
	const ctl = new AbortController();
	const ctx = { signal: ctl.signal, leaseValid: () => lease.valid, fencingToken: 3 };
	/** Fails every compare-and-swap / insert of partition `p`'s epoch record while `on`. */
	const epochWrites = { on: true };
	const failEpochOf = (p: number, action = faults.fail()) =>
		storage.inject({
			on: ["insertIfNotExists", "compareAndSwap"],
			match: (call) => epochWrites.on && isEpochOf(call.args, p),
			action,
		});
	return {
		clock,
		storage,
		granted,
		ended,
		log,
		placement,
		lease,
		ctl,
		ctx,
		epochWrites,
		failEpochOf,
	};
}

/** Whether a storage call's arguments address partition `p`'s epoch record. */
function isEpochOf(args: readonly unknown[], p: number): boolean {
	const pKey = args[0] as Uint8Array;
	const cCols = args[1] as Uint8Array;
	return (
		fromUtf8(pKey) === `${NS}/partition-epochs` &&
		cCols.length === 4 &&
		new DataView(cCols.buffer, cCols.byteOffset, 4).getUint32(0) === p
	);
}

const epochFailures = <L extends { obj: Record<string, unknown> }>(lines: L[]): L[] =>
	lines.filter((l) => l.obj.event === "partition-epoch-failed");

describe("static placement: a failed epoch take is retried within the leadership (issue 33)", () => {
	it("one failed compare-and-swap: the partition is not served, then served after the first retry (100 ms)", async () => {
		const t = setup({ partitions: 3 });
		await t.placement.start(new AbortController().signal);
		const remove = t.failEpochOf(1);
		await t.placement.service.start(t.ctx);
		// 0 and 2 are served at once; 1 is not (its take failed), and says why.
		expect(t.placement.served()).toEqual([0, 2]);
		expect(t.placement.locate(1).kind).toBe("nobody");
		expect([...t.granted.keys()].sort()).toEqual([0, 2]);
		expect(epochFailures(t.log.lines)).toHaveLength(1);
		expect(epochFailures(t.log.lines)[0]).toMatchObject({
			level: "error",
			obj: { partition: 1, failures: 1, retryInMs: 100 },
		});
		expect(t.placement.describe()).toMatchObject({
			epochFailures: 1,
			partitionsOfSlot: [
				{ partition: 0, epochFailures: 0, epochError: null },
				{ partition: 1, epoch: null, epochFailures: 1, epochError: expect.any(String) },
				{ partition: 2, epochFailures: 0, epochError: null },
			],
		});
		remove(); // the storage answers again
		await t.clock.advanceAsync(99);
		expect(t.placement.served()).toEqual([0, 2]);
		await t.clock.advanceAsync(1);
		expect(t.placement.served()).toEqual([0, 1, 2]);
		expect(t.granted.get(1)).toBe(3n); // the slot's token as the floor: max(0 + 1, 3)
		expect((await readPartitionEpoch(t.storage, NS, 1))?.epoch).toBe(3n);
		expect(t.log.lines.some((l) => l.obj.event === "partition-epoch-taken")).toBe(true);
		await t.placement.close();
	});

	it("waits double from firstDelayMs up to maxDelayMs; every failure is logged at error and counted", async () => {
		expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => epochRetryDelay(EPOCH_RETRY_DEFAULTS, n))).toEqual([
			100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000,
		]);
		const t = setup({ partitions: 1, epochRetry: { firstDelayMs: 10, maxDelayMs: 40 } });
		await t.placement.start(new AbortController().signal);
		t.failEpochOf(0);
		await t.placement.service.start(t.ctx);
		// Failures at 0, 10, 30, 70, 110, 150 ms (waits 10, 20, 40, 40, 40).
		await t.clock.advanceAsync(150);
		const failed = epochFailures(t.log.lines);
		expect(failed.map((l) => l.obj.retryInMs)).toEqual([10, 20, 40, 40, 40, 40]);
		expect(failed.every((l) => l.level === "error")).toBe(true);
		expect(failed.every((l) => l.obj.err !== undefined)).toBe(true);
		expect(t.placement.describe()).toMatchObject({ epochFailures: 6 });
		expect(t.placement.served()).toEqual([]);
		t.epochWrites.on = false;
		await t.clock.advanceAsync(40);
		expect(t.placement.served()).toEqual([0]);
		await t.placement.close();
	});

	it("stops retrying when the leadership ends, and when the placement closes", async () => {
		const t = setup({ partitions: 1 });
		await t.placement.start(new AbortController().signal);
		t.failEpochOf(0);
		await t.placement.service.start(t.ctx);
		await t.clock.advanceAsync(1_000);
		const writes = t.storage.count("insertIfNotExists");
		t.ctl.abort(new Error("leadership lost"));
		await t.clock.advanceAsync(60_000);
		expect(t.storage.count("insertIfNotExists")).toBe(writes);
		expect(t.granted.size).toBe(0);

		// A new leadership retries on its own; close() ends it too.
		const ctl = new AbortController();
		await t.placement.service.start({ ...t.ctx, signal: ctl.signal });
		await t.clock.advanceAsync(1_000);
		const later = t.storage.count("insertIfNotExists");
		expect(later).toBeGreaterThan(writes + 1);
		await t.placement.close();
		await t.clock.advanceAsync(60_000);
		expect(t.storage.count("insertIfNotExists")).toBe(later);
		expect(t.placement.served()).toEqual([]);
	});

	it("takes nothing while the leadership is not valid by its own clock; goes on once it is", async () => {
		const t = setup({ partitions: 1 });
		await t.placement.start(new AbortController().signal);
		const remove = t.failEpochOf(0);
		await t.placement.service.start(t.ctx);
		remove();
		t.lease.valid = false; // a renewal hangs past the local deadline
		const writes = t.storage.count("insertIfNotExists");
		await t.clock.advanceAsync(10_000);
		expect(t.storage.count("insertIfNotExists")).toBe(writes);
		expect(t.placement.served()).toEqual([]);
		t.lease.valid = true; // renewed
		await t.clock.advanceAsync(5_000);
		expect(t.placement.served()).toEqual([0]);
		await t.placement.close();
	});

	it("a lost answer whose write landed: the retry reads it and takes the next epoch; never the same epoch twice", async () => {
		const t = setup({ partitions: 1 });
		await t.placement.start(new AbortController().signal);
		// The first insert is applied, but its answer is lost.
		t.storage.inject({
			on: "insertIfNotExists",
			action: faults.unknownOutcome(true),
			times: 1,
		});
		await t.placement.service.start(t.ctx);
		expect(t.placement.served()).toEqual([]);
		expect((await readPartitionEpoch(t.storage, NS, 0))?.epoch).toBe(3n); // it landed
		// Then a compare-and-swap whose answer is lost and which did not land.
		t.storage.inject({
			on: "compareAndSwap",
			action: faults.unknownOutcome(false),
			times: 1,
		});
		await t.clock.advanceAsync(100);
		expect(t.placement.served()).toEqual([]);
		await t.clock.advanceAsync(200);
		expect(t.placement.served()).toEqual([0]);
		// Served under 4, the epoch its own write moved the record to from 3 (which it never used).
		expect(t.granted.get(0)).toBe(4n);
		expect(await readPartitionEpoch(t.storage, NS, 0)).toMatchObject({ epoch: 4n });
		// A later holder (another leadership) goes above it.
		t.ctl.abort(new Error("leadership lost"));
		const ctl = new AbortController();
		await t.placement.service.start({ ...t.ctx, signal: ctl.signal });
		expect(t.granted.get(0)).toBe(5n);
		await t.placement.close();
	});

	it("a take of a leadership that ended, landing late, cannot make two holders: the next holder goes above it", async () => {
		const clock = new MockClock(1_000_000);
		const mem = createMemTTLStorage({ clock });
		const oldLink = withFaults(mem, { clock });
		const newLink = withFaults(mem, { clock });
		const served: [string, number, bigint | undefined][] = [];
		const handlersOf = (name: string): PlacementHandlers => ({
			async onGranted(p, grant) {
				served.push([name, p, grant.fencingToken]);
			},
			onEnded() {},
		});
		const make = (name: string, storage: TTLStorage, slot: number) =>
			createStaticPlacement({
				partitions: 1,
				numVVM: 1,
				handlers: handlersOf(name),
				leadership: () => leadership(slot),
				leaderOf: async () => undefined,
				storage,
				namespace: NS,
				clock,
			});
		const a = make("a", oldLink, 1);
		const b = make("b", newLink, 1);
		await a.start(new AbortController().signal);
		await b.start(new AbortController().signal);
		// a's first take fails; its retry's insert is slow (2 s) and its leadership ends meanwhile.
		oldLink.inject({ on: "insertIfNotExists", action: faults.fail(), times: 1 });
		const aCtl = new AbortController();
		await a.service.start({ signal: aCtl.signal, leaseValid: () => true, fencingToken: 3 });
		oldLink.inject({ on: "insertIfNotExists", action: faults.delay(2_000), times: 1 });
		await clock.advanceAsync(100); // the retry's insert is in flight
		aCtl.abort(new Error("leadership lost"));
		// b leads now (token 4) and takes its epoch at once.
		const bCtl = new AbortController();
		await b.service.start({ signal: bCtl.signal, leaseValid: () => true, fencingToken: 4 });
		expect(b.served()).toEqual([0]);
		await clock.advanceAsync(5_000); // a's late insert lands (refused: the record exists)
		expect(a.served()).toEqual([]);
		expect(served).toEqual([["b", 0, 4n]]);
		expect((await readPartitionEpoch(mem, NS, 0))?.epoch).toBe(4n);
		await a.close();
		await b.close();
	});

	it("giveUpAfterMs: the service's start waits for the slot's epochs and rejects past the bound (the VVM releases the slot)", async () => {
		const t = setup({ partitions: 2, epochRetry: { giveUpAfterMs: 1_000 } });
		await t.placement.start(new AbortController().signal);
		t.failEpochOf(1);
		let outcome: unknown = "pending";
		const started = t.placement.service.start(t.ctx).then(
			() => "resolved",
			(e: unknown) => e,
		);
		void started.then((o) => {
			outcome = o;
		});
		await t.clock.advanceAsync(0);
		expect(t.placement.served()).toEqual([0]); // served meanwhile
		await t.clock.advanceAsync(999);
		expect(outcome).toBe("pending");
		await t.clock.advanceAsync(1);
		const error = await started;
		expect(error).toBeInstanceOf(PartitionEpochUnavailableError);
		expect(error).toMatchObject({
			code: "APPPARTS_EPOCH_UNAVAILABLE",
			slot: 1,
			partitions: [1],
			cause: { code: "TTLSTORAGE_UNAVAILABLE" },
		});
		// It cleaned up after itself: nothing served, partition 0 ended, no retry left running.
		expect(t.placement.served()).toEqual([]);
		expect(t.ended.map(([p]) => p)).toEqual([0, 1]);
		expect(t.log.lines.some((l) => l.obj.event === "slot-given-up" && l.level === "error")).toBe(
			true,
		);
		const writes = t.storage.count("insertIfNotExists");
		await t.clock.advanceAsync(60_000);
		expect(t.storage.count("insertIfNotExists")).toBe(writes);

		// Within the bound it resolves once every epoch is taken.
		const u = setup({ partitions: 2, epochRetry: { giveUpAfterMs: 1_000 } });
		await u.placement.start(new AbortController().signal);
		const remove = u.failEpochOf(1);
		const ok = u.placement.service.start(u.ctx);
		await u.clock.advanceAsync(0);
		remove();
		await u.clock.advanceAsync(100);
		await expect(ok).resolves.toBeUndefined();
		expect(u.placement.served()).toEqual([0, 1]);
		await u.placement.close();
	});

	it("epochRetry is checked before anything runs", () => {
		expect(resolveEpochRetry(undefined)).toEqual({
			firstDelayMs: 100,
			maxDelayMs: 5_000,
			giveUpAfterMs: undefined,
		});
		expect(resolveEpochRetry({ firstDelayMs: 8_000 })).toEqual({
			firstDelayMs: 8_000,
			maxDelayMs: 8_000,
			giveUpAfterMs: undefined,
		});
		expect(() => resolveEpochRetry({ firstDelayMs: 0 })).toThrow(RangeError);
		expect(() => resolveEpochRetry({ firstDelayMs: 200, maxDelayMs: 100 })).toThrow(
			"epochRetry.maxDelayMs",
		);
		expect(() => resolveEpochRetry({ giveUpAfterMs: 50 })).toThrow("epochRetry.giveUpAfterMs");
		expect(() => resolveEpochRetry({ maxDelayMs: Number.NaN })).toThrow(RangeError);
		expect(() => resolveEpochRetry("fast" as unknown as EpochRetryOptions)).toThrow(TypeError);
		const clock = new MockClock(0);
		expect(() =>
			createStaticPlacement({
				partitions: 1,
				numVVM: 1,
				handlers: { onGranted: async () => {}, onEnded() {} },
				leadership: () => undefined,
				leaderOf: async () => undefined,
				storage: createMemTTLStorage({ clock }),
				clock,
				epochRetry: { maxDelayMs: -1 },
			}),
		).toThrow("epochRetry.maxDelayMs");
	});
});
