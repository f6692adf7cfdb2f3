import type { CompiledTable, FieldValue } from "./app-def.ts";
import { MAX_RAW_ID, SEQ_WLOG_OFFSET } from "./app-def.ts";
import { badRequest } from "./errors.ts";
import type { IdempotentAnswer, StoredCud, StoredEvent } from "./event.ts";
import { encodeJson, MAX_EVENT_BYTES, recordValue } from "./event.ts";
import type { PlannedCreate } from "./request.ts";

/** @internal An update whose record was read: its table and its full new state. */
export interface ResolvedUpdate {
	readonly id: number;
	readonly table: CompiledTable;
	/** All fields after the update; refs may hold raw IDs. */
	readonly fields: Record<string, FieldValue>;
	/** PLog offset of the event that created the record. */
	readonly createdBy: number;
	readonly path: string;
	/** The record's value as read (level 0 swaps from it). */
	readonly stored: Uint8Array;
}

/** @internal Everything an event is built from. */
export interface EventParts {
	readonly partitionId: number;
	readonly plogOffset: number;
	readonly wsid: number;
	readonly wlogOffset: number;
	readonly registeredAt: number;
	readonly command: string;
	readonly args: Readonly<Record<string, FieldValue>> | undefined;
	readonly creates: readonly PlannedCreate[];
	/** Real ID of each create, in order. */
	readonly ids: readonly number[];
	readonly updates: readonly ResolvedUpdate[];
	/** Application sequence numbers taken: `[seqId, value]`. */
	readonly appSeqs: ReadonlyArray<readonly [number, number]>;
	/** The fencing epoch the partition writes under. */
	readonly epoch?: bigint | undefined;
	/** The command's idempotency key and the fingerprint of its request. */
	readonly idempotency?: { readonly key: string; readonly hash: string } | undefined;
	/** An application command's result. */
	readonly result?: Readonly<Record<string, unknown>> | undefined;
}

/** @internal The answer of a command: its WLog offset, the real ID of each raw ID, its result. */
export function answerOf(p: EventParts): IdempotentAnswer {
	const NewIDs: Record<string, number> = {};
	p.creates.forEach((c, i) => {
		NewIDs[String(c.rawId)] = p.ids[i] as number;
	});
	return {
		CurrentWLogOffset: p.wlogOffset,
		NewIDs,
		...(p.result === undefined ? {} : { Result: p.result }),
	};
}

function substitute(
	table: CompiledTable,
	fields: Readonly<Record<string, FieldValue>>,
	realOf: ReadonlyMap<number, number>,
): Record<string, FieldValue> {
	const out: Record<string, FieldValue> = { ...fields };
	for (const f of table.fields.values()) {
		const v = out[f.name];
		if (f.type === "ref" && typeof v === "number" && v <= MAX_RAW_ID) {
			const real = realOf.get(v);
			// checkRawIds guarantees it; an absent mapping is a bug, not bad input.
			if (real === undefined) throw new Error(`[@vvm/cp] raw ID ${v} has no real ID`);
			out[f.name] = real;
		}
	}
	return out;
}

/** @internal Builds the event: raw IDs replaced by real ones, every sequence number listed. */
export function buildEvent(p: EventParts): StoredEvent {
	const realOf = new Map<number, number>();
	p.creates.forEach((c, i) => {
		realOf.set(c.rawId, p.ids[i] as number);
	});
	const cuds: StoredCud[] = [];
	const s: Array<readonly [number, number]> = [[SEQ_WLOG_OFFSET, p.wlogOffset]];
	p.creates.forEach((c, i) => {
		const id = p.ids[i] as number;
		s.push([c.table.idSeq, id]);
		cuds.push({ id, q: c.table.name, n: true, f: substitute(c.table, c.fields, realOf) });
	});
	for (const u of p.updates)
		cuds.push({
			id: u.id,
			q: u.table.name,
			n: false,
			f: substitute(u.table, u.fields, realOf),
			c: u.createdBy,
		});
	s.push(...p.appSeqs);
	return {
		v: 1,
		k: "e",
		p: p.partitionId,
		o: p.plogOffset,
		ws: p.wsid,
		w: p.wlogOffset,
		t: p.registeredAt,
		c: p.command,
		...(p.args === undefined ? {} : { a: p.args }),
		s,
		cuds,
		...(p.epoch === undefined ? {} : { f: p.epoch.toString() }),
		...(p.idempotency === undefined
			? {}
			: { i: { k: p.idempotency.key, h: p.idempotency.hash, r: answerOf(p) } }),
	};
}

const encoder = new TextEncoder();
const utf8Length = (text: string): number => encoder.encode(text).length;

/**
 * @internal Rejects, as bad input, a command whose event could exceed the value limit: the event is
 * built with every number at its widest (`2^53 - 1`), so the real one is never longer. Runs before
 * any sequence number is taken (for application commands: after `execute`).
 */
export function checkEventSize(
	parts: Omit<EventParts, "plogOffset" | "wlogOffset" | "ids" | "registeredAt">,
): void {
	const widest = Number.MAX_SAFE_INTEGER;
	const draft = buildEvent({
		...parts,
		plogOffset: widest,
		wlogOffset: widest,
		registeredAt: widest,
		ids: parts.creates.map(() => widest),
		appSeqs: parts.appSeqs.map(([id]) => [id, widest] as const),
		epoch: 2n ** 63n - 1n,
	});
	const text = JSON.stringify(draft);
	// UTF-8 takes at most 3 bytes per UTF-16 unit: most events are far below the limit, and each of
	// their records (a part of the event) is too, so nothing is encoded.
	if (text.length * 3 <= MAX_EVENT_BYTES) return;
	const size = utf8Length(text);
	if (size > MAX_EVENT_BYTES)
		throw badRequest(
			parts.creates.length + parts.updates.length > 1 ? "cuds" : "fields",
			`the event would take up to ${size} bytes; the limit is ${MAX_EVENT_BYTES}`,
		);
	// A record's value is smaller than its event, but check it: it must fit on its own.
	for (const cud of draft.cuds) {
		const r = encodeJson(recordValue(draft, cud)).length;
		if (r > MAX_EVENT_BYTES) throw badRequest("fields", `a record would take ${r} bytes`);
	}
}
