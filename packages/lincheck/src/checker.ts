// A linearizability checker: Wing and Gong's search with Lowe's memoisation (the algorithm of
// Porcupine and of Knossos' "wgl"), over the model of model.ts. Written here from the papers.
import type { HistoryOp } from "./history.ts";
import type { ModelOptions, ModelState } from "./model.ts";
import { accepts, expandBatches, initialState, stateKey } from "./model.ts";

/** The verdict on one history. */
export type Verdict =
	| { readonly kind: "linearizable"; readonly steps: number }
	| {
			readonly kind: "not-linearizable";
			readonly steps: number;
			/**
			 * The longest prefix of operations the search could linearize (ids, in order), and the
			 * operation that returned before any order could place it: where to look first.
			 */
			readonly longestPrefix: readonly number[];
			readonly stuckAt: number;
	  }
	/** The search ran out of `maxSteps`: no verdict (make the window shorter). */
	| { readonly kind: "too-large"; readonly steps: number };

/** Options of {@link checkHistory}. */
export interface CheckOptions extends ModelOptions {
	/** Search steps before giving up with `too-large`; default 5 000 000. */
	readonly maxSteps?: number;
}

interface Entry {
	readonly op: HistoryOp;
	readonly isCall: boolean;
	/** The op's index (its bit). */
	readonly index: number;
	/** The call entry's return entry; `undefined` for a return entry or an op with no answer. */
	match: Entry | undefined;
	prev: Entry | undefined;
	next: Entry | undefined;
}

/**
 * Whether `history` (one window: the operations on keys no other window touches) is linearizable
 * with respect to the contract's model under `options`. An operation with `ret: Infinity` (no
 * answer) may be placed anywhere after its call, or left out.
 *
 * @example
 * ```ts
 * const verdict = checkHistory(ops, { fencing: "epoch", atomicBatches: true });
 * if (verdict.kind !== "linearizable") console.log(verdict);
 * ```
 */
export function checkHistory(history: readonly HistoryOp[], options: CheckOptions): Verdict {
	// A read without an answer has no effect: it can be left out.
	const ops = expandBatches(
		history.filter((op) => !(op.input.kind === "get" && op.output.kind === "unknown")),
		options,
	);
	const maxSteps = options.maxSteps ?? 5_000_000;
	const events: Entry[] = [];
	ops.forEach((op, index) => {
		if (!(op.ret > op.call)) throw new RangeError(`op ${op.id}: its answer precedes its call`);
		const call: Entry = {
			op,
			isCall: true,
			index,
			match: undefined,
			prev: undefined,
			next: undefined,
		};
		events.push(call);
		if (op.ret !== Number.POSITIVE_INFINITY) {
			const ret: Entry = {
				op,
				isCall: false,
				index,
				match: undefined,
				prev: undefined,
				next: undefined,
			};
			call.match = ret;
			events.push(ret);
		}
	});
	// Logical times are distinct per event; an answer never shares a time with a call.
	events.sort((a, b) => (a.isCall ? a.op.call : a.op.ret) - (b.isCall ? b.op.call : b.op.ret));
	const head: Entry = {
		op: undefined as unknown as HistoryOp,
		isCall: false,
		index: -1,
		match: undefined,
		prev: undefined,
		next: undefined,
	};
	let last = head;
	for (const e of events) {
		e.prev = last;
		last.next = e;
		last = e;
	}
	let remaining = ops.filter((o) => o.ret !== Number.POSITIVE_INFINITY).length;

	const unlink = (e: Entry): void => {
		(e.prev as Entry).next = e.next;
		if (e.next !== undefined) e.next.prev = e.prev;
	};
	const relink = (e: Entry): void => {
		(e.prev as Entry).next = e;
		if (e.next !== undefined) e.next.prev = e;
	};
	const lift = (call: Entry): void => {
		unlink(call);
		if (call.match !== undefined) unlink(call.match);
	};
	const unlift = (call: Entry): void => {
		if (call.match !== undefined) relink(call.match);
		relink(call);
	};

	const bits = new Uint32Array(Math.ceil(ops.length / 32) || 1);
	const flip = (i: number): void => {
		bits[i >>> 5] = (bits[i >>> 5] as number) ^ (1 << (i & 31));
	};
	const seen = new Set<string>();
	const stack: { call: Entry; state: ModelState }[] = [];
	let state = initialState();
	let entry = head.next;
	let steps = 0;
	let longest: number[] = [];
	let stuckAt = -1;

	while (remaining > 0) {
		if (++steps > maxSteps) return { kind: "too-large", steps };
		if (entry === undefined) throw new Error("lincheck: an answer is missing from the list");
		if (entry.isCall) {
			const next = accepts(state, entry.op, options);
			if (next !== undefined) {
				flip(entry.index);
				const key = `${bits.join(",")}:${stateKey(next)}`;
				if (!seen.has(key)) {
					seen.add(key);
					stack.push({ call: entry, state });
					state = next;
					lift(entry);
					if (entry.match !== undefined) remaining--;
					entry = head.next;
					continue;
				}
				flip(entry.index);
			}
			entry = entry.next;
		} else {
			// An answer came before its operation could be placed: undo the last placement.
			if (stuckAt === -1 || stack.length > longest.length) {
				longest = stack.map((s) => s.call.op.id);
				stuckAt = entry.op.id;
			}
			const top = stack.pop();
			if (top === undefined)
				return { kind: "not-linearizable", steps, longestPrefix: longest, stuckAt };
			state = top.state;
			flip(top.call.index);
			unlift(top.call);
			if (top.call.match !== undefined) remaining++;
			entry = top.call.next;
		}
	}
	return { kind: "linearizable", steps };
}
