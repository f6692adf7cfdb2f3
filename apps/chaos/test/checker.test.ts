// The checker on synthetic logs: it must pass a clean history and catch each kind of violation.
import { describe, expect, it } from "vitest";
import type { Checker, HostRecord } from "../src/checker.ts";
import { createChecker } from "../src/checker.ts";
import { reportLines } from "../src/summary.ts";

const D = 2_000; // leadership seconds 2: lease 1 600 ms, renewal every 500 ms

/** Writes the log of one tenure: listening, acquired, renewals every 500 ms, work every `every` ms. */
function tenure(
	c: Checker,
	o: {
		host: string;
		pid: number;
		slot: number;
		nonce: string;
		token: number;
		from: number;
		/** Last work at or before this mono. */
		lastWork: number;
		every?: number;
		renewUntil?: number;
	},
): void {
	const holder = `127.0.0.1:${o.pid}#${o.nonce}`;
	const line = (r: HostRecord) => c.addHostLine(o.host, { pid: o.pid, ...r });
	line({ event: "listening", mono: o.from - 50, holder });
	line({
		event: "acquired",
		mono: o.from,
		slot: o.slot,
		holder,
		fencingToken: o.token,
		leaseLeftMs: 0.8 * D,
	});
	const every = o.every ?? 100;
	for (let t = o.from + 10; t <= o.lastWork; t += every) {
		if (o.renewUntil !== undefined && t <= o.renewUntil && (t - o.from) % 500 < every) {
			line({ event: "renewed", mono: t, slot: o.slot, leaseLeftMs: 0.8 * D - 5 });
		}
		line({
			event: "work",
			mono: t,
			slot: o.slot,
			holder,
			incarnation: o.nonce,
			fencingToken: o.token,
			leaseLeftMs: 1000,
		});
	}
}

/** Three clean handovers on slot 1 (kill, kill, graceful), one tenure on slot 2. */
function cleanHistory(c: Checker): void {
	// H1 leads 0..3000 renewing, then is killed at 3100; its lease ends 3000 + 1595.
	tenure(c, {
		host: "H1",
		pid: 11,
		slot: 1,
		nonce: "a",
		token: 1,
		from: 0,
		lastWork: 3000,
		renewUntil: 3000,
	});
	c.addEvent({ event: "fault", kind: "kill", host: "H1", pid: 11, mono: 3100 });
	c.addEvent({
		event: "host-exit",
		host: "H1",
		pid: 11,
		signal: "SIGKILL",
		code: null,
		mono: 3110,
	});
	// H2 acquires once the record expired (d after the last renewal, 5000) and works.
	tenure(c, {
		host: "H2",
		pid: 22,
		slot: 1,
		nonce: "b",
		token: 2,
		from: 5200,
		lastWork: 6000,
		renewUntil: 6000,
	});
	c.addEvent({ event: "fault", kind: "kill", host: "H2", pid: 22, mono: 6050 });
	tenure(c, { host: "H3", pid: 33, slot: 1, nonce: "c", token: 3, from: 8200, lastWork: 9000 });
	tenure(c, {
		host: "H4",
		pid: 44,
		slot: 2,
		nonce: "d",
		token: 1,
		from: 0,
		lastWork: 9000,
		renewUntil: 9000,
	});
}

describe("checker", () => {
	it("passes a clean history and measures it", () => {
		const c = createChecker();
		cleanHistory(c);
		const r = c.report();
		expect(r.failures).toEqual([]);
		expect(r.ok).toBe(true);
		expect(r.slots).toEqual([1, 2]);
		expect(r.changes).toBe(2);
		expect(r.changesPerSlot).toEqual({ 1: 2, 2: 0 });
		expect(r.overlaps).toEqual([]);
		expect(r.tokenRegressions).toEqual([]);
		expect(r.faults).toEqual({ kill: 2 });
		expect(r.hostExits).toEqual({ SIGKILL: 1 });
		// failovers: 5200 - 3100 and 8200 - 6050
		expect(r.failoverAfterKill).toEqual({ n: 2, medianMs: 2125, maxMs: 2150, minMs: 2100 });
		// work every 100 ms from +10: H1's last act 2910, H2 acquires 5200; H2's last 5910, H3 at 8200
		expect(r.minGapMs).toBe(2290);
		expect(r.acts.orphans).toBe(0);
	});

	it("catches two incarnations acting at overlapping times", () => {
		const c = createChecker();
		cleanHistory(c);
		// A deposed H1' (new tenure of slot 1, token 4) works at 9100..9500 while H5 (token 5)
		// acquired at 9300: 200 ms of overlap.
		tenure(c, { host: "H1", pid: 12, slot: 1, nonce: "e", token: 4, from: 9050, lastWork: 9500 });
		tenure(c, { host: "H5", pid: 55, slot: 1, nonce: "f", token: 5, from: 9300, lastWork: 9800 });
		const r = c.report();
		expect(r.ok).toBe(false);
		expect(r.overlaps).toHaveLength(1);
		expect(r.overlaps[0]).toMatchObject({
			slot: 1,
			earlier: { host: "H1", fencingToken: 4 },
			later: { host: "H5", fencingToken: 5 },
		});
		expect(r.maxOverlapMs).toBe(9460 - 9300);
		// interleaved acts are also token regressions (4 after 5)
		expect(r.tokenRegressions.some((t) => t.where === "acts" && t.from === 5 && t.to === 4)).toBe(
			true,
		);
		expect(r.failures.join("\n")).toContain("acted at overlapping times");
	});

	it("catches an overlap seen only in the load generator's answers", () => {
		const c = createChecker();
		cleanHistory(c);
		// H1 (token 1) answered a POST /work at 5300, after H2 acquired at 5200; its log lost it.
		c.addAnswer({
			host: "H1",
			sent: 5290,
			received: 5310,
			body: { mono: 5300, slot: 1, holder: "127.0.0.1:11#a", fencingToken: 1 },
		});
		const r = c.report();
		expect(r.ok).toBe(false);
		expect(r.overlaps[0]).toMatchObject({ earlier: { host: "H1" }, later: { host: "H2" } });
		expect(r.overlaps[0]?.ms).toBe(100);
		expect(r.acts.answersWithoutLogLine).toBe(1);
	});

	it("catches a fencing token that does not grow at a change of incarnation", () => {
		const c = createChecker();
		cleanHistory(c);
		tenure(c, {
			host: "H5",
			pid: 55,
			slot: 1,
			nonce: "f",
			token: 3,
			from: 11_000,
			lastWork: 11_500,
		});
		const r = c.report();
		expect(r.ok).toBe(false);
		expect(r.overlaps).toEqual([]);
		expect(r.tokenRegressions).toContainEqual({
			slot: 1,
			where: "acquisitions",
			mono: 11_000,
			from: 3,
			to: 3,
		});
		expect(r.failures.join("\n")).toContain("fencing-token regression");
	});

	it("catches overlapping leases even when nobody acted in the overlap", () => {
		const c = createChecker();
		// H1's lease runs to 100 + 1600 = 1700; H2 acquires at 1500; H1 last worked at 1200.
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 100, lastWork: 1200 });
		tenure(c, { host: "H2", pid: 22, slot: 1, nonce: "b", token: 2, from: 1500, lastWork: 2000 });
		const r = c.report();
		expect(r.overlaps).toEqual([]);
		expect(r.leaseOverlaps).toHaveLength(1);
		expect(r.leaseOverlaps[0]?.ms).toBe(200);
		expect(r.ok).toBe(false);
	});

	it("a graceful release ends the lease: an immediate takeover is clean", () => {
		const c = createChecker();
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 100, lastWork: 1200 });
		c.addHostLine("H1", { event: "shutdown-started", pid: 11, mono: 1250 });
		c.addHostLine("H1", { event: "released", pid: 11, mono: 1260, slot: 1 });
		tenure(c, { host: "H2", pid: 22, slot: 1, nonce: "b", token: 2, from: 1300, lastWork: 2000 });
		const r = c.report();
		expect(r.failures).toEqual([]);
		expect(r.minLeaseGapMs).toBe(50);
	});

	it("renewals extend a lease: a long tenure followed by a takeover is clean", () => {
		const c = createChecker();
		tenure(c, {
			host: "H1",
			pid: 11,
			slot: 1,
			nonce: "a",
			token: 1,
			from: 0,
			lastWork: 10_000,
			renewUntil: 10_000,
		});
		// last renewal near 10 000: its lease ends about 11 595; the record expires about 12 000
		tenure(c, {
			host: "H2",
			pid: 22,
			slot: 1,
			nonce: "b",
			token: 2,
			from: 12_100,
			lastWork: 12_500,
		});
		const r = c.report();
		expect(r.failures).toEqual([]);
		expect(r.minLeaseGapMs).toBeGreaterThan(400);
	});

	it("flags work of a tenure no acquired line announced (lost logs or a foreign token)", () => {
		const c = createChecker();
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 0, lastWork: 500 });
		c.addHostLine("H1", {
			event: "work",
			pid: 11,
			mono: 600,
			slot: 1,
			holder: "127.0.0.1:11#a",
			fencingToken: 9,
		});
		const r = c.report();
		expect(r.acts.orphans).toBe(1);
		expect(r.ok).toBe(false);
	});

	it("fails when the host mono of an answer lies outside its request (clocks not shared)", () => {
		const c = createChecker();
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 0, lastWork: 500 });
		c.addHostLine("H1", {
			event: "work",
			pid: 11,
			mono: 400.5,
			slot: 1,
			holder: "127.0.0.1:11#a",
			fencingToken: 1,
		});
		c.addAnswer({
			host: "H1",
			sent: 900,
			received: 950,
			body: { mono: 400.5, slot: 1, holder: "127.0.0.1:11#a", fencingToken: 1 },
		});
		const r = c.report();
		expect(r.monoViolations).toBe(1);
		expect(r.ok).toBe(false);
	});

	it("fails when there was no accepted work (nothing was checked)", () => {
		const c = createChecker();
		c.addHostLine("H1", { event: "listening", pid: 1, mono: 1, holder: "x#a" });
		const r = c.report();
		expect(r.ok).toBe(false);
		expect(r.failures).toContain("no accepted work at all: nothing was checked");
	});

	it("with requireActs false (the commands workload, no slot leaders), no work is no failure, but an overlap still is", () => {
		const quiet = createChecker({ requireActs: false });
		quiet.addHostLine("H1", { event: "listening", pid: 1, mono: 1, holder: "x#a" });
		expect(quiet.report()).toMatchObject({ ok: true, failures: [] });
		const overlapping = createChecker({ requireActs: false });
		tenure(overlapping, {
			host: "H1",
			pid: 11,
			slot: 1,
			nonce: "a",
			token: 1,
			from: 0,
			lastWork: 500,
		});
		tenure(overlapping, {
			host: "H2",
			pid: 12,
			slot: 1,
			nonce: "b",
			token: 2,
			from: 100,
			lastWork: 600,
		});
		expect(overlapping.report().ok).toBe(false);
	});

	it("records the mutants the hosts announced", () => {
		const c = createChecker();
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 0, lastWork: 500 });
		c.addHostLine("H1", {
			event: "unsafe-mutants",
			pid: 11,
			mono: 1,
			mutants: ["killer", "lease-timer"],
		});
		expect(c.report().mutants).toEqual(["killer", "lease-timer"]);
	});

	// Found by review: an act before its own tenure's acquisition (an answer whose host mono is
	// earlier than its token's acquired line) lay outside every acting interval the overlap check
	// compares, so one inside the previous leader's live lease passed.
	it("fails an act before its own tenure's acquisition, and says so in the verdict", () => {
		const c = createChecker();
		const A = "127.0.0.1:11#a";
		const B = "127.0.0.1:12#b";
		c.addHostLine("H1", {
			event: "acquired",
			mono: 0,
			pid: 11,
			slot: 1,
			holder: A,
			fencingToken: 1,
			leaseLeftMs: 1600,
		});
		c.addHostLine("H1", { event: "work", mono: 300, pid: 11, slot: 1, holder: A, fencingToken: 1 });
		c.addHostLine("H1", { event: "released", mono: 1000, pid: 11, slot: 1 });
		c.addHostLine("H2", {
			event: "acquired",
			mono: 1100,
			pid: 12,
			slot: 1,
			holder: B,
			fencingToken: 2,
			leaseLeftMs: 1600,
		});
		c.addHostLine("H2", {
			event: "work",
			mono: 1200,
			pid: 12,
			slot: 1,
			holder: B,
			fencingToken: 2,
		});
		// A 200 from H2 under token 2 at host mono 500, while H1 held a live lease.
		c.addAnswer({
			host: "H2",
			sent: 499,
			received: 501,
			body: { mono: 500, slot: 1, holder: B, fencingToken: 2 },
		});
		const r = c.report();
		expect(r.acts.beforeAcquisition).toBe(1);
		expect(r.ok).toBe(false);
		expect(r.failures).toContain(
			"1 act(s) before their own tenure's acquisition (up to 600.0 ms before)",
		);
		// That answer has no work line either: counted, and named in the verdict line.
		expect(r.acts.answersWithoutLogLine).toBe(1);
		const verdict = reportLines(r)[0] as string;
		expect(verdict).toMatch(/^verdict: +FAIL: /);
		expect(verdict).toContain("act(s) before their own tenure's acquisition");
		expect(verdict).toContain("note: 1 answer(s) without a work log line");
	});

	it("a passing verdict names answers without a work log line", () => {
		const c = createChecker();
		tenure(c, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 0, lastWork: 500 });
		const holder = "127.0.0.1:11#a";
		c.addAnswer({
			host: "H1",
			sent: 449,
			received: 451,
			body: { mono: 450, slot: 1, holder, fencingToken: 1 },
		});
		const r = c.report();
		expect(r.ok).toBe(true);
		expect(reportLines(r)[0]).toMatch(
			/^verdict: +PASS \(note: 1 answer\(s\) without a work log line, checked from the answer alone\)$/,
		);
		const clean = createChecker();
		tenure(clean, { host: "H1", pid: 11, slot: 1, nonce: "a", token: 1, from: 0, lastWork: 500 });
		clean.addAnswer({
			host: "H1",
			sent: 409,
			received: 411,
			body: { mono: 410, slot: 1, holder, fencingToken: 1 },
		});
		expect(reportLines(clean.report())[0]).toMatch(/^verdict: +PASS$/);
	});
});
