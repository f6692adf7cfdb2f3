import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { TTLStorageErrorCode } from "../errors.ts";
import { TTLStorageError } from "../errors.ts";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	WriteOptions,
} from "../ttl-storage.ts";

/** Operations of a {@link TTLStorage} that faults can target. */
export type StorageOperation =
	| "raiseFence"
	| "insertIfNotExists"
	| "compareAndSwap"
	| "compareAndDelete"
	| "get"
	| "put"
	| "putBatch"
	| "putBatchIf"
	| "read"
	| "queryTTL";

/** One call seen by the fault wrapper. */
export interface FaultCall {
	readonly operation: StorageOperation;
	readonly args: readonly unknown[];
	/** 1-based count of calls to this operation so far, this one included. */
	readonly callNumber: number;
}

/** What to do with a matching call. */
export type FaultAction =
	/** Reject before reaching the storage: nothing is written. */
	| { readonly kind: "fail"; readonly code: TTLStorageErrorCode }
	/** Reach the storage (or not, per `applied`), then reject with `TTLSTORAGE_OUTCOME_UNKNOWN`. */
	| { readonly kind: "unknown-outcome"; readonly applied: boolean }
	/** Wait `ms` on the wrapper's clock, then call through. */
	| { readonly kind: "delay"; readonly ms: number }
	/** Run `run` (may be async, may throw to fail the call), then call through. */
	| { readonly kind: "hook"; readonly run: (call: FaultCall) => void | Promise<void> };

/** A fault: which calls it matches, what it does, how many times. */
export interface FaultRule {
	/** Operation(s) to match, or `"*"` for all. */
	readonly on: StorageOperation | readonly StorageOperation[] | "*";
	/** Further filter on the call. */
	readonly match?: (call: FaultCall) => boolean;
	readonly action: FaultAction;
	/** How many matching calls it applies to; default unlimited. */
	readonly times?: number;
}

/** Builders for {@link FaultAction}s. */
export const faults: {
	fail(code?: TTLStorageErrorCode): FaultAction;
	unknownOutcome(applied: boolean): FaultAction;
	delay(ms: number): FaultAction;
	hook(run: (call: FaultCall) => void | Promise<void>): FaultAction;
} = {
	fail: (code = "TTLSTORAGE_UNAVAILABLE") => ({ kind: "fail", code }),
	unknownOutcome: (applied) => ({ kind: "unknown-outcome", applied }),
	delay: (ms) => ({ kind: "delay", ms }),
	hook: (run) => ({ kind: "hook", run }),
};

/** A storage with faults injected on chosen operations. */
export interface FaultyTTLStorage extends TTLStorage {
	/** Adds a rule; the returned function removes it. Rules are checked in order; the first match acts. */
	inject(rule: FaultRule): () => void;
	/** Removes every rule. */
	clear(): void;
	/** Every call made through the wrapper, in order. */
	readonly calls: readonly FaultCall[];
	/** Number of calls to `operation` so far. */
	count(operation: StorageOperation): number;
}

/** Options of {@link withFaults}. */
export interface WithFaultsOptions {
	/** Clock for `delay` faults; default the system clock. */
	readonly clock?: Clock;
	/** Initial rules. */
	readonly rules?: readonly FaultRule[];
}

interface LiveRule {
	rule: FaultRule;
	left: number;
}

/**
 * Wraps a storage so tests can inject failures, unknown outcomes, latency and hooks on chosen
 * operations. Writes that fail with `"fail"` never reach the storage.
 *
 * @example
 * ```ts
 * const storage = withFaults(createMemTTLStorage({ clock }), { clock });
 * storage.inject({ on: "compareAndSwap", action: faults.fail(), times: 2 });
 * ```
 */
export function withFaults(storage: TTLStorage, options: WithFaultsOptions = {}): FaultyTTLStorage {
	const clock = options.clock ?? systemClock;
	let rules: LiveRule[] = (options.rules ?? []).map((rule) => ({
		rule,
		left: rule.times ?? Number.POSITIVE_INFINITY,
	}));
	const calls: FaultCall[] = [];
	const counts = new Map<StorageOperation, number>();

	const matches = (rule: FaultRule, call: FaultCall): boolean =>
		(rule.on === "*" ||
			rule.on === call.operation ||
			(Array.isArray(rule.on) && rule.on.includes(call.operation))) &&
		(rule.match === undefined || rule.match(call));

	async function run<T>(
		operation: StorageOperation,
		args: readonly unknown[],
		through: () => Promise<T>,
	): Promise<T> {
		const callNumber = (counts.get(operation) ?? 0) + 1;
		counts.set(operation, callNumber);
		const call: FaultCall = { operation, args, callNumber };
		calls.push(call);
		const live = rules.find((r) => r.left > 0 && matches(r.rule, call));
		if (live === undefined) return through();
		live.left--;
		const action = live.rule.action;
		switch (action.kind) {
			case "fail":
				throw new TTLStorageError(action.code, "injected fault", { driver: "faults", operation });
			case "unknown-outcome":
				if (action.applied) await through();
				throw new TTLStorageError(
					"TTLSTORAGE_OUTCOME_UNKNOWN",
					`injected unknown outcome (applied: ${action.applied})`,
					{
						driver: "faults",
						operation,
					},
				);
			case "delay":
				await clock.sleep(action.ms);
				return through();
			case "hook":
				await action.run(call);
				return through();
		}
	}

	// Fences pass through (`options`, `raiseFence`, `supports`): faults never switch them off.
	const wrapper: FaultyTTLStorage = {
		...(storage.supports === undefined ? {} : { supports: storage.supports }),
		...(storage.raiseFence === undefined
			? {}
			: {
					raiseFence: (scope: Bytes, epoch?: bigint) =>
						run("raiseFence", [scope, epoch], () =>
							(storage.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(scope, epoch),
						),
				}),
		insertIfNotExists: (p: Bytes, c: Bytes, v: Bytes, ttl: number, o?: WriteOptions) =>
			run("insertIfNotExists", [p, c, v, ttl, o], () => storage.insertIfNotExists(p, c, v, ttl, o)),
		compareAndSwap: (p: Bytes, c: Bytes, old: Bytes, n: Bytes, ttl: number, o?: WriteOptions) =>
			run("compareAndSwap", [p, c, old, n, ttl, o], () =>
				storage.compareAndSwap(p, c, old, n, ttl, o),
			),
		compareAndDelete: (p: Bytes, c: Bytes, v: Bytes, o?: WriteOptions) =>
			run("compareAndDelete", [p, c, v, o], () => storage.compareAndDelete(p, c, v, o)),
		get: (p: Bytes, c: Bytes) => run("get", [p, c], () => storage.get(p, c)),
		put: (p: Bytes, c: Bytes, v: Bytes, ttl?: number, o?: WriteOptions) =>
			run("put", [p, c, v, ttl, o], () => storage.put(p, c, v, ttl, o)),
		putBatch: (items: readonly BatchItem[]) =>
			run("putBatch", [items], () => storage.putBatch(items)),
		...(storage.putBatchIf === undefined
			? {}
			: {
					putBatchIf: (items: readonly ConditionalBatchItem[]) =>
						run("putBatchIf", [items], () =>
							(storage.putBatchIf as NonNullable<TTLStorage["putBatchIf"]>)(items),
						),
				}),
		read(p: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
			return {
				async *[Symbol.asyncIterator]() {
					const records = await run("read", [p, range], async () => {
						const all: StoredRecord[] = [];
						for await (const r of storage.read(p, range)) all.push(r);
						return all;
					});
					yield* records;
				},
			};
		},
		queryTTL: (p: Bytes, c: Bytes) => run("queryTTL", [p, c], () => storage.queryTTL(p, c)),
		close: () => storage.close(),
		[Symbol.asyncDispose]: () => storage.close(),
		inject(rule: FaultRule): () => void {
			const live = { rule, left: rule.times ?? Number.POSITIVE_INFINITY };
			rules.push(live);
			return () => {
				rules = rules.filter((r) => r !== live);
			};
		},
		clear(): void {
			rules = [];
		},
		calls,
		count: (operation) => counts.get(operation) ?? 0,
	};
	return wrapper;
}
