import type { SeqValue } from "@vvm/isequencer";
import { MAX_VALUE_BYTES } from "@vvm/ttlstorage";
import type { FieldValue } from "./app-def.ts";

/**
 * The largest encoded event. Values are limited to 64 KiB (`MAX_VALUE_BYTES` of
 * `@vvm/ttlstorage`); 2 KiB stay free for the "corrupted" marker that wraps an event.
 */
export const MAX_EVENT_BYTES: number = MAX_VALUE_BYTES - 2048;

/** @internal One CUD as stored in an event: the record's full state after the event. */
export interface StoredCud {
	/** Real record ID. */
	readonly id: number;
	/** Table. */
	readonly q: string;
	/** `true`: created by this event; `false`: updated. */
	readonly n: boolean;
	/** All fields of the record after the event. */
	readonly f: Readonly<Record<string, FieldValue>>;
	/** Updates: the PLog offset of the event that created the record (kept in its value). */
	readonly c?: number;
}

/** @internal An event as stored in the PLog and the WLog (the same bytes in both). */
export interface StoredEvent {
	readonly v: 1;
	readonly k: "e";
	/** Partition. */
	readonly p: number;
	/** PLog offset. */
	readonly o: number;
	readonly ws: number;
	/** WLog offset. */
	readonly w: number;
	/** Registered at, ms since the epoch (wall clock of the VVM that wrote it). */
	readonly t: number;
	/** Command. */
	readonly c: string;
	/** Command arguments (application commands). */
	readonly a?: Readonly<Record<string, FieldValue>>;
	/** Every sequence number the event took: `[seqId, value]`, the WLog offset first. */
	readonly s: ReadonlyArray<readonly [number, number]>;
	readonly cuds: readonly StoredCud[];
	/** The writer's fencing epoch (decimal), when its writes were fenced. */
	readonly f?: string;
	/** The command's idempotency key, the fingerprint of its request and its answer. */
	readonly i?: StoredIdempotency;
}

/** @internal What an event keeps of its idempotency key (and its index record holds). */
interface StoredIdempotency {
	/** The key, as the client sent it. */
	readonly k: string;
	/** SHA-256 (hex) of the request the key was first used with. */
	readonly h: string;
	/** The answer of the first execution. */
	readonly r: IdempotentAnswer;
}

/** @internal The answer an idempotency key replays. */
export interface IdempotentAnswer {
	readonly CurrentWLogOffset: number;
	readonly NewIDs: Readonly<Record<string, number>>;
	readonly Result?: Readonly<Record<string, unknown>>;
}

/** @internal The value of an idempotency key's index record. */
export interface StoredIdempotencyEntry {
	readonly v: 1;
	/** PLog offset of the event. */
	readonly o: number;
	readonly h: string;
	readonly r: IdempotentAnswer;
}

/**
 * @internal An event whose effects could not be applied (a sequences violation at one of its
 * keys). Its numbers stay consumed; the records it created are rolled back.
 */
export interface StoredMarker {
	readonly v: 1;
	readonly k: "x";
	readonly reason: string;
	readonly e: StoredEvent;
}

/** @internal A record's value. */
export interface StoredRecordValue {
	readonly v: 1;
	readonly q: string;
	/** PLog offset of the event that created it. */
	readonly c: number;
	/** PLog offset of the event that last wrote it. */
	readonly u: number;
	readonly f: Readonly<Record<string, FieldValue>>;
	/**
	 * A rolled-back record (its creating event was marked corrupted): reads find nothing. A value
	 * rather than a delete, so that it is ordered by the fence like every other write.
	 */
	readonly d?: 1;
}

const decoder = new TextDecoder("utf-8", { fatal: true });

/** @internal */
export function encodeJson(value: unknown): Uint8Array {
	// Node's buffer pool for a small value (an event is usually a few hundred bytes): no allocation
	// of its own per event, record and entry, as TextEncoder's would be.
	return Buffer.from(JSON.stringify(value), "utf8");
}

/** @internal Parses UTF-8 JSON; `undefined` when the bytes are not. */
function parseJson(bytes: Uint8Array): unknown {
	try {
		return JSON.parse(decoder.decode(bytes)) as unknown;
	} catch {
		return undefined;
	}
}

const isObj = (v: unknown): v is Record<string, unknown> =>
	typeof v === "object" && v !== null && !Array.isArray(v);
const isNat = (v: unknown): v is number =>
	typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
const isPos = (v: unknown): v is number => isNat(v) && v >= 1;

function isFields(v: unknown): v is Record<string, FieldValue> {
	if (!isObj(v)) return false;
	for (const x of Object.values(v))
		if (
			typeof x !== "string" &&
			typeof x !== "boolean" &&
			!(typeof x === "number" && Number.isFinite(x))
		)
			return false;
	return true;
}

function asEvent(v: unknown): StoredEvent | undefined {
	if (!isObj(v) || v.v !== 1 || v.k !== "e") return undefined;
	if (!isNat(v.p) || !isPos(v.o) || !isPos(v.ws) || !isPos(v.w) || !isNat(v.t)) return undefined;
	if (typeof v.c !== "string" || (v.a !== undefined && !isFields(v.a))) return undefined;
	if (!Array.isArray(v.s) || !Array.isArray(v.cuds)) return undefined;
	for (const pair of v.s)
		if (!Array.isArray(pair) || pair.length !== 2 || !isNat(pair[0]) || !isPos(pair[1]))
			return undefined;
	for (const c of v.cuds)
		if (
			!isObj(c) ||
			!isPos(c.id) ||
			typeof c.q !== "string" ||
			typeof c.n !== "boolean" ||
			!isFields(c.f) ||
			(c.n ? c.c !== undefined : !isPos(c.c))
		)
			return undefined;
	if (v.f !== undefined && (typeof v.f !== "string" || !/^\d{1,19}$/.test(v.f))) return undefined;
	if (v.i !== undefined && !isIdempotency(v.i)) return undefined;
	return v as unknown as StoredEvent;
}

function isAnswer(r: unknown): r is IdempotentAnswer {
	return (
		isObj(r) &&
		isPos(r.CurrentWLogOffset) &&
		isObj(r.NewIDs) &&
		Object.values(r.NewIDs).every(isPos) &&
		(r.Result === undefined || isObj(r.Result))
	);
}

function isIdempotency(i: unknown): i is StoredIdempotency {
	return isObj(i) && typeof i.k === "string" && typeof i.h === "string" && isAnswer(i.r);
}

/** @internal Decodes an idempotency index value; `undefined` for anything that is not ours. */
export function decodeIdempotencyEntry(bytes: Uint8Array): StoredIdempotencyEntry | undefined {
	const v = parseJson(bytes);
	return isObj(v) && v.v === 1 && isPos(v.o) && typeof v.h === "string" && isAnswer(v.r)
		? (v as unknown as StoredIdempotencyEntry)
		: undefined;
}

/** @internal The epoch an event was written under (0n when unfenced). */
export function epochOf(event: StoredEvent): bigint {
	return event.f === undefined ? 0n : BigInt(event.f);
}

/** @internal A decoded PLog/WLog value. */
export type DecodedLogValue =
	| { readonly kind: "event"; readonly event: StoredEvent }
	| { readonly kind: "marker"; readonly marker: StoredMarker; readonly event: StoredEvent };

/** @internal Decodes a PLog/WLog value; `undefined` for anything that is not ours. */
export function decodeLogValue(bytes: Uint8Array): DecodedLogValue | undefined {
	const v = parseJson(bytes);
	if (!isObj(v)) return undefined;
	if (v.k === "x") {
		if (v.v !== 1 || typeof v.reason !== "string") return undefined;
		const event = asEvent(v.e);
		return event === undefined
			? undefined
			: { kind: "marker", marker: v as unknown as StoredMarker, event };
	}
	const event = asEvent(v);
	return event === undefined ? undefined : { kind: "event", event };
}

/** @internal Decodes a record value; `undefined` for anything that is not ours. */
export function decodeRecordValue(bytes: Uint8Array): StoredRecordValue | undefined {
	const v = parseJson(bytes);
	if (!isObj(v) || v.v !== 1 || typeof v.q !== "string" || !isPos(v.c) || !isPos(v.u))
		return undefined;
	if (v.d !== undefined && v.d !== 1) return undefined;
	return isFields(v.f) ? (v as unknown as StoredRecordValue) : undefined;
}

/** @internal The tombstone of a record an event created, once that event is marked corrupted. */
export function tombstoneOf(event: StoredEvent, cud: StoredCud): StoredRecordValue {
	return { v: 1, q: cud.q, c: event.o, u: event.o, f: {}, d: 1 };
}

/** @internal The sequence values of an event, for the sequencer's actualization. */
export function seqValuesOf(event: StoredEvent): SeqValue[] {
	return event.s.map(([seqId, value]) => ({ wsid: event.ws, seqId, value }));
}

/** @internal A record's value as an event writes it. */
export function recordValue(event: StoredEvent, cud: StoredCud): StoredRecordValue {
	return { v: 1, q: cud.q, c: cud.n ? event.o : (cud.c as number), u: event.o, f: cud.f };
}

/** @internal The marker of an event. */
export function markerOf(event: StoredEvent, reason: string): StoredMarker {
	// Bounded so a marker always fits the value limit (MAX_EVENT_BYTES leaves 2 KiB).
	return {
		v: 1,
		k: "x",
		reason: reason.length > 1024 ? `${reason.slice(0, 1021)}...` : reason,
		e: event,
	};
}

/**
 * A CUD of a logged event, in the shape of the API.
 *
 * @example
 * ```ts
 * const c: LogCud = { "sys.ID": 322685000131072, "sys.QName": "app1pkg.Customer", isNew: true, fields: { name: "Ada" } };
 * ```
 */
export interface LogCud {
	readonly "sys.ID": number;
	readonly "sys.QName": string;
	readonly isNew: boolean;
	/** The record's fields after the event. */
	readonly fields: Readonly<Record<string, FieldValue>>;
}

/**
 * An event as read from the PLog or the WLog.
 *
 * @example
 * ```ts
 * const e: LogEvent = (await partition.readWLog({ wsid: 1001, from: 1 }))[0].event;
 * ```
 */
export interface LogEvent {
	readonly plogOffset: number;
	readonly partitionId: number;
	readonly wsid: number;
	readonly wlogOffset: number;
	/** ms since the epoch, the wall clock of the VVM that wrote it. */
	readonly registeredAt: number;
	readonly command: string;
	readonly args?: Readonly<Record<string, FieldValue>>;
	readonly cuds: readonly LogCud[];
	/**
	 * Set when the event was marked corrupted (a sequences violation at one of its keys): its
	 * effects are not applied, its numbers stay consumed.
	 */
	readonly corrupted?: string;
}

/**
 * One entry of a PLog or WLog read: `offset` is the offset in the log read. `event` is missing
 * when the stored value is not an event this package wrote ("undecodable": a consumed, corrupted
 * offset).
 *
 * @example
 * ```ts
 * for (const { offset, event } of await partition.readPLog({ from: 1, limit: 100 })) console.log(offset, event?.command);
 * ```
 */
export interface LogEntry {
	readonly offset: number;
	readonly event?: LogEvent;
}

/** @internal */
export function toLogEvent(decoded: DecodedLogValue): LogEvent {
	const e = decoded.event;
	return {
		plogOffset: e.o,
		partitionId: e.p,
		wsid: e.ws,
		wlogOffset: e.w,
		registeredAt: e.t,
		command: e.c,
		...(e.a === undefined ? {} : { args: e.a }),
		cuds: e.cuds.map((c) => ({ "sys.ID": c.id, "sys.QName": c.q, isNew: c.n, fields: c.f })),
		...(decoded.kind === "marker" ? { corrupted: decoded.marker.reason } : {}),
	};
}
