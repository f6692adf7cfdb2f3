import { utf8 } from "@vvm/ttlstorage";
import { describe, expect, it } from "vitest";
import { encodeHeartbeat } from "../src/heartbeat-codec.ts";
import { MemberView } from "../src/member-view.ts";

const rec = (address: string, incarnation: string, seq: number) => ({
	cCols: utf8(address),
	value: encodeHeartbeat({ incarnation, seq, acks: new Map() }),
});

describe("MemberView", () => {
	it("knows a host alive only after seeing its heartbeat change, as of the previous read's start", () => {
		const view = new MemberView();
		view.observe([rec("a", "1", 1)], 100);
		expect(view.members.get("a")?.aliveAt).toBeUndefined();
		view.observe([rec("a", "1", 1)], 200);
		expect(view.members.get("a")?.aliveAt).toBeUndefined();
		view.observe([rec("a", "1", 2)], 300);
		expect(view.members.get("a")?.aliveAt).toBe(200);
		view.observe([rec("a", "1", 2)], 400);
		expect(view.members.get("a")?.aliveAt).toBe(200);
	});

	it("counts a host that appears after the first read as written after the previous read started", () => {
		const view = new MemberView();
		view.observe([], 100);
		view.observe([rec("b", "1", 1)], 200);
		expect(view.members.get("b")?.aliveAt).toBe(100);
		// A new incarnation at the same address is a new host.
		view.observe([rec("b", "2", 1)], 300);
		expect(view.members.get("b")?.holder.incarnation).toBe("2");
		expect(view.members.get("b")?.aliveAt).toBe(200);
	});

	it("forgets hosts whose record is gone, and ignores records it cannot decode", () => {
		const view = new MemberView();
		view.observe([rec("a", "1", 1), { cCols: utf8("junk"), value: utf8("x") }], 100);
		expect([...view.members.keys()]).toEqual(["a"]);
		view.observe([], 200);
		expect(view.members.size).toBe(0);
	});
});
