// Concurrent clients on a few keys doing every operation of the contract, window by window, each
// window on keys and a fence scope of its own: the history of each window is checked on its own,
// which is sound because linearizability is local (Herlihy and Wing): a window's operations
// touch no other window's keys, and a late write of one window (a request delivered after its
// answer was lost) can only land on that window's keys.
import type { BatchItem, ConditionalBatchItem, TTLStorage, WriteFence } from "@vvm/ttlstorage";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import type { CheckOptions, Verdict } from "./checker.ts";
import { checkHistory } from "./checker.ts";
import type { BatchEntry, FenceRef, HistoryOp, OpInput, OpOutput } from "./history.ts";
import type { Rng } from "./rng.ts";
import { createRng } from "./rng.ts";

/**
 * A storage that can tell when a call reached the driver (an in-process fault layer that delays
 * calls): {@link HistoryOp.stamp}. The workload calls `nextCall` right before each operation.
 */
export interface StampingStorage extends TTLStorage {
	nextCall(onReach: () => void): void;
}

/** Options of {@link runLincheck}. */
export interface LincheckOptions extends Omit<CheckOptions, "atomicBatches"> {
	/** `putBatch` all or nothing (`supports.atomicBatches`). */
	readonly atomicBatches: boolean;
	/** Seed of the operations' choices. */
	readonly seed: number;
	/** A prefix of every key (unique per run: the servers keep data between runs). */
	readonly prefix: string;
	/** Concurrent clients; default 4. */
	readonly clients?: number;
	/** Operations per client per window; default 30. */
	readonly opsPerClient?: number;
	/** Windows; default 20. */
	readonly windows?: number;
	/** Use `putBatchIf` (drivers that have it); default: when the storage has it. */
	readonly putBatchIf?: boolean;
	/**
	 * `compareAndDelete` under a fence. Off for `"ordered"` drivers by default: the contract does
	 * not say whether a lower epoch may write a record that a higher one deleted.
	 */
	readonly fencedDeletes?: boolean;
	/**
	 * Fenced conditional writes (lightweight transactions) and fenced plain writes (timestamped)
	 * on different keys: fenced key 0 takes only plain writes, fenced key 1 only conditional ones.
	 * For Cassandra, whose fenced plain writes are ordered by timestamp and not by Paxos: one that
	 * races a lightweight transaction on the same key can land after the transaction's read and
	 * still be ordered before its commit (the driver's README, "Plain writes and lightweight
	 * transactions"); `@vvm/cp` never issues both on one key. Default false: every mix.
	 */
	readonly stampedApartFromConditional?: boolean;
	/** Called before each window (e.g. to start the proxy's faults). */
	readonly beforeWindow?: (window: number) => void | Promise<void>;
	/** Called after each window's operations ended (e.g. to stop the faults). */
	readonly afterWindow?: (window: number) => void | Promise<void>;
}

/** One window's result. */
export interface WindowResult {
	readonly window: number;
	readonly ops: readonly HistoryOp[];
	readonly verdict: Verdict;
}

/** What a run did and found. */
export interface LincheckReport {
	readonly ops: number;
	/** Operations without an answer (modelled as "may happen any time after the call"). */
	readonly unknown: number;
	/** Operations that failed with "nothing written" (left out of the history). */
	readonly notWritten: number;
	/** Errors by code (`foreign` for errors that are no `TTLStorageError`). */
	readonly errors: Readonly<Record<string, number>>;
	readonly windows: readonly WindowResult[];
	/** Windows whose verdict is not `linearizable`. */
	readonly failed: readonly WindowResult[];
	readonly ms: number;
}

/** Keys 0 and 1 of a window carry fenced writes; 2 and 3 unfenced ones. */
const FENCED_KEYS = [0, 1];
const PLAIN_KEYS = [2, 3];
const KEYS = [...FENCED_KEYS, ...PLAIN_KEYS];
const SCOPE = 0;
/** The client id of the reads after each window (`-1` raises the window's first fence). */
const FINAL_READER = -2;

interface Window {
	readonly pKey: Uint8Array;
	readonly cCols: readonly Uint8Array[];
	readonly scope: Uint8Array;
}

/** One client's knowledge: its epoch, the values it saw per key. */
interface Client {
	readonly id: number;
	epoch: number;
	readonly seen: Map<number, string[]>;
	n: number;
}

const decoder = new TextDecoder();

/**
 * Runs the workload on `storage` and checks each window's history.
 *
 * @example
 * ```ts
 * const report = await runLincheck(storage, { fencing: "epoch", atomicBatches: true, seed: 1, prefix: "run1" });
 * expect(report.failed).toEqual([]);
 * ```
 */
export async function runLincheck(
	storage: TTLStorage,
	options: LincheckOptions,
): Promise<LincheckReport> {
	const started = performance.now();
	const rng = createRng(options.seed);
	const clients = options.clients ?? 4;
	const perClient = options.opsPerClient ?? 30;
	const windows = options.windows ?? 20;
	const withBatchIf = (options.putBatchIf ?? true) && storage.putBatchIf !== undefined;
	const fencedDeletes = options.fencedDeletes ?? options.fencing === "epoch";
	const stamping =
		typeof (storage as Partial<StampingStorage>).nextCall === "function"
			? (storage as StampingStorage)
			: undefined;
	const errors: Record<string, number> = {};
	const results: WindowResult[] = [];
	let tick = 0;
	let total = 0;
	let unknown = 0;
	let notWritten = 0;

	for (let w = 0; w < windows; w++) {
		const win: Window = {
			pKey: utf8(`${options.prefix}/w${w}`),
			cCols: KEYS.map((k) => utf8(`k${k}`)),
			scope: utf8(`${options.prefix}/w${w}/fence`),
		};
		const fence = (f: FenceRef): WriteFence => ({ scope: win.scope, epoch: BigInt(f.epoch) });
		const ops: HistoryOp[] = [];
		let nextId = 0;

		/** Calls `input` and records it. */
		const perform = async (client: number, input: OpInput): Promise<OpOutput> => {
			const call = ++tick;
			// Mutable until pushed: a call that reaches the driver late sets its stamp then.
			const at = { stamp: call };
			if (stamping !== undefined)
				stamping.nextCall(() => {
					at.stamp = ++tick;
				});
			let output: OpOutput;
			let dropped = false;
			try {
				output = await invoke(storage, win, fence, input);
			} catch (error) {
				const code = TTLStorageError.is(error) ? error.code : "foreign";
				errors[code] = (errors[code] ?? 0) + 1;
				if (code === "TTLSTORAGE_FENCED") output = { kind: "fenced" };
				else {
					// "nothing was written" is left out, so a write applied anyway shows.
					dropped = code === "TTLSTORAGE_UNAVAILABLE" || code === "TTLSTORAGE_THROTTLED";
					output = { kind: "unknown" };
				}
			}
			const ret = output.kind === "unknown" ? Number.POSITIVE_INFINITY : ++tick;
			if (dropped) {
				notWritten++;
				return output;
			}
			if (output.kind === "unknown") unknown++;
			const op = { id: nextId++, client, input, output, call, ret };
			Object.defineProperty(op, "stamp", { enumerable: true, get: () => at.stamp });
			ops.push(op as HistoryOp);
			return output;
		};

		await options.beforeWindow?.(w);
		// The window's first epoch, raised before the clients start, again until it is answered:
		// every epoch a client writes under is then one a raise answered, so a driver whose first
		// write of an epoch raises the fence itself (Cassandra's stamp ranges) raises nothing new.
		// A reset by the proxy makes a driver refuse calls until it has reconnected (Cassandra's pool:
		// UNAVAILABLE at once, seen in CI 50 times within 1.7 s): retry with a pause, for 30 s.
		for (let attempt = 0; ; attempt++) {
			const raised = await perform(-1, { kind: "raiseFence", scope: SCOPE, epoch: 1 });
			if (raised.kind === "epoch") break;
			if (attempt >= 150)
				throw new Error(`lincheck: window ${w}: raising its fence failed 150 times (30 s)`);
			await new Promise((resolve) => setTimeout(resolve, 200));
		}
		const state: WindowState = { maxEpoch: 1, writing: new Map() };
		const crowd: Client[] = [];
		for (let c = 0; c < clients; c++) crowd.push({ id: c, epoch: 1, seen: new Map(), n: 0 });
		await Promise.all(
			crowd.map(async (client) => {
				const r = rng.fork();
				for (let i = 0; i < perClient; i++) {
					const input = choose(r, client, {
						withBatchIf,
						fencedDeletes,
						stampedApart: options.stampedApartFromConditional ?? false,
						state,
					});
					const writes = writesOf(input);
					for (const { key, value } of writes)
						state.writing.set(key, [...(state.writing.get(key) ?? []), value]);
					const output = await perform(client.id, input);
					for (const { key, value } of writes)
						state.writing.set(
							key,
							(state.writing.get(key) ?? []).filter((v) => v !== value),
						);
					learn(client, input, output, state);
				}
			}),
		);
		await options.afterWindow?.(w);
		// Once every held or late request was delivered (afterWindow), one read of each key of the
		// window, after everything else on the clock: a write answered "nothing was written" that
		// landed anyway, or an acknowledged write that never took effect, shows even when it was
		// the last write of its key (found by review: without these reads such windows passed).
		// A read that fails is tried again (a driver reconnecting after the proxy's resets): an
		// unanswered read proves nothing, so the window would go unchecked at the end.
		for (const key of KEYS)
			for (let attempt = 0; ; attempt++) {
				const read = await perform(FINAL_READER, { kind: "get", key });
				if (read.kind === "value") break;
				if (attempt >= 150)
					throw new Error(
						`lincheck: window ${w}: the final read of k${key} failed 150 times (30 s)`,
					);
				await new Promise((resolve) => setTimeout(resolve, 200));
			}
		total += ops.length;
		const verdict = checkHistory(ops, options);
		results.push({ window: w, ops, verdict });
	}
	return {
		ops: total,
		unknown,
		notWritten,
		errors,
		windows: results,
		failed: results.filter((r) => r.verdict.kind !== "linearizable"),
		ms: Math.round(performance.now() - started),
	};
}

/** Runs one operation on the storage; its answer as the history says it. */
async function invoke(
	storage: TTLStorage,
	win: Window,
	fence: (f: FenceRef) => WriteFence,
	input: OpInput,
): Promise<OpOutput> {
	const cc = (key: number): Uint8Array => win.cCols[key] as Uint8Array;
	const opts = (f: FenceRef | undefined) => (f === undefined ? undefined : { fence: fence(f) });
	const ttl = (value: string): number => (value.length % 2 === 0 ? 0 : 3600);
	const bool = (value: boolean): OpOutput => ({ kind: "bool", value });
	switch (input.kind) {
		case "get": {
			const v = await storage.get(win.pKey, cc(input.key));
			return { kind: "value", value: v === undefined ? null : decoder.decode(v) };
		}
		case "insertIfNotExists":
			return bool(
				await storage.insertIfNotExists(
					win.pKey,
					cc(input.key),
					utf8(input.value),
					ttl(input.value),
					opts(input.fence),
				),
			);
		case "compareAndSwap":
			return bool(
				await storage.compareAndSwap(
					win.pKey,
					cc(input.key),
					utf8(input.old),
					utf8(input.value),
					ttl(input.value),
					opts(input.fence),
				),
			);
		case "compareAndDelete":
			return bool(
				await storage.compareAndDelete(
					win.pKey,
					cc(input.key),
					utf8(input.expected),
					opts(input.fence),
				),
			);
		case "put":
			await storage.put(
				win.pKey,
				cc(input.key),
				utf8(input.value),
				ttl(input.value),
				opts(input.fence),
			);
			return { kind: "ok" };
		case "putBatch": {
			const items: BatchItem[] = input.items.map((it) => ({
				pKey: win.pKey,
				cCols: cc(it.key),
				value: utf8(it.value),
				ttlSeconds: ttl(it.value),
				...(it.fence === undefined ? {} : { fence: fence(it.fence) }),
			}));
			await storage.putBatch(items);
			return { kind: "ok" };
		}
		case "putBatchIf": {
			const items: ConditionalBatchItem[] = input.items.map((it) => ({
				pKey: win.pKey,
				cCols: cc(it.key),
				value: utf8(it.value),
				ttlSeconds: ttl(it.value),
				...(it.fence === undefined ? {} : { fence: fence(it.fence) }),
				...(it.expected === undefined
					? {}
					: { expected: it.expected === null ? null : utf8(it.expected) }),
			}));
			return bool(await (storage.putBatchIf as NonNullable<TTLStorage["putBatchIf"]>)(items));
		}
		case "raiseFence": {
			const raised = await (storage.raiseFence as NonNullable<TTLStorage["raiseFence"]>)(
				win.scope,
				input.epoch === undefined ? undefined : BigInt(input.epoch),
			);
			return { kind: "epoch", value: Number(raised) };
		}
	}
}

/** What the clients of a window share: the highest epoch, and the writes in flight. */
interface WindowState {
	maxEpoch: number;
	/** Values being written now, by key (called, not answered): what a link may require. */
	readonly writing: Map<number, string[]>;
}

interface Choice {
	readonly withBatchIf: boolean;
	readonly fencedDeletes: boolean;
	readonly stampedApart: boolean;
	readonly state: WindowState;
}

/** The keys and values an operation writes. */
function writesOf(input: OpInput): Array<{ key: number; value: string }> {
	switch (input.kind) {
		case "insertIfNotExists":
		case "compareAndSwap":
		case "put":
			return [{ key: input.key, value: input.value }];
		case "putBatch":
		case "putBatchIf":
			return input.items.map((it) => ({ key: it.key, value: it.value }));
		default:
			return [];
	}
}

/**
 * The next operation of `client`: every kind, on the window's keys, values unique per write (but
 * for links, which write again a value being written).
 */
function choose(r: Rng, client: Client, choice: Choice): OpInput {
	const fresh = (): string => `c${client.id}.${client.n++}`;
	const fenceFor = (key: number): FenceRef | undefined =>
		FENCED_KEYS.includes(key) ? { scope: SCOPE, epoch: client.epoch } : undefined;
	const withFence = <T extends object>(base: T, key: number): T & { fence?: FenceRef } => {
		const f = fenceFor(key);
		return f === undefined ? base : { ...base, fence: f };
	};
	/** A value the client saw at `key` (mostly the latest), or an invented one. */
	const expect = (key: number): string => {
		const seen = client.seen.get(key) ?? [];
		if (seen.length === 0 || r.chance(0.05)) return `c${client.id}.none`;
		return r.chance(0.8) ? (seen[seen.length - 1] as string) : (seen[r.int(seen.length)] as string);
	};
	const picked = r.pick(KEYS);
	// With stampedApart: conditional writes of a fenced key go to key 1, plain ones to key 0.
	const conditionalKey = choice.stampedApart && picked === 0 ? 1 : picked;
	const plainKey = choice.stampedApart && picked === 1 ? 0 : picked;
	const batchKeys = choice.stampedApart ? [0, ...PLAIN_KEYS] : KEYS;
	const roll = r.next();
	if (roll < 0.24) return { kind: "get", key: picked };
	const key = conditionalKey;
	if (roll < 0.34) return withFence({ kind: "insertIfNotExists", key, value: fresh() }, key);
	if (roll < 0.54) {
		return withFence({ kind: "compareAndSwap", key, old: expect(key), value: fresh() }, key);
	}
	if (roll < 0.6) {
		const k = choice.fencedDeletes ? key : r.pick(PLAIN_KEYS);
		return withFence({ kind: "compareAndDelete", key: k, expected: expect(k) }, k);
	}
	if (roll < 0.72) return withFence({ kind: "put", key: plainKey, value: fresh() }, plainKey);
	if (roll < 0.94) {
		const keys = r.shuffle(choice.withBatchIf && roll >= 0.83 ? KEYS : batchKeys).slice(0, 2);
		if (choice.withBatchIf && roll >= 0.83) {
			// A link, as a pipelined PLog write requires its predecessor's entry: one item requires
			// exactly the value another client is writing at its key now, and writes it again (the
			// pg driver then rides it in that write's group statement).
			const linkable = keys.filter((k) => (choice.state.writing.get(k) ?? []).length > 0);
			if (linkable.length > 0 && r.chance(0.5)) {
				const k = r.pick(linkable);
				const values = choice.state.writing.get(k) as string[];
				const value = values[values.length - 1] as string;
				const other = keys.find((x) => x !== k) ?? r.pick(KEYS.filter((x) => x !== k));
				const c = r.next();
				const expected = c < 0.3 ? null : c < 0.8 ? expect(other) : undefined;
				return {
					kind: "putBatchIf",
					items: [
						withFence({ key: k, value, expected: value }, k),
						withFence(
							{ key: other, value: fresh(), ...(expected === undefined ? {} : { expected }) },
							other,
						),
					],
				};
			}
			const items: BatchEntry[] = keys.map((k) => {
				const c = r.next();
				const expected = c < 0.3 ? null : c < 0.8 ? expect(k) : undefined;
				return withFence(
					{ key: k, value: fresh(), ...(expected === undefined ? {} : { expected }) },
					k,
				);
			});
			return { kind: "putBatchIf", items };
		}
		return { kind: "putBatch", items: keys.map((k) => withFence({ key: k, value: fresh() }, k)) };
	}
	// A new holder: one above the highest epoch known, or one above the stored one.
	if (r.chance(0.5)) return { kind: "raiseFence", scope: SCOPE };
	return {
		kind: "raiseFence",
		scope: SCOPE,
		epoch: choice.state.maxEpoch + (r.chance(0.7) ? 1 : 0),
	};
}

/** What the client learns from an answer: values it saw or wrote, the epoch it now holds. */
function learn(client: Client, input: OpInput, output: OpOutput, state: WindowState): void {
	const saw = (key: number, value: string | null): void => {
		if (value === null) return;
		const list = client.seen.get(key) ?? [];
		list.push(value);
		if (list.length > 6) list.shift();
		client.seen.set(key, list);
	};
	if (input.kind === "get" && output.kind === "value") saw(input.key, output.value);
	if (output.kind === "bool" && output.value) {
		if (input.kind === "insertIfNotExists" || input.kind === "compareAndSwap")
			saw(input.key, input.value);
		if (input.kind === "putBatchIf") for (const it of input.items) saw(it.key, it.value);
	}
	if (output.kind === "ok") {
		if (input.kind === "put") saw(input.key, input.value);
		if (input.kind === "putBatch") for (const it of input.items) saw(it.key, it.value);
	}
	if (input.kind === "raiseFence" && output.kind === "epoch") {
		client.epoch = output.value;
		state.maxEpoch = Math.max(state.maxEpoch, output.value);
	}
	// A deposed writer sometimes comes back as the newest holder (as a partition's new grant).
	if (output.kind === "fenced" && input.kind !== "raiseFence" && client.id % 2 === 0)
		client.epoch = state.maxEpoch;
}
