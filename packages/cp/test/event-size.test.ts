import { describe, expect, it } from "vitest";
import { demoApp } from "../src/demo-app.ts";
import { encodeJson, MAX_EVENT_BYTES } from "../src/event.ts";
import { buildEvent, checkEventSize } from "../src/event-builder.ts";
import type { PlannedCreate } from "../src/request.ts";

const note = demoApp.table("app1pkg.Note")!;
const creates = (n: number, text: string): PlannedCreate[] =>
	Array.from({ length: n }, (_, i) => ({
		rawId: i + 1,
		table: note,
		fields: { text },
		path: `cuds[${i}].fields`,
	}));
const parts = (c: PlannedCreate[]) => ({
	partitionId: 0,
	wsid: 1,
	command: "sys.CUD",
	args: undefined,
	creates: c,
	updates: [],
	appSeqs: [],
});
const real = (c: PlannedCreate[]) =>
	encodeJson(
		buildEvent({
			...parts(c),
			plogOffset: 2 ** 53 - 1,
			wlogOffset: 2 ** 53 - 1,
			registeredAt: 2 ** 53 - 1,
			ids: c.map(() => 2 ** 53 - 1),
			epoch: 2n ** 63n - 1n,
		}),
	).length;

describe("checkEventSize", () => {
	it("accepts what fits and rejects what could not, at the exact boundary of the widest encoding", () => {
		// Grow one create's text until the widest event no longer fits.
		let len = 60_000;
		while (real(creates(1, "x".repeat(len + 1))) <= MAX_EVENT_BYTES) len++;
		expect(real(creates(1, "x".repeat(len)))).toBeLessThanOrEqual(MAX_EVENT_BYTES);
		expect(() => checkEventSize(parts(creates(1, "x".repeat(len))))).not.toThrow();
		expect(() => checkEventSize(parts(creates(1, "x".repeat(len + 1))))).toThrow(/limit is 63488/);
		// Multi-byte characters count as their UTF-8 bytes; escapes as theirs.
		expect(() => checkEventSize(parts(creates(1, "é".repeat(len / 2 + 10))))).toThrow();
		expect(() => checkEventSize(parts(creates(1, "\u0001".repeat(len / 6 + 10))))).toThrow();
		expect(() => checkEventSize(parts(creates(1, "\u0001".repeat(len / 6 - 10))))).not.toThrow();
		expect(() => checkEventSize(parts(creates(20, "n".repeat(4000))))).toThrow(/cuds/);
		// An idempotency key counts too: the event keeps it, its fingerprint and the answer.
		const idempotency = { key: "k".repeat(255), hash: "0".repeat(64) };
		expect(() => checkEventSize({ ...parts(creates(1, "x".repeat(len))), idempotency })).toThrow(
			/limit is 63488/,
		);
	});
});
