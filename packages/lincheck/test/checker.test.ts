import { describe, expect, it } from "vitest";
import type { CheckOptions } from "../src/checker.ts";
import { checkHistory } from "../src/checker.ts";
import type { HistoryOp, OpInput, OpOutput } from "../src/history.ts";

const epoch: CheckOptions = { fencing: "epoch", atomicBatches: true };
const ordered: CheckOptions = { fencing: "ordered", atomicBatches: false };
const U = Number.POSITIVE_INFINITY;

let nextId = 0;
/** An op of client `client` called at `call`, answered at `ret` (Infinity: never). */
function op(
	client: number,
	call: number,
	ret: number,
	input: OpInput,
	output: OpOutput,
): HistoryOp {
	return { id: nextId++, client, input, output, call, ret, stamp: call };
}
const ok: OpOutput = { kind: "ok" };
const unknown: OpOutput = { kind: "unknown" };
const fenced: OpOutput = { kind: "fenced" };
const bool = (value: boolean): OpOutput => ({ kind: "bool", value });
const value = (v: string | null): OpOutput => ({ kind: "value", value: v });
const get = (key = 0): OpInput => ({ kind: "get", key });
const put = (v: string, e?: number, key = 0): OpInput =>
	e === undefined
		? { kind: "put", key, value: v }
		: { kind: "put", key, value: v, fence: { scope: 0, epoch: e } };
const cas = (old: string, v: string, e?: number): OpInput =>
	e === undefined
		? { kind: "compareAndSwap", key: 0, old, value: v }
		: { kind: "compareAndSwap", key: 0, old, value: v, fence: { scope: 0, epoch: e } };

describe("checkHistory", () => {
	it("accepts a sequential history that follows the model", () => {
		const h = [
			op(0, 1, 2, put("a"), ok),
			op(0, 3, 4, cas("a", "b"), bool(true)),
			op(1, 5, 6, get(), value("b")),
			op(1, 7, 8, { kind: "compareAndDelete", key: 0, expected: "b" }, bool(true)),
			op(0, 9, 10, { kind: "insertIfNotExists", key: 0, value: "c" }, bool(true)),
			op(0, 11, 12, get(), value("c")),
		];
		expect(checkHistory(h, epoch).kind).toBe("linearizable");
	});

	it("refuses a stale read after a write was answered", () => {
		const h = [op(0, 1, 2, put("a"), ok), op(1, 3, 4, get(), value(null))];
		expect(checkHistory(h, epoch).kind).toBe("not-linearizable");
	});

	it("lets overlapping operations take either order", () => {
		const h = [
			op(0, 1, 4, put("a"), ok),
			op(1, 2, 3, get(), value("a")),
			op(2, 2.5, 5, get(), value(null)),
		];
		expect(checkHistory(h, epoch).kind).toBe("linearizable");
	});

	it("places an unanswered write anywhere after its call, or nowhere", () => {
		const seenLate = [
			op(0, 1, U, put("a"), unknown),
			op(1, 2, 3, get(), value(null)),
			op(1, 4, 5, get(), value("a")),
		];
		expect(checkHistory(seenLate, epoch).kind).toBe("linearizable");
		const never = [op(0, 1, U, put("a"), unknown), op(1, 2, 3, get(), value(null))];
		expect(checkHistory(never, epoch).kind).toBe("linearizable");
		// but never before its call
		const early = [op(1, 1, 2, get(), value("a")), op(0, 3, U, put("a"), unknown)];
		expect(checkHistory(early, epoch).kind).toBe("not-linearizable");
	});

	it("catches a write reported as not done (left out of the history) that was done", () => {
		// The put failed with "nothing written" and was left out; its value is read anyway.
		const h = [op(1, 1, 2, get(), value("a"))];
		expect(checkHistory(h, epoch).kind).toBe("not-linearizable");
	});

	it("catches a compare-and-swap applied twice (ABA)", () => {
		const h = [
			op(0, 1, 2, put("a"), ok),
			op(0, 3, 4, cas("a", "b"), bool(true)),
			op(1, 5, 6, put("a"), ok),
			op(1, 7, 8, get(), value("b")),
		];
		expect(checkHistory(h, epoch).kind).toBe("not-linearizable");
	});

	it("epoch fencing: a write under a superseded epoch is refused, never applied", () => {
		const raise = (e: number): OpInput => ({ kind: "raiseFence", scope: 0, epoch: e });
		const good = [
			op(0, 1, 2, raise(2), { kind: "epoch", value: 2 }),
			op(1, 3, 4, put("a", 1), fenced),
			op(1, 5, 6, put("b", 2), ok),
			op(0, 7, 8, raise(1), fenced),
			op(0, 9, 10, { kind: "raiseFence", scope: 0 }, { kind: "epoch", value: 3 }),
		];
		expect(checkHistory(good, epoch).kind).toBe("linearizable");
		const applied = [
			op(0, 1, 2, raise(2), { kind: "epoch", value: 2 }),
			op(1, 3, 4, put("a", 1), ok),
		];
		expect(checkHistory(applied, epoch).kind).toBe("not-linearizable");
		// ordered: a lower epoch may land on a record no newer write touched
		expect(checkHistory(applied, ordered).kind).toBe("linearizable");
	});

	it("a lower epoch never replaces a higher one (ordered); of one epoch the later call wins (F2, both)", () => {
		const lower = [
			op(0, 1, 2, put("a", 2), ok),
			op(1, 3, 4, put("b", 1), ok),
			op(0, 5, 6, get(), value("a")),
		];
		expect(checkHistory(lower, ordered).kind).toBe("linearizable");
		const replaced = [...lower.slice(0, 2), op(0, 5, 6, get(), value("b"))];
		expect(checkHistory(replaced, ordered).kind).toBe("not-linearizable");
		// F2: a put called first lands last and is dropped; a swap called later won.
		const f2 = [
			op(2, 0.5, 0.6, put("v0", 1), ok),
			op(0, 1, 6, put("a", 1), ok),
			op(1, 2, 3, cas("v0", "c", 1), bool(true)),
			op(1, 7, 8, get(), value("c")),
		];
		expect(checkHistory(f2, ordered).kind).toBe("linearizable");
		expect(checkHistory(f2, epoch).kind).toBe("linearizable");
		// Unfenced, the same answers are not linearizable: F2 is a promise of fenced writes.
		const unfenced = [
			op(2, 0.5, 0.6, put("v0"), ok),
			op(0, 1, 6, put("a"), ok),
			op(1, 2, 3, cas("v0", "c"), bool(true)),
			op(1, 7, 8, get(), value("c")),
		];
		expect(checkHistory(unfenced, epoch).kind).toBe("not-linearizable");
	});

	it("splits a non-atomic batch into its items", () => {
		const batch: OpInput = {
			kind: "putBatch",
			items: [
				{ key: 0, value: "a" },
				{ key: 1, value: "b" },
			],
		};
		const h = [
			op(0, 1, 4, batch, ok),
			op(1, 2, 3, get(1), value("b")),
			op(1, 3.5, 3.6, get(0), value(null)),
		];
		expect(checkHistory(h, ordered).kind).toBe("linearizable");
		expect(checkHistory(h, epoch).kind).toBe("not-linearizable");
	});

	it("a non-atomic batch refused with fenced wrote nothing", () => {
		const raise: OpInput = { kind: "raiseFence", scope: 0, epoch: 2 };
		const batch: OpInput = {
			kind: "putBatch",
			items: [
				{ key: 0, value: "a", fence: { scope: 0, epoch: 1 } },
				{ key: 1, value: "b" },
			],
		};
		const refused = [
			op(0, 1, 2, raise, { kind: "epoch", value: 2 }),
			op(0, 3, 4, batch, fenced),
			op(1, 5, 6, get(1), value(null)),
		];
		expect(checkHistory(refused, ordered).kind).toBe("linearizable");
		const halfWritten = [...refused.slice(0, 2), op(1, 5, 6, get(1), value("b"))];
		expect(checkHistory(halfWritten, ordered).kind).toBe("not-linearizable");
	});

	it("putBatchIf is all or nothing", () => {
		const batch: OpInput = {
			kind: "putBatchIf",
			items: [
				{ key: 0, value: "a", expected: null },
				{ key: 1, value: "b", expected: "x" },
			],
		};
		const h = [op(0, 1, 2, batch, bool(false)), op(1, 3, 4, get(0), value("a"))];
		expect(checkHistory(h, epoch).kind).toBe("not-linearizable");
	});

	it("gives up with too-large rather than run without bound", () => {
		const h: HistoryOp[] = [];
		for (let i = 0; i < 40; i++) h.push(op(i, i + 1, U, put(`v${i}`), unknown));
		h.push(op(99, 100, 101, get(), value("nope")));
		expect(checkHistory(h, { ...epoch, maxSteps: 1000 }).kind).toBe("too-large");
	});
});
