import { describe, expect, it } from "vitest";
import type { StoredEvent } from "../src/event.ts";
import {
	decodeLogValue,
	decodeRecordValue,
	encodeJson,
	markerOf,
	recordValue,
	seqValuesOf,
	toLogEvent,
} from "../src/event.ts";

const event: StoredEvent = {
	v: 1,
	k: "e",
	p: 1,
	o: 7,
	ws: 1001,
	w: 3,
	t: 1_700_000_000_000,
	c: "sys.CUD",
	s: [
		[1, 3],
		[2, 322_685_000_131_072],
	],
	cuds: [
		{ id: 322_685_000_131_072, q: "app1pkg.Customer", n: true, f: { name: "Ada" } },
		{
			id: 322_685_000_131_000,
			q: "app1pkg.Customer",
			n: false,
			f: { name: "Bob", vip: true },
			c: 2,
		},
	],
};

describe("event encoding", () => {
	it("round-trips events and markers; markers keep the event's values", () => {
		expect(decodeLogValue(encodeJson(event))).toEqual({ kind: "event", event });
		const marker = markerOf(event, "why");
		const d = decodeLogValue(encodeJson(marker));
		expect(d?.kind).toBe("marker");
		expect(d?.event).toEqual(event);
		expect(seqValuesOf(event)).toEqual([
			{ wsid: 1001, seqId: 1, value: 3 },
			{ wsid: 1001, seqId: 2, value: 322_685_000_131_072 },
		]);
		expect(d === undefined ? undefined : toLogEvent(d).corrupted).toBe("why");
		expect(markerOf(event, "x".repeat(5000)).reason).toHaveLength(1024);
	});

	it("records keep who created them and who wrote them last", () => {
		expect(recordValue(event, event.cuds[0]!)).toEqual({
			v: 1,
			q: "app1pkg.Customer",
			c: 7,
			u: 7,
			f: { name: "Ada" },
		});
		expect(recordValue(event, event.cuds[1]!)).toEqual({
			v: 1,
			q: "app1pkg.Customer",
			c: 2,
			u: 7,
			f: { name: "Bob", vip: true },
		});
		expect(decodeRecordValue(encodeJson(recordValue(event, event.cuds[0]!)))?.c).toBe(7);
	});

	it("anything else is not ours", () => {
		const bad: unknown[] = [
			"not json",
			[1],
			{ ...event, v: 2 },
			{ ...event, o: 0 },
			{ ...event, ws: -1 },
			{ ...event, s: [[1]] },
			{ ...event, s: [[1, 0]] },
			{ ...event, cuds: [{ id: 1, q: "x", n: true, f: { a: {} } }] },
			{ ...event, cuds: [{ id: 1, q: "x", n: false, f: {} }] },
			{ ...event, cuds: [{ id: 1, q: "x", n: true, f: {}, c: 3 }] },
			{ v: 1, k: "x", reason: 5, e: event },
			{ v: 1, k: "x", reason: "r", e: { ...event, k: "x" } },
		];
		for (const b of bad)
			expect(
				decodeLogValue(typeof b === "string" ? new TextEncoder().encode(b) : encodeJson(b)),
			).toBeUndefined();
		expect(decodeLogValue(new Uint8Array([0xff, 0xfe]))).toBeUndefined();
		expect(decodeLogValue(new Uint8Array([1]))).toBeUndefined();
		expect(decodeRecordValue(new Uint8Array([1]))).toBeUndefined();
		expect(
			decodeRecordValue(encodeJson({ v: 1, q: "a", c: 1, u: 1, f: { x: [] } })),
		).toBeUndefined();
	});
});
