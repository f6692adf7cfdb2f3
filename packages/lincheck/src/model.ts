// The sequential model of the TTLStorage contract on the keys of one window: a map key -> value,
// and the fence of each scope. Records never expire within a run (the workload writes with no TTL
// or an hour), so expiry plays no part.
import type { FenceRef, HistoryOp, OpInput, OpOutput } from "./history.ts";

/** How the driver under test honours fences (`supports.fencing`; see `TTLStorageSupports`). */
export type FencingMode = "epoch" | "ordered";

/** What the model needs to know of the driver (its `supports`). */
export interface ModelOptions {
	readonly fencing: FencingMode;
	/** `putBatch` all or nothing (`supports.atomicBatches`); otherwise each item is its own write. */
	readonly atomicBatches: boolean;
}

/** One live record: its value and, for `"ordered"` fencing, the (epoch, stamp) it was written under. */
interface Rec {
	readonly v: string;
	/** -1: unfenced. */
	readonly e: number;
	readonly s: number;
}

/** The model's state: records by key number, fences by scope number. Immutable. */
export interface ModelState {
	readonly recs: readonly (Rec | undefined)[];
	readonly fences: readonly number[];
}

/** The state before any operation of a window. */
export function initialState(): ModelState {
	return { recs: [], fences: [] };
}

/** A canonical string of `state` (the checker's cache key). */
export function stateKey(state: ModelState): string {
	const recs = state.recs.map((r) => (r === undefined ? "-" : `${r.v}@${r.e}.${r.s}`));
	return `${recs.join("|")}#${state.fences.join(",")}`;
}

const fenceOf = (state: ModelState, scope: number): number => state.fences[scope] ?? 0;

function withRec(state: ModelState, key: number, rec: Rec | undefined): ModelState {
	const recs = state.recs.slice();
	recs[key] = rec;
	return { recs, fences: state.fences };
}

/** The result of one operation in the model: what it answers, and the state after it. */
export interface Step {
	readonly out: OpOutput;
	readonly next: ModelState;
}

/**
 * Runs `input` on `state`, as the contract says a driver with `options` must.
 *
 * - `"epoch"`: a fenced write under an epoch below its scope's fence answers `fenced` and writes
 *   nothing (a batch: one superseded item refuses the whole batch), checked before any condition.
 * - `"ordered"`: a fenced write never replaces a live record written under a higher epoch (F1).
 *   Refusing with `fenced` is allowed as well when the epoch is below the scope's fence (see
 *   {@link accepts}).
 * - both: of two fenced writes of one record under one epoch, the one called later wins, even
 *   if the earlier one lands later (F2; `stamp` is the call's place). A write superseded so is
 *   dropped: an unconditional one answers `ok`, a conditional one `false`.
 */
export function apply(
	state: ModelState,
	input: OpInput,
	stamp: number,
	options: ModelOptions,
): Step {
	const epochMode = options.fencing === "epoch";
	const fenced = (f: FenceRef | undefined): boolean =>
		epochMode && f !== undefined && f.epoch < fenceOf(state, f.scope);
	const order = (f: FenceRef | undefined): Rec["e"] => (f === undefined ? -1 : f.epoch);
	/**
	 * The live record at `key` was written under a newer (epoch, stamp) than a write under `f`
	 * called at `stamp`: F1 under "ordered" fencing, F2 (of one epoch, the later call wins) under
	 * both. Under "epoch" fencing a lower epoch is refused first, so only F2 is left here.
	 */
	const shadowed = (key: number, f: FenceRef | undefined, s: number): boolean => {
		if (f === undefined) return false;
		const r = state.recs[key];
		return r !== undefined && r.e >= 0 && (r.e > f.epoch || (r.e === f.epoch && r.s > s));
	};
	const rec = (value: string, f: FenceRef | undefined, s: number): Rec => ({
		v: value,
		e: order(f),
		s,
	});
	const ok: OpOutput = { kind: "ok" };
	const bool = (value: boolean): OpOutput => ({ kind: "bool", value });
	const refused: Step = { out: { kind: "fenced" }, next: state };

	switch (input.kind) {
		case "get": {
			const r = state.recs[input.key];
			return { out: { kind: "value", value: r === undefined ? null : r.v }, next: state };
		}
		case "insertIfNotExists": {
			if (fenced(input.fence)) return refused;
			if (state.recs[input.key] !== undefined) return { out: bool(false), next: state };
			return {
				out: bool(true),
				next: withRec(state, input.key, rec(input.value, input.fence, stamp)),
			};
		}
		case "compareAndSwap": {
			if (fenced(input.fence)) return refused;
			const r = state.recs[input.key];
			if (r === undefined || r.v !== input.old || shadowed(input.key, input.fence, stamp))
				return { out: bool(false), next: state };
			return {
				out: bool(true),
				next: withRec(state, input.key, rec(input.value, input.fence, stamp)),
			};
		}
		case "compareAndDelete": {
			if (fenced(input.fence)) return refused;
			const r = state.recs[input.key];
			if (r === undefined || r.v !== input.expected || shadowed(input.key, input.fence, stamp))
				return { out: bool(false), next: state };
			return { out: bool(true), next: withRec(state, input.key, undefined) };
		}
		case "put": {
			if (fenced(input.fence)) return refused;
			if (shadowed(input.key, input.fence, stamp)) return { out: ok, next: state };
			return { out: ok, next: withRec(state, input.key, rec(input.value, input.fence, stamp)) };
		}
		case "putBatch": {
			if (input.items.some((it) => fenced(it.fence))) return refused;
			let next = state;
			input.items.forEach((it, i) => {
				const s = stamp + i / 1000;
				if (shadowed(it.key, it.fence, s)) return;
				next = withRec(next, it.key, rec(it.value, it.fence, s));
			});
			return { out: ok, next };
		}
		case "putBatchIf": {
			if (input.items.some((it) => fenced(it.fence))) return refused;
			for (const it of input.items) {
				if (it.expected === undefined) continue;
				const r = state.recs[it.key];
				if (it.expected === null ? r !== undefined : r === undefined || r.v !== it.expected)
					return { out: bool(false), next: state };
			}
			let next = state;
			for (const it of input.items) next = withRec(next, it.key, rec(it.value, it.fence, stamp));
			return { out: bool(true), next };
		}
		case "raiseFence": {
			const current = fenceOf(state, input.scope);
			if (input.epoch !== undefined && input.epoch < current) return refused;
			const epoch = input.epoch ?? current + 1;
			const fences = state.fences.slice();
			fences[input.scope] = epoch;
			return { out: { kind: "epoch", value: epoch }, next: { recs: state.recs, fences } };
		}
	}
}

/** Whether the driver's answer `got` is the model's `want` (any answer fits an unknown one). */
function sameOutput(want: OpOutput, got: OpOutput): boolean {
	if (got.kind === "unknown") return true;
	if (want.kind !== got.kind) return false;
	if (want.kind === "ok" || want.kind === "fenced") return true;
	return (want as { value: unknown }).value === (got as { value: unknown }).value;
}

/**
 * Whether `op` may take effect on `state` with the answer it got; the state after it, or
 * `undefined`. Under `"ordered"` fencing a fenced write may also be refused with `fenced` (nothing
 * written) when its epoch is below its scope's fence at that point.
 */
export function accepts(
	state: ModelState,
	op: HistoryOp,
	options: ModelOptions,
): ModelState | undefined {
	const step = apply(state, op.input, op.stamp, options);
	if (sameOutput(step.out, op.output)) return step.next;
	if (options.fencing === "ordered" && op.output.kind === "fenced" && op.input.kind !== "get") {
		const fences: FenceRef[] = [];
		const input = op.input;
		if (input.kind === "putBatch" || input.kind === "putBatchIf") {
			for (const it of input.items) if (it.fence !== undefined) fences.push(it.fence);
		} else if (input.kind !== "raiseFence" && input.fence !== undefined) fences.push(input.fence);
		if (fences.some((f) => f.epoch < fenceOf(state, f.scope))) return state;
	}
	return undefined;
}

/** See {@link expandBatches}. */
export const ITEM_ID_STEP = 1_000_000;

/**
 * The history as the model checks it: with non-atomic batches (`atomicBatches: false`), each
 * item of a `putBatch` becomes its own `put` over the batch's interval, answered as the batch was.
 * Item `i` of operation `id` gets the id `id + i * ITEM_ID_STEP`. A batch refused with `fenced`
 * stays whole: the error says nothing was written.
 */
export function expandBatches(ops: readonly HistoryOp[], options: ModelOptions): HistoryOp[] {
	if (options.atomicBatches) return [...ops];
	const out: HistoryOp[] = [];
	for (const op of ops) {
		// A batch refused with `fenced` wrote nothing (the error's promise): it stays one operation.
		if (op.input.kind !== "putBatch" || op.output.kind === "fenced") {
			out.push(op);
			continue;
		}
		op.input.items.forEach((it, i) => {
			out.push({
				...op,
				id: op.id + i * ITEM_ID_STEP,
				input: {
					kind: "put",
					key: it.key,
					value: it.value,
					...(it.fence === undefined ? {} : { fence: it.fence }),
				},
				stamp: op.stamp + i / 1000,
			});
		});
	}
	return out;
}
