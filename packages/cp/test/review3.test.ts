// Review 3: defects of @vvm/cp; every case fails on commit 16ce4c7.
// Copied from ../shared/review3/cp.test.ts. Adapted to the fenced-writes API, assertions kept:
// `hooked()` passes fences through (the `options` of each write, `raiseFence`, `supports`), and
// the failed record write of the first case also covers level 0's update, now a compare-and-swap.
import type { BatchItem, TTLStorage } from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { afterEach, describe, expect, it } from "vitest";
import type { CommandProcessor } from "../src/command-processor.ts";
import { createCommandProcessor } from "../src/command-processor.ts";
import { CpError } from "../src/errors.ts";
import type { SequencesTrustLevel } from "../src/event-writer.ts";
import { prefixOf, waitFor } from "../src/testing/harness.ts";

const CUSTOMER = "app1pkg.Customer";
const WSID = 1001;
const ID = 322685000131072; // the first CDoc ID of a workspace
const RECORDS = 7; // PKEY_PREFIX_RECORDS

/** A storage view: every call goes to `inner`, except what the hooks take over. */
function hooked(
	inner: TTLStorage,
	hooks: {
		putBatch?: (items: readonly BatchItem[]) => Promise<void> | undefined;
		get?: (pKey: Uint8Array, cCols: Uint8Array) => Promise<Uint8Array | undefined> | undefined;
	},
): TTLStorage {
	const raise = inner.raiseFence?.bind(inner);
	return {
		...(inner.supports === undefined ? {} : { supports: inner.supports }),
		...(raise === undefined ? {} : { raiseFence: (s: Uint8Array, e?: bigint) => raise(s, e) }),
		compareAndSwap: (p, c, o, n, ttl, opt) =>
			(hooks.putBatch?.([{ pKey: p, cCols: c, value: n }]) as Promise<never> | undefined) ??
			inner.compareAndSwap(p, c, o, n, ttl, opt),
		compareAndDelete: (p, c, v, opt) => inner.compareAndDelete(p, c, v, opt),
		get: (p, c) => hooks.get?.(p, c) ?? inner.get(p, c),
		read: (p, range) => inner.read(p, range),
		queryTTL: (p, c) => inner.queryTTL(p, c),
		close: async () => {},
		[Symbol.asyncDispose]: async () => {},
		put: (p, c, v, ttl, opt) =>
			hooks.putBatch?.([{ pKey: p, cCols: c, value: v }]) ?? inner.put(p, c, v, ttl, opt),
		putBatch: (items) => hooks.putBatch?.(items) ?? inner.putBatch(items),
		insertIfNotExists: (p, c, v, ttl, opt) => inner.insertIfNotExists(p, c, v, ttl, opt),
	};
}

const hasRecord = (items: readonly Pick<BatchItem, "pKey">[]): boolean =>
	items.some((i) => prefixOf(i.pKey) === RECORDS);

const processors: CommandProcessor[] = [];
afterEach(async () => {
	for (const p of processors.splice(0)) await p.close();
});

function processor(storage: TTLStorage, trustLevel: SequencesTrustLevel = 0): CommandProcessor {
	const cp = createCommandProcessor({
		storage,
		appId: 1,
		partitions: 1,
		trustLevel,
		// growOnlyNumbers (the host's former default) is gone: the fence covers what it did.
		sequencerRetry: { baseDelayMs: 1, maxDelayMs: 5 },
	});
	processors.push(cp);
	return cp;
}

describe("review3: a committed update is lost", () => {
	it("the next command's record read, answered before recovery re-applied the failed command's committed update, overwrites it", async () => {
		const base = createMemTTLStorage();
		let failRecordPut = false;
		let holdResolveRead = false;
		let actualized: Promise<void> = Promise.resolve();
		const storage = hooked(base, {
			putBatch: (items) => {
				if (!failRecordPut || !hasRecord(items)) return undefined;
				failRecordPut = false;
				holdResolveRead = true;
				// A transient failure of the record write, after the PLog entry landed.
				return Promise.reject(
					new TTLStorageError("TTLSTORAGE_UNAVAILABLE", "injected: record write failed", {
						driver: "test",
						operation: "putBatch",
					}),
				);
			},
			get: (p, c) => {
				// The next command reads the record to update (AppPartitionImpl.#resolveUpdates): the
				// storage answers with the value it holds now, and the reply arrives late (a slow
				// read), after the partition's re-actualization has finished.
				if (!holdResolveRead || prefixOf(p) !== RECORDS) return undefined;
				if (!(new Error().stack ?? "").includes("resolveUpdates")) return undefined;
				holdResolveRead = false;
				const value = base.get(p, c);
				return value.then(async (v) => {
					await actualized;
					return v;
				});
			},
		});
		const cp = processor(storage);
		const p = cp.deploy(0);
		await p.ready();
		await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });

		failRecordPut = true;
		const first = p.updateRecord({
			wsid: WSID,
			table: CUSTOMER,
			id: ID,
			fields: { name: "Ada L." },
		});
		const second = p.updateRecord({ wsid: WSID, table: CUSTOMER, id: ID, fields: { vip: true } });
		actualized = waitFor(
			() => p.stats().reappliedEvents > 0 && !p.stats().actualizing,
			"the re-actualization after the failed update",
		);
		const r1 = await first.then(
			(r) => ({ ok: r.CurrentWLogOffset }),
			(e: { code?: string; committed?: string }) => ({ code: e.code, committed: e.committed }),
		);
		const r2 = await second.then(
			(r) => ({ ok: r.CurrentWLogOffset }),
			(e: { code?: string }) => ({ code: e.code }),
		);
		const record = await p.readRecord({ wsid: WSID, id: ID });
		const wlog = await p.readWLog({ wsid: WSID, from: 1 });
		const observed = {
			first: r1,
			second: r2,
			record: { name: record.name, vip: record.vip },
			wlog: wlog.map((e) => e.event?.cuds.map((c) => c.fields)),
		};
		// The first update is durable (committed "yes": "applied before the partition's next
		// command", README): it must not be undone. If the second one succeeded (rather than being
		// refused), the record holds both.
		expect(observed.first).toEqual({ code: "CP_STORAGE", committed: "yes" });
		expect(observed.record.name, JSON.stringify(observed)).toBe("Ada L.");
		if ("ok" in observed.second) expect(observed.record.vip, JSON.stringify(observed)).toBe(true);
	});
});

describe("review3: a deposed leader's late update put (grow-only numbers)", () => {
	it.each([0, 1] as const)(
		"level %i: B's acknowledged update survives A's late record put",
		async (level) => {
			const base = createMemTTLStorage();
			// A's "proxy": once armed, A's next write of a record key (put, putBatch or
			// compare-and-swap) waits for `gate` (a GC pause or a congested link between A's PLog
			// write and its effects), then reaches the storage.
			let hold = false;
			let release!: () => void;
			const gate = new Promise<void>((r) => {
				release = r;
			});
			let heldLanded: Promise<unknown> | undefined;
			const late = <T>(keys: readonly Uint8Array[], write: () => Promise<T>): Promise<T> => {
				if (!hold || !keys.some((k) => prefixOf(k) === RECORDS)) return write();
				hold = false;
				const landed = gate.then(write);
				heldLanded = landed.catch(() => undefined);
				return landed;
			};
			const aStorage: TTLStorage = {
				...hooked(base, {}),
				putBatch: (items) =>
					late(
						items.map((i) => i.pKey),
						() => base.putBatch(items),
					),
				put: (p, c, v, ttl, opt) => late([p], () => base.put(p, c, v, ttl, opt)),
				compareAndSwap: (p, c, o, n, ttl, opt) =>
					late([p], () => base.compareAndSwap(p, c, o, n, ttl, opt)),
			};
			const a = processor(aStorage, level);
			const pa = a.deploy(0);
			await pa.ready();
			await pa.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
			// A's command: its PLog and WLog entries land; its record put is held.
			hold = true;
			const aUpdate = pa
				.updateRecord({ wsid: WSID, table: CUSTOMER, id: ID, fields: { name: "Ada L." } })
				.then(
					(r) => `ok ${r.CurrentWLogOffset}`,
					(e: { code?: string }) => String(e.code),
				);
			await waitFor(() => heldLanded !== undefined, "A's record put reaching the proxy");
			// A's lease ends (the host undeploys it; the put is already on its way).
			const aClosed = a.undeploy(0);

			// B takes the partition over: actualization re-applies A's event, then B updates.
			const b = processor(base, level);
			const pb = b.deploy(0);
			await pb.ready();
			const bUpdate = await pb.updateRecord({
				wsid: WSID,
				table: CUSTOMER,
				id: ID,
				fields: { vip: true },
			});

			// A's held put lands.
			release();
			await heldLanded;
			await aClosed;
			const record = await pb.readRecord({ wsid: WSID, id: ID });
			const observed = {
				aUpdate: await aUpdate,
				bUpdate: bUpdate.CurrentWLogOffset,
				record: { name: record.name, vip: record.vip },
			};
			// B acknowledged WLog offset 3 (vip: true, on top of A's name change): it must stay.
			expect(observed.bUpdate).toBe(3);
			expect(observed.record, JSON.stringify(observed)).toEqual({ name: "Ada L.", vip: true });
		},
	);
});

describe("review3: undeploy while a command reads the records it updates", () => {
	it("the command rejects with a CpError (CP_CLOSED), not the sequencer's error", async () => {
		const base = createMemTTLStorage();
		let hold = false;
		let release!: () => void;
		const gate = new Promise<void>((r) => {
			release = r;
		});
		let reached!: () => void;
		const atRead = new Promise<void>((r) => {
			reached = r;
		});
		const storage = hooked(base, {
			get: (p, c) => {
				if (!hold || prefixOf(p) !== RECORDS) return undefined;
				hold = false;
				reached();
				return gate.then(() => base.get(p, c));
			},
		});
		const cp = processor(storage);
		const p = cp.deploy(0);
		await p.ready();
		await p.createRecord({ wsid: WSID, table: CUSTOMER, fields: { name: "Ada" } });
		hold = true;
		const update = p.updateRecord({ wsid: WSID, table: CUSTOMER, id: ID, fields: { vip: true } });
		await atRead; // the command reads the record to update (before sequencer.start)
		const closed = cp.undeploy(0); // the lease ended
		release();
		const error = await update.then(
			() => undefined,
			(e: unknown) => e,
		);
		await closed;
		const observed = {
			isCpError: CpError.is(error),
			name: (error as Error).name,
			code: (error as { code?: string }).code,
		};
		// README (Errors): "Every operation rejects with a CpError"; nothing was written, so
		// CP_CLOSED (the host answers 503, retry) is the answer.
		expect(observed).toEqual({ isCpError: true, name: "CpError", code: "CP_CLOSED" });
	});
});
