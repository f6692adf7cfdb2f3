// One placement-driver tick over many groups: CPU time, writes and bytes, per kind of tick.
import { MockClock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { MAX_VALUE_BYTES } from "@vvm/ttlstorage";
import { BatchStore, EMPTY_BATCH } from "../src/batch-store.ts";
import type { TickSummary } from "../src/events.ts";
import { encodeHeartbeat } from "../src/heartbeat-codec.ts";
import { leaseKeys } from "../src/keys.ts";
import { MemberView } from "../src/member-view.ts";
import { newCounters } from "../src/metrics.ts";
import { PlacementActor } from "../src/placement-actor.ts";

export interface TickRow {
	readonly kind: string;
	readonly ticks: number;
	readonly cpuMsMedian: number;
	readonly cpuMsMax: number;
	readonly wallMsMedian: number;
	readonly writes: number;
	readonly bytes: number;
	/** Bytes of the whole stored batch after the tick, and ceil(bytes / 64 KiB). */
	readonly batchBytes: number;
	readonly bound: number;
}

const median = (xs: number[]): number => {
	const s = [...xs].sort((a, b) => a - b);
	return s[Math.floor(s.length / 2)] ?? 0;
};

/**
 * Runs the placement-driver ticks of a cluster of `hosts` over `groups` groups on one driver:
 * the first tick (every group granted, the batch created), the acceptance tick, `rounds`
 * steady-state ticks (heartbeats and ticks every leaseInterval / 10, as by default), and the
 * failover tick after one host left (its leases expired and granted to the others).
 */
export async function benchTicks(
	makeStorage: (clock: MockClock) => TTLStorage,
	options: {
		groups: number;
		hosts: number;
		rounds: number;
		namespace: string;
		/** Start from a batch where every lease was granted at a different time (the worst case). */
		distinctStarts?: boolean;
	},
): Promise<TickRow[]> {
	const I = 10_000;
	const clock = new MockClock(1_700_000_000_000);
	const storage = makeStorage(clock);
	const keys = leaseKeys(options.namespace);
	const store = new BatchStore(storage, keys);
	const summaries: Array<{ kind: string; s: TickSummary; wallMs: number; batchBytes: number }> = [];
	const actor = new PlacementActor({
		store,
		writer: "bench:1/1",
		clock,
		groups: options.groups,
		leaseIntervalMs: I,
		maxClockSkewMs: 500,
		prolongBelowMs: 0.75 * I,
		freshWindowMs: I / 2,
		counters: newCounters(),
		emit: () => {},
	});
	const view = new MemberView();
	const addresses = Array.from({ length: options.hosts }, (_, i) => `10.0.0.${i + 1}:8080`);
	let seq = 0;
	let alive = addresses;
	const beat = async (acks: boolean): Promise<void> => {
		seq++;
		const leases = actor.state?.leases ?? [];
		await Promise.all(
			alive.map((address) => {
				const mine = new Map<number, number>();
				if (acks)
					leases.forEach((l, g) => {
						if (l?.holder.address === address) mine.set(g, l.term);
					});
				const value = encodeHeartbeat({ incarnation: "1", seq, acks: mine });
				return storage.put(keys.members, keys.member(address), value, 3600);
			}),
		);
		const started = clock.monotonic();
		const records = [];
		for await (const r of storage.read(keys.members)) records.push(r);
		view.observe(records, started);
	};
	const batchBytes = async (): Promise<number> => {
		let n = 0;
		for await (const r of storage.read(keys.batch)) n += r.value.length;
		return n;
	};
	// The actor runs on the mock clock; its wall time is measured on the real one.
	const timed = async (): Promise<{ s: TickSummary; wallMs: number }> => {
		const t0 = performance.now();
		const s = await actor.tick(view);
		if (s.result === "conflict" || s.result === "failed") throw new Error(`tick: ${s.result}`);
		return { s, wallMs: performance.now() - t0 };
	};
	const tick = async (kind: string): Promise<void> => {
		summaries.push({ kind, ...(await timed()), batchBytes: await batchBytes() });
	};
	if (options.distinctStarts === true) {
		// Leases granted over the last day, each at its own millisecond, already accepted.
		const now = clock.now();
		const leases = Array.from({ length: options.groups }, (_, g) => ({
			group: g,
			holder: { address: addresses[g % options.hosts] as string, incarnation: "1" },
			startTime: now - 86_400_000 + g * 8_000,
			expirationTime: now + I,
			accepted: true,
			prolongable: true,
			term: g % 256,
		}));
		await store.write(EMPTY_BATCH, leases, { writer: "seed/1", now, groups: options.groups });
		await beat(false);
		clock.advance(100);
		await beat(true);
		await tick("worst case, first tick: read the batch");
	} else {
		await beat(false);
		clock.advance(100);
		await beat(false);
		// A new batch is created with no lease (its creation marker comes before any grant).
		await tick("first tick: create the batch");
		await tick("second tick: grant every group");
		await beat(true);
		await tick("acceptance: every lease accepted");
	}
	const prefix = options.distinctStarts === true ? "worst case, " : "";
	// Steady state, as with the defaults: heartbeats and ticks every leaseInterval / 10.
	const steady = async (): Promise<TickSummary> => {
		clock.advance(0.1 * I);
		await beat(true);
		const { s, wallMs } = await timed();
		const kind =
			s.granted > 0
				? `${prefix}failover: a host's groups granted again`
				: s.prolonged > 0
					? `${prefix}steady state: prolongation of every lease`
					: `${prefix}steady state: nothing to change`;
		summaries.push({ kind, s, wallMs, batchBytes: await batchBytes() });
		return s;
	};
	for (let i = 0; i < options.rounds; i++) await steady();
	// One host leaves; once its leases expire they are granted to the others, the rest prolonged.
	alive = addresses.slice(1);
	for await (const r of storage.read(keys.members)) {
		if (new TextDecoder().decode(r.cCols) === addresses[0])
			await storage.compareAndDelete(keys.members, r.cCols, r.value);
	}
	for (let i = 0; i < 20; i++) if ((await steady()).granted > 0) break;
	await storage.close();
	const kinds = [...new Set(summaries.map((x) => x.kind))];
	return kinds.map((kind) => {
		const rows = summaries.filter((x) => x.kind === kind);
		const last = rows.at(-1) as (typeof rows)[number];
		return {
			kind,
			ticks: rows.length,
			cpuMsMedian: median(rows.map((r) => r.s.cpuMs)),
			cpuMsMax: Math.max(...rows.map((r) => r.s.cpuMs)),
			wallMsMedian: median(rows.map((r) => r.wallMs)),
			writes: Math.max(...rows.map((r) => r.s.writes)),
			bytes: Math.max(...rows.map((r) => r.s.bytes)),
			batchBytes: last.batchBytes,
			bound: Math.ceil(last.batchBytes / MAX_VALUE_BYTES),
		};
	});
}
