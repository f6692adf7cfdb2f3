// The checker: from the hosts' own logs (and the load generator's answers), for every slot, no
// two incarnations acted at overlapping times, and fencing tokens only grow. Everything is on
// `mono` (CLOCK_MONOTONIC ms), which every process on the machine shares and libfaketime leaves
// alone, so hosts whose wall clocks were offset or stepped still order correctly.
//
// Definitions (README "What the checker proves"):
// - A tenure is one acquisition: (slot, holder = address#nonce, fencing token), from its
//   `acquired` log line. The host exits when it loses a slot, so one incarnation has at most one
//   tenure per slot.
// - Its acts are its accepted units of work: `work` log lines, and 200 answers to POST /work.
// - Its acting interval is [acquired.mono, last act's mono]: from the moment it may act (earlier
//   than any act of it) to its last act. Two tenures of a slot overlap when the earlier one's last
//   act is at or after the later one's acquisition. A tenure without acts cannot overlap a later
//   one, and a later one's acts all follow its own acquisition.
// - Its lease runs from acquired.mono to the latest `mono + leaseLeftMs` of its acquired and
//   renewed lines, or to the first sign that it stopped leading, if earlier: `lost`, `released`,
//   `problem`, `shutdown-started`, `killer`, or the process's exit (a graceful release deletes
//   the record, so the next holder may start at once). Leases of a slot must not overlap either:
//   otherwise the next holder can insert only after the record expired, 0.2 d (minus the allowed
//   skew) after the lease ended.
// - Fencing tokens: per slot, strictly increasing in acquisition order, and along the acts in
//   `mono` order, never smaller, and strictly greater whenever the incarnation changes.

/**
 * Host log events that are a leader's acts: each carries `slot`, `holder`, `fencingToken` and
 * `mono`, and counts toward its tenure's acting interval.
 *
 * TODO(command processor, issue 18 item 4, last bullet): once the command processor is merged,
 * add its sequence and PLog write lines here (with slot, holder, fencingToken, mono, and the
 * written sequence numbers), add a per-workspace check that numbers never roll back across
 * tenures, and run the `proxy-hold` fault against a leader's flush: a write held past its lease
 * must either land before the next tenure's first write or be refused by its fencing token.
 */
const ACT_EVENTS: readonly string[] = ["work"];

/** A host log line, parsed; only `event`, `mono`, `pid` and the event's own fields are read. */
export interface HostRecord {
	readonly event?: string;
	readonly mono?: number;
	readonly pid?: number;
	readonly [field: string]: unknown;
}

/** An accepted unit of work as the load generator saw it (answers.jsonl). */
export interface AnswerRecord {
	readonly host: string;
	/** `mono` when the request was sent and when the answer arrived. */
	readonly sent: number;
	readonly received: number;
	/** The host's answer (the fields of its `work` log line). */
	readonly body: {
		readonly mono: number;
		readonly slot: number;
		readonly holder: string;
		readonly fencingToken?: number | null;
	};
}

/** A line of the run's own log (events.jsonl): `fault` (`kind`, `host`, `pid`), `host-exit`. */
export interface EventRecord {
	readonly event: string;
	readonly mono: number;
	readonly [field: string]: unknown;
}

/** Where a tenure comes from, for the report. */
interface TenureRef {
	readonly slot: number;
	readonly host: string;
	readonly holder: string;
	readonly fencingToken: number | undefined;
	readonly start: number;
}

/** Two tenures of a slot that overlapped: the earlier one still acted (or leased) `ms` into the later one. */
export interface Overlap {
	readonly slot: number;
	readonly earlier: TenureRef;
	readonly later: TenureRef;
	readonly ms: number;
}

/** A fencing token that did not grow where it must. */
interface TokenRegression {
	readonly slot: number;
	readonly where: "acquisitions" | "acts";
	readonly mono: number;
	readonly from: number | undefined;
	readonly to: number | undefined;
}

/** Count, median, max and min of a sample (ms). */
export interface Distribution {
	readonly n: number;
	readonly medianMs: number | undefined;
	readonly maxMs: number | undefined;
	readonly minMs: number | undefined;
}

/** What the checker found. `ok` is the verdict; `failures` says why not. */
export interface CheckReport {
	readonly ok: boolean;
	readonly failures: readonly string[];
	readonly slots: readonly number[];
	readonly tenures: number;
	/** Acquisitions after the first of each slot. */
	readonly changes: number;
	readonly changesPerSlot: Readonly<Record<string, number>>;
	readonly acts: {
		readonly total: number;
		readonly fromLogs: number;
		readonly fromAnswers: number;
		readonly tenuresWithActs: number;
		/** Acts of a tenure no `acquired` line announced (lost log lines, or a token not its own). */
		readonly orphans: number;
		/** 200 answers with no `work` line of the same holder and mono in the logs. */
		readonly answersWithoutLogLine: number;
		/** Acts whose `mono` is before their own tenure's `acquired` line (a failure). */
		readonly beforeAcquisition: number;
	};
	/** Overlapping pairs of tenures (acting intervals); the first 20 are listed in `overlaps`. */
	readonly overlapCount: number;
	readonly overlaps: readonly Overlap[];
	readonly maxOverlapMs: number;
	readonly leaseOverlapCount: number;
	readonly leaseOverlaps: readonly Overlap[];
	readonly tokenRegressionCount: number;
	readonly tokenRegressions: readonly TokenRegression[];
	readonly tenuresWithoutToken: number;
	/** Answers whose host `mono` is outside [sent, received] (1 ms slack): the clocks disagree. */
	readonly monoViolations: number;
	readonly faults: Readonly<Record<string, number>>;
	readonly hostExits: Readonly<Record<string, number>>;
	/** SIGKILL exits of processes no `kill` fault targeted: their own killer (or nobody else) ended them. */
	readonly killedByOwnKiller: number;
	readonly killerLines: number;
	readonly failoverAfterKill: Distribution;
	readonly failoverAfterStopLong: Distribution;
	/** Smallest (next acquisition − previous tenure's last act) over consecutive tenures of a slot. */
	readonly minGapMs: number | undefined;
	/** Smallest (next acquisition − previous lease end). */
	readonly minLeaseGapMs: number | undefined;
	/** Test-only mutants the hosts said they ran with (`unsafe-mutants` lines). */
	readonly mutants: readonly string[];
	/** From the first to the last record, ms. */
	readonly spanMs: number;
}

interface Tenure {
	readonly slot: number;
	readonly holder: string;
	readonly host: string;
	readonly pid: number | undefined;
	readonly token: number | undefined;
	readonly orphan: boolean;
	start: number;
	leaseEnd: number;
	lastAct: number | undefined;
	acts: number;
	/** First sign that it stopped leading: lost, released, problem, shutdown, killer, exit. */
	ended: number | undefined;
}

interface Act {
	readonly mono: number;
	readonly tenure: Tenure;
}

/** Overlaps and regressions listed in the report (all are counted). */
const LISTED = 20;

const num = (v: unknown): number | undefined => (typeof v === "number" ? v : undefined);
const str = (v: unknown): string | undefined => (typeof v === "string" ? v : undefined);

function distribution(values: readonly number[]): Distribution {
	if (values.length === 0) {
		return { n: 0, medianMs: undefined, maxMs: undefined, minMs: undefined };
	}
	const sorted = [...values].sort((a, b) => a - b);
	const mid = Math.floor(sorted.length / 2);
	const median =
		sorted.length % 2 === 1
			? (sorted[mid] as number)
			: ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
	return {
		n: sorted.length,
		medianMs: median,
		maxMs: sorted.at(-1) as number,
		minMs: sorted[0] as number,
	};
}

function smallest(values: readonly number[]): number | undefined {
	let min: number | undefined;
	for (const v of values) if (min === undefined || v < min) min = v;
	return min;
}

/** Feeds records in, one at a time (a run's logs can be large), then reports. */
export interface Checker {
	/** A line of `host`'s log, in file order. */
	addHostLine(host: string, record: HostRecord): void;
	addAnswer(answer: AnswerRecord): void;
	addEvent(event: EventRecord): void;
	report(): CheckReport;
}

/** What a run must show besides the absence of overlaps. */
export interface CheckerOptions {
	/**
	 * Fail a run in which no slot leader acted (default true). The `commands` workload runs in
	 * `--placement leases`, where no slot is led: its hosts' logs are still checked for overlaps of
	 * whatever they did, but an empty leadership record is expected there.
	 */
	readonly requireActs?: boolean;
}

/**
 * Creates a checker.
 *
 * @example
 * ```ts
 * const checker = createChecker();
 * checker.addHostLine("H1", { event: "acquired", mono: 10, pid: 1, slot: 1, holder: "a#1", fencingToken: 1, leaseLeftMs: 1600 });
 * checker.addHostLine("H1", { event: "work", mono: 20, pid: 1, slot: 1, holder: "a#1", fencingToken: 1 });
 * checker.report().ok; // true
 * ```
 */
export function createChecker(options: CheckerOptions = {}): Checker {
	const requireActs = options.requireActs ?? true;
	const tenures = new Map<string, Tenure>();
	/** `${host}|${pid}|${slot}` → its tenure (renewed and lost lines name no holder). */
	const byPidSlot = new Map<string, Tenure>();
	const byPid = new Map<string, Tenure[]>();
	const acts: Act[] = [];
	const workLines = new Set<string>();
	const answers: AnswerRecord[] = [];
	const events: EventRecord[] = [];
	const mutants = new Set<string>();
	let fromLogs = 0;
	let killerLines = 0;
	let first = Number.POSITIVE_INFINITY;
	let last = Number.NEGATIVE_INFINITY;
	const seen = (mono: number): void => {
		if (mono < first) first = mono;
		if (mono > last) last = mono;
	};

	const key = (slot: number, holder: string, token: number | undefined): string =>
		`${slot}|${holder}|${token ?? "none"}`;

	const tenureFor = (
		slot: number,
		holder: string,
		token: number | undefined,
		host: string,
		pid: number | undefined,
		mono: number,
	): Tenure => {
		const k = key(slot, holder, token);
		let t = tenures.get(k);
		if (t === undefined) {
			// Work of a tenure whose acquisition is not in the logs.
			t = {
				slot,
				holder,
				host,
				pid,
				token,
				orphan: true,
				start: mono,
				leaseEnd: Number.NEGATIVE_INFINITY,
				lastAct: undefined,
				acts: 0,
				ended: undefined,
			};
			tenures.set(k, t);
		}
		return t;
	};

	const act = (t: Tenure, mono: number): void => {
		t.acts++;
		if (t.lastAct === undefined || mono > t.lastAct) t.lastAct = mono;
		if (t.orphan && mono < t.start) t.start = mono;
		acts.push({ mono, tenure: t });
	};

	const end = (t: Tenure, mono: number): void => {
		if (t.ended === undefined || mono < t.ended) t.ended = mono;
	};

	return {
		addHostLine(host, r) {
			const mono = num(r.mono);
			if (mono === undefined) return;
			seen(mono);
			const pid = num(r.pid);
			const slot = num(r.slot);
			const ps = `${host}|${pid}|${slot}`;
			if (r.event !== undefined && ACT_EVENTS.includes(r.event)) {
				const holder = str(r.holder);
				if (slot === undefined || holder === undefined) return;
				fromLogs++;
				workLines.add(`${holder}|${mono}`);
				act(tenureFor(slot, holder, num(r.fencingToken), host, pid, mono), mono);
				return;
			}
			switch (r.event) {
				case "acquired": {
					const holder = str(r.holder);
					if (slot === undefined || holder === undefined) return;
					const token = num(r.fencingToken);
					const k = key(slot, holder, token);
					const t: Tenure = tenures.get(k) ?? {
						slot,
						holder,
						host,
						pid,
						token,
						orphan: false,
						start: mono,
						leaseEnd: mono + (num(r.leaseLeftMs) ?? 0),
						lastAct: undefined,
						acts: 0,
						ended: undefined,
					};
					tenures.set(k, t);
					byPidSlot.set(ps, t);
					byPid.set(`${host}|${pid}`, [...(byPid.get(`${host}|${pid}`) ?? []), t]);
					return;
				}
				case "renewed": {
					const t = byPidSlot.get(ps);
					const left = num(r.leaseLeftMs);
					if (t !== undefined && left !== undefined) t.leaseEnd = Math.max(t.leaseEnd, mono + left);
					return;
				}
				case "lost":
				case "released": {
					const t = byPidSlot.get(ps);
					if (t !== undefined) end(t, mono);
					return;
				}
				case "killer":
					killerLines++;
					for (const t of byPid.get(`${host}|${pid}`) ?? []) end(t, mono);
					return;
				case "problem":
				case "shutdown-started":
					for (const t of byPid.get(`${host}|${pid}`) ?? []) end(t, mono);
					return;
				case "unsafe-mutants":
					for (const m of Array.isArray(r.mutants) ? r.mutants : []) mutants.add(String(m));
					return;
			}
		},

		addAnswer(a) {
			seen(a.body.mono);
			answers.push(a);
			const token = a.body.fencingToken ?? undefined;
			act(
				tenureFor(a.body.slot, a.body.holder, token, a.host, undefined, a.body.mono),
				a.body.mono,
			);
		},

		addEvent(e) {
			seen(e.mono);
			events.push(e);
		},

		report() {
			for (const e of events) {
				if (e.event !== "host-exit") continue;
				for (const t of byPid.get(`${String(e.host)}|${String(e.pid)}`) ?? []) end(t, e.mono);
			}
			const all = [...tenures.values()];
			const slots = [...new Set(all.map((t) => t.slot))].sort((a, b) => a - b);
			// The lease as the process held it: cut at the first sign that it stopped leading.
			const leaseEnd = (t: Tenure): number =>
				t.ended === undefined ? t.leaseEnd : Math.min(t.leaseEnd, t.ended);
			const ref = (t: Tenure): TenureRef => ({
				slot: t.slot,
				host: t.host,
				holder: t.holder,
				fencingToken: t.token,
				start: t.start,
			});
			const overlaps: Overlap[] = [];
			const leaseOverlaps: Overlap[] = [];
			const regressions: TokenRegression[] = [];
			const changesPerSlot: Record<string, number> = {};
			const gaps: number[] = [];
			const leaseGaps: number[] = [];
			let overlapCount = 0;
			let leaseOverlapCount = 0;
			let regressionCount = 0;
			let maxOverlapMs = 0;
			const bySlot = new Map<number, Tenure[]>();
			for (const slot of slots) {
				const ts = all
					.filter((t) => t.slot === slot)
					.sort((a, b) => a.start - b.start || (a.token ?? 0) - (b.token ?? 0));
				bySlot.set(slot, ts);
				changesPerSlot[slot] = Math.max(0, ts.length - 1);
				for (let j = 1; j < ts.length; j++) {
					const later = ts[j] as Tenure;
					for (let i = 0; i < j; i++) {
						const earlier = ts[i] as Tenure;
						if (earlier.lastAct !== undefined && earlier.lastAct >= later.start) {
							const ms = earlier.lastAct - later.start;
							overlapCount++;
							maxOverlapMs = Math.max(maxOverlapMs, ms);
							if (overlaps.length < LISTED) {
								overlaps.push({ slot, earlier: ref(earlier), later: ref(later), ms });
							}
						}
						if (leaseEnd(earlier) > later.start) {
							leaseOverlapCount++;
							if (leaseOverlaps.length < LISTED) {
								leaseOverlaps.push({
									slot,
									earlier: ref(earlier),
									later: ref(later),
									ms: leaseEnd(earlier) - later.start,
								});
							}
						}
					}
					const prev = ts[j - 1] as Tenure;
					if (prev.lastAct !== undefined) gaps.push(later.start - prev.lastAct);
					if (Number.isFinite(prev.leaseEnd)) leaseGaps.push(later.start - leaseEnd(prev));
					if (prev.token !== undefined && later.token !== undefined && later.token <= prev.token) {
						regressionCount++;
						if (regressions.length < LISTED) {
							regressions.push({
								slot,
								where: "acquisitions",
								mono: later.start,
								from: prev.token,
								to: later.token,
							});
						}
					}
				}
				const slotActs = acts.filter((a) => a.tenure.slot === slot).sort((a, b) => a.mono - b.mono);
				for (let k = 1; k < slotActs.length; k++) {
					const a = (slotActs[k - 1] as Act).tenure;
					const b = slotActs[k] as Act;
					if (a === b.tenure || a.token === undefined || b.tenure.token === undefined) continue;
					if (b.tenure.token <= a.token) {
						regressionCount++;
						if (regressions.length < LISTED) {
							regressions.push({
								slot,
								where: "acts",
								mono: b.mono,
								from: a.token,
								to: b.tenure.token,
							});
						}
					}
				}
			}

			const failover = (kind: string): number[] => {
				const out: number[] = [];
				for (const e of events) {
					if (e.event !== "fault" || e.kind !== kind) continue;
					for (const t of byPid.get(`${String(e.host)}|${String(e.pid)}`) ?? []) {
						if (t.start > e.mono || (t.ended !== undefined && t.ended < e.mono)) continue;
						const next = (bySlot.get(t.slot) ?? []).find((n) => n.start > e.mono && n !== t);
						if (next !== undefined) out.push(next.start - e.mono);
					}
				}
				return out;
			};

			const faults: Record<string, number> = {};
			const hostExits: Record<string, number> = {};
			for (const e of events) {
				if (e.event === "fault") faults[String(e.kind)] = (faults[String(e.kind)] ?? 0) + 1;
				if (e.event === "host-exit") {
					const how = e.signal ? String(e.signal) : `code ${String(e.code)}`;
					hostExits[how] = (hostExits[how] ?? 0) + 1;
				}
			}
			const killedByUs = new Set(
				events
					.filter((e) => e.event === "fault" && e.kind === "kill")
					.map((e) => `${String(e.host)}|${String(e.pid)}`),
			);
			const killedByOwnKiller = events.filter(
				(e) =>
					e.event === "host-exit" &&
					e.signal === "SIGKILL" &&
					!killedByUs.has(`${String(e.host)}|${String(e.pid)}`),
			).length;
			let monoViolations = 0;
			let answersWithoutLogLine = 0;
			for (const a of answers) {
				if (a.body.mono < a.sent - 1 || a.body.mono > a.received + 1) monoViolations++;
				if (!workLines.has(`${a.body.holder}|${a.body.mono}`)) answersWithoutLogLine++;
			}
			const orphans = all.filter((t) => t.orphan).reduce((n, t) => n + t.acts, 0);
			// A tenure's acting interval starts at its acquisition: an act before it (an answer whose
			// host mono is earlier than the acquired line of its token) is outside any interval the
			// overlap check compares (found by review: such an act, inside the previous leader's
			// lease, passed). An orphan's start is its first act, so it cannot have one.
			const early = acts.filter((a) => !a.tenure.orphan && a.mono < a.tenure.start);
			const earliest = early.reduce((m, a) => Math.max(m, a.tenure.start - a.mono), 0);
			const tenuresWithoutToken = all.filter((t) => t.token === undefined).length;

			const failures: string[] = [];
			if (overlapCount > 0) {
				failures.push(
					`${overlapCount} pair(s) of incarnations acted at overlapping times (longest ${maxOverlapMs.toFixed(1)} ms)`,
				);
			}
			if (leaseOverlapCount > 0) failures.push(`${leaseOverlapCount} pair(s) of leases overlapped`);
			if (regressionCount > 0) failures.push(`${regressionCount} fencing-token regression(s)`);
			if (orphans > 0) {
				failures.push(`${orphans} act(s) of a tenure with no acquired line of that token`);
			}
			if (early.length > 0)
				failures.push(
					`${early.length} act(s) before their own tenure's acquisition (up to ${earliest.toFixed(1)} ms before)`,
				);
			if (tenuresWithoutToken > 0)
				failures.push(`${tenuresWithoutToken} tenure(s) without a token`);
			if (monoViolations > 0) {
				failures.push(`${monoViolations} answer(s) whose host mono lies outside the request`);
			}
			if (requireActs && acts.length === 0)
				failures.push("no accepted work at all: nothing was checked");
			return {
				ok: failures.length === 0,
				failures,
				slots,
				tenures: all.length,
				changes: Object.values(changesPerSlot).reduce((a, b) => a + b, 0),
				changesPerSlot,
				acts: {
					total: acts.length,
					fromLogs,
					fromAnswers: answers.length,
					tenuresWithActs: all.filter((t) => t.acts > 0).length,
					orphans,
					answersWithoutLogLine,
					beforeAcquisition: early.length,
				},
				overlapCount,
				overlaps,
				maxOverlapMs,
				leaseOverlapCount,
				leaseOverlaps,
				tokenRegressionCount: regressionCount,
				tokenRegressions: regressions,
				tenuresWithoutToken,
				monoViolations,
				faults,
				hostExits,
				killedByOwnKiller,
				killerLines,
				failoverAfterKill: distribution(failover("kill")),
				failoverAfterStopLong: distribution(failover("stop-long")),
				minGapMs: smallest(gaps),
				minLeaseGapMs: smallest(leaseGaps),
				mutants: [...mutants].sort(),
				spanMs: Number.isFinite(first) ? last - first : 0,
			};
		},
	};
}
