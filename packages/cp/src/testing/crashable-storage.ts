import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	WriteOptions,
} from "@vvm/ttlstorage";
import { TTLStorageError } from "@vvm/ttlstorage";
import type { StorageOperation } from "@vvm/ttlstorage/testing";

/** A storage operation as the crash rules see it. */
export interface CrashCall {
	readonly operation: StorageOperation;
	/** The keys it touches (one, or a batch's). */
	readonly keys: ReadonlyArray<{ readonly pKey: Bytes; readonly cCols?: Bytes }>;
}

/**
 * One process's view of a storage that can "crash": after {@link CrashableStorage.crash} every
 * call of this view rejects (`TTLSTORAGE_CLOSED`, "crashed") and nothing more reaches the storage,
 * as if the process had died; calls already at the storage complete there. A new process gets a
 * new view over the same storage.
 *
 * @example
 * ```ts
 * const process1 = createCrashableStorage(storage);
 * process1.crashOn((c) => c.operation === "insertIfNotExists", { landed: true });
 * ```
 */
export interface CrashableStorage {
	readonly storage: TTLStorage;
	readonly crashed: boolean;
	/** Crashes now. */
	crash(): void;
	/**
	 * Crashes at the first call `match` accepts: with `landed`, after the storage applied it (the
	 * reply is lost); otherwise before it reaches the storage. The call rejects either way.
	 */
	crashOn(match: (call: CrashCall) => boolean, options: { readonly landed: boolean }): void;
	/** Calls seen so far (before the crash). */
	readonly calls: readonly CrashCall[];
}

function crashedError(operation: string): TTLStorageError {
	return new TTLStorageError("TTLSTORAGE_CLOSED", "the process crashed", {
		driver: "crash",
		operation,
	});
}

/**
 * Wraps a storage in a view one "process" uses, which {@link CrashableStorage.crash} cuts off.
 *
 * @example
 * ```ts
 * const view = createCrashableStorage(storage);
 * const cp = createCommandProcessor({ storage: view.storage, appId, partitions: 4 });
 * view.crash(); // the process is gone; deploy a new one on `storage`
 * ```
 */
export function createCrashableStorage(storage: TTLStorage): CrashableStorage {
	let crashed = false;
	let rule: { match: (c: CrashCall) => boolean; landed: boolean } | undefined;
	const calls: CrashCall[] = [];

	async function run<T>(call: CrashCall, through: () => Promise<T>): Promise<T> {
		if (crashed) throw crashedError(call.operation);
		calls.push(call);
		const r = rule;
		if (r?.match(call)) {
			const { landed } = r;
			rule = undefined;
			if (landed) await through().catch(() => undefined);
			crashed = true;
			throw crashedError(call.operation);
		}
		return through();
	}

	const one = (pKey: Bytes, cCols: Bytes) => [{ pKey, cCols }];
	const raise = storage.raiseFence?.bind(storage);
	const batchIf = storage.putBatchIf?.bind(storage);
	const view: TTLStorage = {
		...(storage.supports === undefined ? {} : { supports: storage.supports }),
		...(raise === undefined
			? {}
			: {
					raiseFence: (scope: Bytes, epoch?: bigint) =>
						run({ operation: "raiseFence", keys: [{ pKey: scope }] }, () => raise(scope, epoch)),
				}),
		insertIfNotExists: (p, c, v, ttl, o?: WriteOptions) =>
			run({ operation: "insertIfNotExists", keys: one(p, c) }, () =>
				storage.insertIfNotExists(p, c, v, ttl, o),
			),
		compareAndSwap: (p, c, old, n, ttl, o?: WriteOptions) =>
			run({ operation: "compareAndSwap", keys: one(p, c) }, () =>
				storage.compareAndSwap(p, c, old, n, ttl, o),
			),
		compareAndDelete: (p, c, v, o?: WriteOptions) =>
			run({ operation: "compareAndDelete", keys: one(p, c) }, () =>
				storage.compareAndDelete(p, c, v, o),
			),
		get: (p, c) => run({ operation: "get", keys: one(p, c) }, () => storage.get(p, c)),
		put: (p, c, v, ttl, o?: WriteOptions) =>
			run({ operation: "put", keys: one(p, c) }, () => storage.put(p, c, v, ttl, o)),
		...(batchIf === undefined
			? {}
			: {
					putBatchIf: (items: readonly ConditionalBatchItem[]) =>
						run(
							{
								operation: "putBatchIf",
								keys: items.map((i) => ({ pKey: i.pKey, cCols: i.cCols })),
							},
							() => batchIf(items),
						),
				}),
		putBatch: (items: readonly BatchItem[]) =>
			run(
				{ operation: "putBatch", keys: items.map((i) => ({ pKey: i.pKey, cCols: i.cCols })) },
				() => storage.putBatch(items),
			),
		read(p: Bytes, range?: ReadRange): AsyncIterable<StoredRecord> {
			return {
				async *[Symbol.asyncIterator]() {
					const all = await run({ operation: "read", keys: [{ pKey: p }] }, async () => {
						const out: StoredRecord[] = [];
						for await (const r of storage.read(p, range)) out.push(r);
						return out;
					});
					for (const r of all) {
						if (crashed) throw crashedError("read");
						yield r;
					}
				},
			};
		},
		queryTTL: (p, c) =>
			run({ operation: "queryTTL", keys: one(p, c) }, () => storage.queryTTL(p, c)),
		// The storage outlives the process.
		close: async () => {},
		[Symbol.asyncDispose]: async () => {},
	};
	return {
		storage: view,
		get crashed() {
			return crashed;
		},
		crash() {
			crashed = true;
		},
		crashOn(match, options) {
			rule = { match, landed: options.landed };
		},
		calls,
	};
}
