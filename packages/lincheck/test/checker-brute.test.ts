// The checker's search against a brute-force one (every order that respects real time) on
// thousands of small random histories, right and corrupted: both use the one model, so this
// checks the search (linked list, backtracking, memoisation, unknown answers, batch items).
import { describe, expect, it } from "vitest";
import type { CheckOptions } from "../src/checker.ts";
import { checkHistory } from "../src/checker.ts";
import type { FenceRef, HistoryOp, OpInput, OpOutput } from "../src/history.ts";
import type { ModelOptions, ModelState } from "../src/model.ts";
import { accepts, apply, expandBatches, initialState } from "../src/model.ts";
import type { Rng } from "../src/rng.ts";
import { createRng } from "../src/rng.ts";

/** Linearizable by trying every order that respects real time (unanswered ops optional). */
function brute(history: readonly HistoryOp[], options: ModelOptions): boolean {
	const ops = expandBatches(
		history.filter((op) => !(op.input.kind === "get" && op.output.kind === "unknown")),
		options,
	);
	const done = new Array<boolean>(ops.length).fill(false);
	const search = (state: ModelState): boolean => {
		if (ops.every((op, i) => done[i] || op.ret === Number.POSITIVE_INFINITY)) return true;
		for (let i = 0; i < ops.length; i++) {
			if (done[i]) continue;
			const op = ops[i] as HistoryOp;
			// Another pending op answered before this one was called: it must go first.
			if (ops.some((other, j) => !done[j] && j !== i && other.ret < op.call)) continue;
			const next = accepts(state, op, options);
			if (next === undefined) continue;
			done[i] = true;
			if (search(next)) return true;
			done[i] = false;
		}
		return false;
	};
	return search(initialState());
}

const VALUES = ["a", "b", "c"];

function randomInput(r: Rng, options: ModelOptions): OpInput {
	const key = r.int(2);
	// Key 0 carries fences (epochs 1..3), key 1 none.
	const fence = (k: number): { fence?: FenceRef } =>
		k === 0 ? { fence: { scope: 0, epoch: 1 + r.int(3) } } : {};
	const v = (): string => r.pick(VALUES);
	const roll = r.int(8);
	switch (roll) {
		case 0:
			return { kind: "get", key };
		case 1:
			return { kind: "insertIfNotExists", key, value: v(), ...fence(key) };
		case 2:
			return { kind: "compareAndSwap", key, old: v(), value: v(), ...fence(key) };
		case 3:
			return options.fencing === "ordered" && key === 0
				? { kind: "get", key }
				: { kind: "compareAndDelete", key, expected: v(), ...fence(key) };
		case 4:
			return { kind: "put", key, value: v(), ...fence(key) };
		case 5:
			return {
				kind: "putBatch",
				items: [0, 1].map((k) => ({ key: k, value: v(), ...fence(k) })),
			};
		case 6:
			return options.fencing === "epoch"
				? {
						kind: "putBatchIf",
						items: [0, 1].map((k) => ({
							key: k,
							value: v(),
							...fence(k),
							...(r.chance(0.5) ? { expected: r.chance(0.3) ? null : v() } : {}),
						})),
					}
				: { kind: "get", key };
		default:
			return r.chance(0.5)
				? { kind: "raiseFence", scope: 0 }
				: { kind: "raiseFence", scope: 0, epoch: 1 + r.int(3) };
	}
}

/** A history from a simulated run (each op takes effect at a point of its interval), maybe corrupted. */
function randomHistory(r: Rng, options: ModelOptions): HistoryOp[] {
	const n = 2 + r.int(6);
	const events: { op: number; at: number; kind: "call" | "lin" | "ret" }[] = [];
	const draft = Array.from({ length: n }, (_, id) => {
		const call = r.next() * 10;
		const lin = call + r.next() * 3;
		const ret = lin + r.next() * 3;
		const unknown = r.chance(0.15);
		const applied = !unknown || r.chance(0.5);
		return { id, input: randomInput(r, options), call, lin, ret, unknown, applied };
	});
	for (const d of draft) if (d.applied) events.push({ op: d.id, at: d.lin, kind: "lin" });
	events.sort((a, b) => a.at - b.at);
	let state = initialState();
	const outputs = new Map<number, OpOutput>();
	for (const e of events) {
		const d = draft[e.op] as (typeof draft)[number];
		const step = apply(state, d.input, d.call, options);
		// An unknown op that took effect may still have been refused: only effects matter.
		state = step.next;
		outputs.set(d.id, step.out);
	}
	return draft.map((d) => {
		let output: OpOutput = d.unknown ? { kind: "unknown" } : (outputs.get(d.id) as OpOutput);
		if (!d.unknown && r.chance(0.12)) {
			// Corrupt the answer.
			if (output.kind === "bool") output = { kind: "bool", value: !output.value };
			else if (output.kind === "value")
				output = { kind: "value", value: r.pick([null, ...VALUES]) };
			else if (output.kind === "ok") output = { kind: "fenced" };
			else if (output.kind === "epoch") output = { kind: "epoch", value: output.value + 1 };
		}
		return {
			id: d.id,
			client: d.id,
			input: d.input,
			output,
			call: d.call,
			ret: d.unknown ? Number.POSITIVE_INFINITY : d.ret,
			stamp: d.call,
		};
	});
}

describe("checkHistory agrees with a brute-force search", () => {
	for (const options of [
		{ fencing: "epoch", atomicBatches: true },
		{ fencing: "ordered", atomicBatches: false },
	] as CheckOptions[]) {
		it(`on 4000 random histories (${options.fencing})`, () => {
			const r = createRng(options.fencing === "epoch" ? 101 : 202);
			let violations = 0;
			for (let i = 0; i < 4000; i++) {
				const h = randomHistory(r, options);
				const want = brute(h, options);
				const got = checkHistory(h, options).kind;
				if (got !== (want ? "linearizable" : "not-linearizable"))
					expect.fail(`history ${i}: brute force ${want}, checker ${got}: ${JSON.stringify(h)}`);
				if (!want) violations++;
			}
			// Both kinds of verdict were exercised.
			expect(violations).toBeGreaterThan(200);
			expect(violations).toBeLessThan(3800);
		});
	}
});
