import type { CacheKind } from "./record-cache.ts";
import { CACHE_KINDS, DEFAULT_CACHE } from "./record-cache.ts";
import type { SeqID, SeqNumber, WSKind } from "./types.ts";

/** Default of {@link SequencerParams.maxNumUnflushedValues}. */
export const DEFAULT_MAX_NUM_UNFLUSHED_VALUES = 500;
/** Default of {@link SequencerParams.lruCacheSize} (workspaces). */
export const DEFAULT_LRU_CACHE_SIZE = 100_000;
/** Default of {@link SequencerParams.batcherDelayMs}. */
export const DEFAULT_BATCHER_DELAY_MS = 5;

/** Sequence types: per workspace kind, the sequences and their initial values (each `>= 1`). */
export type SeqTypes =
	| ReadonlyMap<WSKind, ReadonlyMap<SeqID, SeqNumber>>
	| Readonly<Record<number, Readonly<Record<number, SeqNumber>>>>;

/**
 * Parameters of {@link createSequencer}.
 *
 * @see voedger pkg/isequencer Params
 * @example
 * ```ts
 * const params: SequencerParams = { seqTypes: { 1: { 1: 1, 2: 200_001 } } };
 * ```
 */
export interface SequencerParams {
	/**
	 * Sequences and their initial values per workspace kind. Only these are managed (others give
	 * `SEQUENCER_UNKNOWN_SEQ_ID`). At most 31 distinct sequence IDs over all kinds.
	 */
	readonly seqTypes: SeqTypes;
	/** `start` is not ok while more values than this wait to be flushed. Default 500. */
	readonly maxNumUnflushedValues?: number;
	/** Workspaces (each with all its numbers) kept in the LRU cache. Default 100 000. */
	readonly lruCacheSize?: number;
	/**
	 * The cache implementation: `"lru-cache"` (default; strict LRU by the `lru-cache` package) or
	 * `"clock"` (second-chance eviction in the package's own queue; cheaper per hit, see the README).
	 */
	readonly cache?: CacheKind;
	/** How long the actualizer waits between checks while too many values are unflushed. Default 5 ms. */
	readonly batcherDelayMs?: number;
}

/** @internal One workspace kind, compiled. */
export interface KindInfo {
	readonly kind: WSKind;
	/** Bitmask of the slots of this kind's sequences. */
	readonly mask: number;
	readonly seqIds: readonly SeqID[];
	readonly slots: readonly number[];
	/** Initial value per slot (NaN for slots not of this kind). */
	readonly initial: readonly number[];
}

/** @internal Params after validation. */
export interface CompiledParams {
	readonly kinds: Map<WSKind, KindInfo>;
	/** slot of each sequence ID, -1 when unknown. */
	readonly slotOf: Int8Array;
	/** sequence ID of each slot. */
	readonly seqIdOfSlot: readonly SeqID[];
	readonly numSlots: number;
	readonly maxNumUnflushedValues: number;
	readonly lruCacheSize: number;
	readonly cache: CacheKind;
	readonly batcherDelayMs: number;
}

function entriesOf<V>(
	m: ReadonlyMap<number, V> | Readonly<Record<number, V>>,
	what: string,
): Array<[number, V]> {
	const raw: Array<[number | string, V]> =
		m instanceof Map ? [...(m as ReadonlyMap<number, V>)] : Object.entries(m);
	return raw.map(([k, v]) => {
		const n = typeof k === "number" ? k : Number(k);
		if (!Number.isInteger(n) || n < 0 || n > 0xffff)
			throw new RangeError(`[@vvm/isequencer] ${what} must be an integer in 0..65535, got ${k}`);
		return [n, v];
	});
}

function positiveInt(value: number | undefined, dflt: number, name: string, min: number): number {
	const v = value ?? dflt;
	if (!Number.isSafeInteger(v) || v < min)
		throw new RangeError(`[@vvm/isequencer] ${name} must be an integer >= ${min}, got ${v}`);
	return v;
}

function cacheKind(value: CacheKind | undefined): CacheKind {
	if (value === undefined) return DEFAULT_CACHE;
	if (!CACHE_KINDS.includes(value))
		throw new RangeError(
			`[@vvm/isequencer] cache must be one of ${CACHE_KINDS.map((k) => `"${k}"`).join(", ")}, got ${String(value)}`,
		);
	return value;
}

/** @internal Validates params (RangeError/TypeError on mistakes) and compiles the lookup tables. */
export function compileParams(params: SequencerParams): CompiledParams {
	if (typeof params !== "object" || params === null || typeof params.seqTypes !== "object")
		throw new TypeError("[@vvm/isequencer] params.seqTypes is required");
	const kindEntries = entriesOf<
		ReadonlyMap<SeqID, SeqNumber> | Readonly<Record<number, SeqNumber>>
	>(params.seqTypes, "wsKind");
	if (kindEntries.length === 0) throw new RangeError("[@vvm/isequencer] seqTypes is empty");
	const slotIds: number[] = [];
	const slotOf = new Int8Array(0x10000).fill(-1);
	const perKind: Array<[number, Array<[number, number]>]> = [];
	for (const [kind, seqs] of kindEntries) {
		if (typeof seqs !== "object" || seqs === null)
			throw new TypeError(`[@vvm/isequencer] seqTypes[${kind}] must be a map of initial values`);
		const list = entriesOf(seqs, "seqId");
		for (const [seqId, initial] of list) {
			if (!Number.isSafeInteger(initial) || initial < 1)
				throw new RangeError(
					`[@vvm/isequencer] initial numbers can not be < 1: seqTypes[${kind}][${seqId}] = ${initial}`,
				);
			if (slotOf[seqId] === -1) {
				if (slotIds.length >= 31)
					throw new RangeError("[@vvm/isequencer] at most 31 distinct sequence IDs are supported");
				slotOf[seqId] = slotIds.length;
				slotIds.push(seqId);
			}
		}
		perKind.push([kind, list]);
	}
	const kinds = new Map<WSKind, KindInfo>();
	for (const [kind, list] of perKind) {
		const initial = new Array<number>(slotIds.length).fill(Number.NaN);
		let mask = 0;
		const slots: number[] = [];
		for (const [seqId, init] of list) {
			const slot = slotOf[seqId] as number;
			mask |= 1 << slot;
			slots.push(slot);
			initial[slot] = init;
		}
		kinds.set(kind, {
			kind,
			mask,
			seqIds: list.map(([s]) => s),
			slots,
			initial,
		});
	}
	return {
		kinds,
		slotOf,
		seqIdOfSlot: slotIds,
		numSlots: slotIds.length,
		maxNumUnflushedValues: positiveInt(
			params.maxNumUnflushedValues,
			DEFAULT_MAX_NUM_UNFLUSHED_VALUES,
			"maxNumUnflushedValues",
			1,
		),
		lruCacheSize: positiveInt(params.lruCacheSize, DEFAULT_LRU_CACHE_SIZE, "lruCacheSize", 1),
		cache: cacheKind(params.cache),
		batcherDelayMs: positiveInt(
			params.batcherDelayMs,
			DEFAULT_BATCHER_DELAY_MS,
			"batcherDelayMs",
			0,
		),
	};
}
