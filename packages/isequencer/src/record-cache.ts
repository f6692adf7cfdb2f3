import type { RecordCache } from "./cache-contract.ts";
import type { LruNode } from "./intrusive-lru.ts";
import { IntrusiveLru } from "./intrusive-lru.ts";
import { LruCacheAdapter } from "./lru-cache-adapter.ts";

export type { RecordCache };

/**
 * Which cache keeps the workspaces' records: `"lru-cache"` (the `lru-cache` package, strict LRU;
 * the default) or `"clock"` (the package's own second-chance queue threaded through the records,
 * cheaper per hit). Correctness never depends on which records stay cached.
 *
 * @example
 * ```ts
 * const params: SequencerParams = { seqTypes, cache: "clock" };
 * ```
 */
export type CacheKind = "lru-cache" | "clock";

/** @internal All cache kinds, for validation, tests and the benchmark. */
export const CACHE_KINDS: readonly CacheKind[] = ["lru-cache", "clock"];

/**
 * Default of {@link SequencerParams.cache}.
 *
 * @example
 * ```ts
 * const usesDefault = (params.cache ?? DEFAULT_CACHE) === "lru-cache";
 * ```
 */
export const DEFAULT_CACHE: CacheKind = "lru-cache";

/**
 * @internal Creates the cache of the given kind, holding at most `max` values.
 *
 * @example
 * ```ts
 * const cache = createRecordCache("clock", 100_000, (rec) => rec.wsid, (rec) => keep(rec));
 * ```
 */
export function createRecordCache<V extends LruNode<V>>(
	kind: CacheKind,
	max: number,
	keyOf: (value: V) => number,
	onEvict: (value: V, key: number) => void,
): RecordCache<number, V> {
	return kind === "clock"
		? new IntrusiveLru<number, V>(max, keyOf, onEvict)
		: new LruCacheAdapter<number, V>(max, onEvict);
}
