import type { TTLStorage } from "@vvm/ttlstorage";
import type { StoredEvent } from "../event.ts";
import { decodeLogValue, decodeRecordValue } from "../event.ts";
import { BUCKET_SIZE, bucketOf, cpKeys, plogPKey, readU64, wlogPKey } from "../keys.ts";
import { iterateLog } from "../log-iterator.ts";
import { checkPartitions } from "../partition.ts";
import { decodePLogEntry } from "../plog-reader.ts";
import type { CommandResult } from "../request.ts";

/**
 * A command whose success was acknowledged to its client.
 *
 * @example
 * ```ts
 * const ack: AcknowledgedCommand = { wsid: 1001, result: await partition.createRecord(req) };
 * ```
 */
export interface AcknowledgedCommand {
	readonly wsid: number;
	readonly result: Pick<CommandResult, "CurrentWLogOffset" | "NewIDs" | "plogOffset">;
}

/**
 * Options of {@link checkCpStorage}.
 *
 * @example
 * ```ts
 * const options: CheckOptions = { storage, appId: 1, partitions: 4, acknowledged };
 * ```
 */
export interface CheckOptions {
	readonly storage: TTLStorage;
	readonly appId: number;
	readonly partitions: number;
	/** Commands acknowledged as successful; each must be readable. */
	readonly acknowledged?: readonly AcknowledgedCommand[];
	/** PLog offsets holding values this package did not write are problems unless allowed. Default false. */
	readonly allowCorruptedOffsets?: boolean;
}

/**
 * What {@link checkCpStorage} found.
 *
 * @example
 * ```ts
 * if (!report.ok) console.error(report.problems.join("\n"));
 * ```
 */
export interface CheckReport {
	readonly ok: boolean;
	readonly problems: readonly string[];
	/** Events in all PLogs (markers included). */
	readonly events: number;
	/** Events marked corrupted. */
	readonly markers: number;
	/** PLog offsets whose value is not an event. */
	readonly corruptedOffsets: number;
	readonly workspaces: number;
	/** Records created by (unmarked) events, all checked. */
	readonly records: number;
	readonly acknowledged: number;
}

/** An object with its keys sorted, so equal field sets stringify equally. */
function sorted(fields: Readonly<Record<string, unknown>>): Record<string, unknown> {
	return Object.fromEntries(Object.entries(fields).sort(([a], [b]) => (a < b ? -1 : 1)));
}

interface Seen {
	readonly event: StoredEvent;
	readonly marker: boolean;
}

/** Entries of a log's buckets beyond `last` (present after a gap). */
async function strays(
	storage: TTLStorage,
	pKeyOf: (b: number) => Uint8Array,
	last: number,
): Promise<number[]> {
	const out: number[] = [];
	for (let b = bucketOf(last + 1); b <= bucketOf(last + 1) + 1; b++)
		for await (const r of storage.read(pKeyOf(b))) {
			const o = readU64(r.cCols);
			if (o === undefined || o > last) out.push(o ?? -1);
		}
	return out;
}

/**
 * One event of an application's PLogs as stored (for checkers outside this package).
 *
 * @example
 * ```ts
 * for (const e of await scanCpEvents({ storage, appId: 1, partitions: 8 })) console.log(e.plogOffset, e.cuds);
 * ```
 */
export interface ScannedEvent {
	readonly partitionId: number;
	readonly plogOffset: number;
	readonly wsid: number;
	readonly wlogOffset: number;
	/** Marked corrupted: its effects were not applied. */
	readonly corrupted: boolean;
	readonly cuds: ReadonlyArray<{
		readonly id: number;
		readonly table: string;
		readonly isNew: boolean;
		readonly fields: Readonly<Record<string, unknown>>;
	}>;
	/** The idempotency key it was written with, if any. */
	readonly idempotencyKey?: string;
}

/**
 * A record's fields as stored, read straight from the storage (not through a deployed partition):
 * `undefined` when it is missing, a tombstone, or not a record of ours. For checkers of tests and
 * chaos runs.
 *
 * @example
 * ```ts
 * const fields = await readCpRecord({ storage, appId: 1 }, 1001, 322685000131072); // { name: "Ada" }
 * ```
 */
export async function readCpRecord(
	options: Pick<CheckOptions, "storage" | "appId">,
	wsid: number,
	id: number,
): Promise<Readonly<Record<string, unknown>> | undefined> {
	const k = cpKeys.record(options.appId, wsid, id);
	const bytes = await options.storage.get(k.pKey, k.cCols);
	const r = bytes === undefined ? undefined : decodeRecordValue(bytes);
	return r === undefined || r.d !== undefined ? undefined : r.f;
}

/**
 * Every event of every partition's PLog, in offset order per partition (a full scan: for checkers
 * of tests and chaos runs). Values that are not events are left out.
 */
export async function scanCpEvents(
	options: Pick<CheckOptions, "storage" | "appId" | "partitions">,
): Promise<ScannedEvent[]> {
	const { storage, appId, partitions } = options;
	checkPartitions(partitions);
	const out: ScannedEvent[] = [];
	for (let p = 0; p < partitions; p++) {
		const pKeyOf = (b: number): Uint8Array => plogPKey(appId, p, b);
		for await (const { offset, value } of iterateLog(storage, pKeyOf, 1)) {
			const d = decodePLogEntry(p, offset, value);
			if (d === undefined) continue;
			const e = d.event;
			out.push({
				partitionId: p,
				plogOffset: offset,
				wsid: e.ws,
				wlogOffset: e.w,
				corrupted: d.kind === "marker",
				cuds: e.cuds.map((c) => ({ id: c.id, table: c.q, isNew: c.n, fields: c.f })),
				...(e.i === undefined ? {} : { idempotencyKey: e.i.k }),
			});
		}
	}
	return out;
}

/**
 * Checks the invariants a crash must never break, on the stored PLogs, WLogs and records of one
 * application (a full scan: for tests, e.g. after a kill test, once a restarted process recovered
 * or every process stopped):
 *
 * - every acknowledged command is readable: its WLog entry is its event, and its new records
 *   exist, created by that event;
 * - PLog offsets of every partition and WLog offsets of every workspace are dense from 1 (no entry
 *   after a gap) and never reused (one event per WLog offset; the WLog entry is the PLog's event);
 * - no record ID was handed out twice (by two events, marked ones included), and every record an
 *   unmarked event created exists;
 * - every record holds the state the last (unmarked) event that wrote it gave it: no update was
 *   lost or reverted, and no record a marked event created reads as data;
 * - no record exists that no event created (an orphan: a deposed holder's late write, say).
 *
 * @example
 * ```ts
 * const report = await checkCpStorage({ storage, appId: 1, partitions: 4, acknowledged });
 * expect(report.problems).toEqual([]);
 * ```
 */
export async function checkCpStorage(options: CheckOptions): Promise<CheckReport> {
	const { storage, appId, partitions } = options;
	checkPartitions(partitions);
	const problems: string[] = [];
	const byWs = new Map<number, Seen[]>();
	let events = 0;
	let markers = 0;
	let corrupted = 0;
	for (let p = 0; p < partitions; p++) {
		const pKeyOf = (b: number): Uint8Array => plogPKey(appId, p, b);
		let last = 0;
		for await (const { offset, value } of iterateLog(storage, pKeyOf, 1)) {
			last = offset;
			const d = decodePLogEntry(p, offset, value);
			if (d === undefined) {
				corrupted++;
				if (!options.allowCorruptedOffsets)
					problems.push(`PLog ${p}/${offset}: not an event of this partition`);
				continue;
			}
			events++;
			if (d.kind === "marker") markers++;
			if (d.event.ws % partitions !== p)
				problems.push(
					`PLog ${p}/${offset}: wsid ${d.event.ws} belongs to partition ${d.event.ws % partitions}`,
				);
			const list = byWs.get(d.event.ws) ?? [];
			list.push({ event: d.event, marker: d.kind === "marker" });
			byWs.set(d.event.ws, list);
		}
		for (const o of await strays(storage, pKeyOf, last))
			problems.push(`PLog ${p}: offset ${o} is stored after the end ${last} (a gap)`);
	}

	let records = 0;
	for (const [ws, seen] of byWs) {
		const byOffset = new Map<number, Seen>();
		for (const s of seen) {
			const prev = byOffset.get(s.event.w);
			if (prev !== undefined)
				problems.push(
					`WLog ${ws}/${s.event.w}: reused by PLog offsets ${prev.event.o} and ${s.event.o}`,
				);
			byOffset.set(s.event.w, s);
		}
		const max = Math.max(...byOffset.keys());
		for (let w = 1; w <= max; w++)
			if (!byOffset.has(w)) problems.push(`WLog ${ws}/${w}: no event took it (a gap)`);
		const pKeyOf = (b: number): Uint8Array => wlogPKey(appId, ws, b);
		let lastW = 0;
		for await (const { offset, value } of iterateLog(storage, pKeyOf, 1)) {
			lastW = offset;
			const d = decodeLogValue(value);
			const s = byOffset.get(offset);
			if (d === undefined) problems.push(`WLog ${ws}/${offset}: not an event`);
			else if (s === undefined) problems.push(`WLog ${ws}/${offset}: no PLog event has it`);
			else if (d.event.o !== s.event.o || d.event.p !== s.event.p)
				problems.push(
					`WLog ${ws}/${offset}: holds PLog event ${d.event.p}/${d.event.o}, the PLog says ${s.event.p}/${s.event.o}`,
				);
			else if (s.marker !== (d.kind === "marker"))
				problems.push(
					`WLog ${ws}/${offset}: ${s.marker ? "the event is marked corrupted, its WLog entry is not" : "marked corrupted, its PLog event is not"}`,
				);
		}
		if (lastW !== max) problems.push(`WLog ${ws}: ends at ${lastW}, its events go to ${max}`);
		for (const o of await strays(storage, pKeyOf, lastW))
			problems.push(`WLog ${ws}: offset ${o} is stored after the end ${lastW} (a gap)`);

		const owner = new Map<number, number>();
		/** Per record, the last unmarked event that wrote it (PLog order). */
		const lastWriter = new Map<number, { event: StoredEvent; fields: string }>();
		for (const { event, marker } of [...seen].sort((a, b) => a.event.o - b.event.o)) {
			for (const c of event.cuds) {
				if (!marker) lastWriter.set(c.id, { event, fields: JSON.stringify(sorted(c.f)) });
				if (!c.n) continue;
				const prev = owner.get(c.id);
				if (prev !== undefined)
					problems.push(
						`record ${ws}/${c.id}: handed out twice (PLog offsets ${prev} and ${event.o})`,
					);
				owner.set(c.id, event.o);
				const k = cpKeys.record(appId, ws, c.id);
				const bytes = await storage.get(k.pKey, k.cCols);
				const r = bytes === undefined ? undefined : decodeRecordValue(bytes);
				if (marker) {
					if (r !== undefined && r.d === undefined && r.c === event.o)
						problems.push(
							`record ${ws}/${c.id}: created by corrupted event ${event.o}, not rolled back`,
						);
					continue;
				}
				records++;
				if (r === undefined || r.d !== undefined)
					problems.push(`record ${ws}/${c.id}: missing (created by PLog offset ${event.o})`);
				else if (r.c !== event.o || r.q !== c.q)
					problems.push(
						`record ${ws}/${c.id}: holds ${r.q} created by ${r.c}, the PLog says ${c.q} by ${event.o}`,
					);
			}
		}
		for (const [id, { event, fields }] of lastWriter) {
			const k = cpKeys.record(appId, ws, id);
			const bytes = await storage.get(k.pKey, k.cCols);
			const r = bytes === undefined ? undefined : decodeRecordValue(bytes);
			if (r === undefined || r.d !== undefined) continue; // reported above when it matters
			if (r.u !== event.o || JSON.stringify(sorted(r.f)) !== fields)
				problems.push(
					`record ${ws}/${id}: holds the state written by PLog offset ${r.u}, the last event that wrote it is ${event.o}`,
				);
		}
		// Records no event created: scan the buckets of the IDs handed out (and the next one).
		const buckets = new Set<number>();
		for (const id of owner.keys()) {
			buckets.add(bucketOf(id));
			buckets.add(bucketOf(id) + 1);
		}
		for (const b of buckets) {
			const pKey = cpKeys.record(appId, ws, b * BUCKET_SIZE).pKey;
			for await (const rec of storage.read(pKey)) {
				const id = readU64(rec.cCols);
				const r = decodeRecordValue(rec.value);
				if (id === undefined || owner.has(id) || (r !== undefined && r.d !== undefined)) continue;
				problems.push(`record ${ws}/${id ?? "?"}: no event created it (an orphan)`);
			}
		}
	}

	const acked = options.acknowledged ?? [];
	const ackKeys = new Set<string>();
	for (const { wsid, result } of acked) {
		const tag = `acknowledged command ${wsid}/${result.CurrentWLogOffset}`;
		if (ackKeys.has(`${wsid}/${result.CurrentWLogOffset}`))
			problems.push(`${tag}: acknowledged twice`);
		ackKeys.add(`${wsid}/${result.CurrentWLogOffset}`);
		const s = byWs.get(wsid)?.find((x) => x.event.w === result.CurrentWLogOffset);
		if (s === undefined || s.marker || s.event.o !== result.plogOffset) {
			problems.push(`${tag}: its event (PLog offset ${result.plogOffset}) is not in the logs`);
			continue;
		}
		const created = new Set(s.event.cuds.filter((c) => c.n).map((c) => c.id));
		for (const [raw, id] of Object.entries(result.NewIDs)) {
			const k = cpKeys.record(appId, wsid, id);
			const bytes = await storage.get(k.pKey, k.cCols);
			const r = bytes === undefined ? undefined : decodeRecordValue(bytes);
			if (!created.has(id) || r === undefined || r.d !== undefined || r.c !== s.event.o)
				problems.push(`${tag}: new record ${raw} -> ${id} is not readable as created by it`);
		}
	}
	return {
		ok: problems.length === 0,
		problems,
		events,
		markers,
		corruptedOffsets: corrupted,
		workspaces: byWs.size,
		records,
		acknowledged: acked.length,
	};
}
