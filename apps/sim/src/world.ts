// One simulated run: a scheduler over MockClock, the holders of one partition (each a cp process),
// the lease and its placement driver, the clients, the faults, and the final check.
import { checkCommandHistory } from "@vvm/chaos/src/command-checker.ts";
import type { Clock, TimerHandle } from "@vvm/clock";
import { MockClock } from "@vvm/clock";
import type { AppPartition, CommandProcessor, CommandResult } from "@vvm/cp";
import { CpError, createCommandProcessor } from "@vvm/cp";
import { createSequencer } from "@vvm/isequencer";
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import type { OpClass } from "./dyn-probe.ts";
import type { Profile } from "./profiles.ts";
import { Rng } from "./rng.ts";
import type { Fate, SimHost, SimProc } from "./storage.ts";
import { SimLink } from "./storage.ts";

const APP = 1;
const TABLE = "app1pkg.Customer";
const LEASE_MS = 3_000;
const RENEW_MS = 1_000;
/** The placement driver waits this long past a lease's deadline before granting it again. */
const SKEW_MS = 100;
const CLIENT_TIMEOUT_MS = 6_000;
const MAX_ATTEMPTS = 8;
/** Virtual time after which a run that has not finished counts as stuck. */
const MAX_VIRTUAL_MS = 15 * 60_000;
const MAX_STEPS = 200_000;
/** MockClock's start (wall and monotonic), ms. */
export const START = 1_700_000_000_000;

/** Per-request fault probabilities (each run draws its own from these ranges). */
interface FaultRates {
	readonly refused: number;
	readonly lost: number;
	readonly late: number;
	/** A delay of 200..3 000 ms instead of 1..20 ms (reorders, lands after leases end). */
	readonly slow: number;
	/**
	 * Per request, the chance that a network blip starts: for 20..400 ms most writes sent go
	 * `late` together (a link that stalls takes every request on it, not one at random), so
	 * several writes in a row, a partition's pipelined ones among them, may land after their
	 * answers were given up. Independent `late` faults almost never hit two in a row.
	 */
	readonly blip: number;
}

/** Options of one run. */
export interface RunOptions {
	readonly seed: number;
	readonly profile: Profile;
	/** Client operations in the run; default 12..24 from the seed. */
	readonly ops?: number;
	/** Fault decisions (by number) turned into "no fault": the shrinker's knob. */
	readonly suppress?: ReadonlySet<number>;
	/** No process faults (pauses, crashes, lease moves) beyond those numbers; for the shrinker. */
	readonly keepTrace?: boolean;
	/** The mutant: cp's `unsafeUnfenced`. */
	readonly unsafeUnfenced?: boolean;
	/**
	 * The liveness mutant: a host build whose partition never serves (a grant is never deployed).
	 * Nothing is acknowledged and the partition never recovers: the seed is `stuck`, with every
	 * safety check passing. A batch's verdict (`livenessProblems` in `runner.ts`) must fail it;
	 * `test/sim.test.ts` shows that it does.
	 */
	readonly neverServe?: boolean;
	/**
	 * Overlapping grants (the fault that gives two holders a valid lease at once), in half the
	 * runs; off unless set: it still finds open defects on "ordered" fencing (README).
	 */
	readonly overlaps?: boolean;
	/** Force a trust level (default: from the seed). */
	readonly trustLevel?: 0 | 1 | 2;
	/**
	 * cp's `pipelineDepth` (default 1). Above 1, conditional batches are always on where the profile
	 * has them (where pipelining takes effect, at every level), instead of drawn.
	 */
	readonly pipelineDepth?: number;
}

/** One fault the run injected, for the printed schedule. */
interface FaultRecord {
	readonly n: number;
	readonly at: number;
	readonly what: string;
}

/** What a run found. */
export interface RunResult {
	readonly seed: number;
	readonly ok: boolean;
	readonly anomalies: readonly string[];
	/** FNV-1a of every scheduled step: equal seeds give equal hashes. */
	readonly traceHash: string;
	readonly faults: readonly FaultRecord[];
	readonly config: string;
	readonly steps: number;
	readonly virtualMs: number;
	readonly stuck: boolean;
	readonly trace?: readonly string[];
	/** What the fault layer saw behind the anomalies (see World.cause). */
	readonly causes: readonly string[];
	readonly stats: { ops: number; acked: number; unknown: number; notWritten: number };
}

interface Event {
	readonly at: number;
	readonly seq: number;
	readonly what: string;
	readonly run: () => void | Promise<void>;
	/** A storage request's step (the drain at the end waits for these). */
	readonly storage: boolean;
	/** Dropped from the queue without running (a client's timeout once it has its answer). */
	cancelled?: boolean;
}

/** One process of a holder: a cp instance over its own link. A restart is a new incarnation. */
interface Incarnation extends SimProc {
	readonly tag: string;
	readonly holder: number;
	dead: boolean;
	pausedUntil: number;
	cp?: CommandProcessor;
	partition?: AppPartition | undefined;
	/** The epoch its partition was last deployed with. */
	epoch?: bigint;
}

interface Grant {
	readonly holder: number;
	readonly epoch: bigint;
	deadline: number;
	/** The placement driver stopped its renewals (it moves the lease). */
	revoked: boolean;
}

type OpOutcome = "ok" | "rejected" | "not-written" | "unknown";

interface OpRecord {
	client: number;
	op: string;
	kind: "create" | "update";
	wsid: number;
	id?: number;
	value?: number;
	outcome: OpOutcome;
	result?: { CurrentWLogOffset: number; NewIDs: Record<string, number>; plogOffset: number };
	okAnswers: string[];
	attempts: string[];
	replays: number;
	startMono: number;
	endMono: number;
}

/** The world of one run. */
class World implements SimHost {
	readonly clock: MockClock;
	readonly faultRng: Rng;
	readonly #delayRng: Rng;
	readonly #procRng: Rng;
	readonly #clientRng: Rng;
	readonly #opts: RunOptions;
	readonly #queue: Event[] = [];
	#seq = 0;
	#hash = 0x811c9dc5;
	readonly #trace: string[] | undefined;
	#faultN = 0;
	readonly faults: FaultRecord[] = [];
	faultsOn = true;
	/** Causes the fault layer saw (driver-contract breaches, a deposed holder's numbers landing). */
	readonly causes = new Set<string>();
	/** The highest epoch granted so far. */
	grantedEpoch = 0n;
	readonly rates: FaultRates;
	steps = 0;

	constructor(opts: RunOptions) {
		this.#opts = opts;
		const root = new Rng(opts.seed);
		this.faultRng = root.fork(1);
		this.#delayRng = root.fork(2);
		this.#procRng = root.fork(3);
		this.#clientRng = root.fork(4);
		const r = root.fork(5);
		this.rates = {
			refused: r.chance(0.5) ? r.next() * 0.04 : 0,
			lost: r.chance(0.6) ? r.next() * 0.06 : 0,
			late: r.chance(0.5) ? r.next() * 0.04 : 0,
			slow: r.next() * 0.15,
			blip: r.chance(0.4) ? r.next() * 0.01 : 0,
		};
		this.clock = new MockClock(START);
		this.#trace = opts.keepTrace ? [] : undefined;
	}

	now(): number {
		return this.clock.monotonic();
	}

	/** Records a step in the trace hash (and the kept trace). */
	note(line: string): void {
		let h = Math.imul(this.#hash ^ (this.now() % 1_000_000_007), 0x01000193);
		for (let i = 0; i < line.length; i++) h = Math.imul(h ^ line.charCodeAt(i), 0x01000193);
		this.#hash = h >>> 0;
		this.#trace?.push(`${this.now() - START} ${line}`);
	}

	get traceHash(): string {
		return this.#hash.toString(16).padStart(8, "0");
	}

	get trace(): string[] | undefined {
		return this.#trace;
	}

	/** Schedules `run` at monotonic time `at` (not before now). */
	at(
		at: number,
		what: string,
		run: () => void | Promise<void>,
		storage = false,
	): { cancel(): void } {
		const e: Event = { at: Math.max(at, this.now()), seq: this.#seq++, what, run, storage };
		this.#queue.push(e);
		return {
			cancel: () => {
				e.cancelled = true;
			},
		};
	}

	/** A normal request/answer leg: 1..20 ms, sometimes 200..3 000 ms (when faults are on). */
	delay(): number {
		const d = this.#delayRng.int(1, 20);
		const slow = this.#delayRng.next();
		if (!this.faultsOn || slow >= this.rates.slow) return d;
		const n = this.#decide("slow");
		if (n === undefined) return d;
		const long = this.#delayRng.int(200, 3_000);
		this.#record(n, `slow leg ${long} ms`);
		return long;
	}

	/**
	 * How long after the driver's timeout a `late` write lands: a normal leg; in runs with blips
	 * (see {@link FaultRates.blip}) half the time anywhere in the next 1.5 s instead, so that late
	 * writes also land in the middle of what follows their timeouts (a re-actualization, the next
	 * commands), not only right after them.
	 */
	lateDelay(): number {
		if (this.rates.blip === 0 || this.faultRng.next() < 0.5) return this.delay() + 1;
		return this.faultRng.int(1, 1_500);
	}

	shortDelay(): number {
		return this.#delayRng.int(1, 10);
	}

	/** A fault decision: its number, or `undefined` when the shrinker suppressed it. */
	#decide(_kind: string): number | undefined {
		const n = this.#faultN++;
		return this.#opts.suppress?.has(n) ? undefined : n;
	}

	#record(n: number, what: string): void {
		this.faults.push({ n, at: this.now(), what });
		this.note(`FAULT#${n} ${what}`);
	}

	/** The end of the network blip in progress (monotonic ms); see {@link FaultRates.blip}. */
	#blipUntil = 0;

	/** `true` when this write goes late with the blip in progress (or one that starts now). */
	#inBlip(cls: OpClass): boolean {
		// Draws only when blips are on, so runs without them keep their sequences.
		if (this.rates.blip === 0) return false;
		const start = this.faultRng.next();
		const late = this.faultRng.next();
		if (this.now() >= this.#blipUntil && start < this.rates.blip) {
			const n = this.#decide("blip");
			if (n !== undefined) {
				const ms = this.faultRng.int(20, 400);
				this.#blipUntil = this.now() + ms;
				this.#record(n, `network blip ${ms} ms`);
			}
		}
		return cls !== "get" && this.now() < this.#blipUntil && late < 0.7;
	}

	/** The raw outcome of one request. */
	drawFate(cls: OpClass, name: string, proc: Incarnation): Fate {
		const x = this.faultRng.next();
		if (!this.faultsOn) return "ok";
		const r = this.rates;
		if (this.#inBlip(cls)) {
			const n = this.#decide("late");
			if (n !== undefined) {
				this.#record(n, `late ${name} of ${proc.tag} (blip)`);
				return "late";
			}
		}
		const fate: Fate =
			x < r.refused
				? "refused"
				: x < r.refused + r.lost
					? "lost"
					: x < r.refused + r.lost + (cls === "get" ? 0 : r.late)
						? "late"
						: "ok";
		if (fate === "ok") return "ok";
		const n = this.#decide(fate);
		if (n === undefined) return "ok";
		this.#record(n, `${fate} ${name} of ${proc.tag}`);
		return fate;
	}

	readonly #versions = new Map<string, number>();

	/** A write landed on `key` (pKey|cCols). */
	bump(key: string): void {
		this.#versions.set(key, (this.#versions.get(key) ?? 0) + 1);
	}

	/** How many writes landed on `key`. */
	version(key: string): number {
		return this.#versions.get(key) ?? 0;
	}

	/** Records a cause (once per kind and process). */
	cause(line: string): void {
		if (this.causes.has(line)) return;
		this.causes.add(line);
		this.note(`CAUSE ${line}`);
	}

	/**
	 * A write of `proc` lands: one of the sequencer's numbers (`@vvm/seqstorage`'s prefixes 2, 3)
	 * written by a holder whose epoch is below the newest grant is a cause worth naming.
	 */
	observeWrite(proc: Incarnation, pKeys: readonly Uint8Array[], _fenced: boolean): void {
		if (proc.epoch === undefined || proc.epoch >= this.grantedEpoch) return;
		for (const p of pKeys) {
			const prefix = p.length >= 4 ? new DataView(p.buffer, p.byteOffset).getUint32(0) : -1;
			if (prefix === 2 || prefix === 3) {
				this.cause(
					`deposed-numbers: ${proc.tag} (epoch ${proc.epoch}) wrote the sequencer's numbers unfenced after epoch ${this.grantedEpoch} was granted`,
				);
				return;
			}
		}
	}

	/** Runs `fn` in `proc` when it runs: now, on resume, or never (crashed). */
	deliver(proc: Incarnation, fn: () => void): void {
		if (proc.dead) return;
		if (proc.pausedUntil > this.now()) {
			this.at(proc.pausedUntil, `resume delivery to ${proc.tag}`, () => this.deliver(proc, fn));
			return;
		}
		fn();
	}

	/** A clock for `proc`: timers fire only while it runs. */
	clockOf(proc: Incarnation): Clock {
		const base = this.clock;
		const clock: Clock = {
			now: () => base.now(),
			monotonic: () => base.monotonic(),
			setTimer: (delayMs: number, callback: () => void): TimerHandle =>
				base.setTimer(delayMs, () => this.deliver(proc, callback)),
			sleep: (delayMs: number, signal?: AbortSignal) =>
				new Promise<void>((resolve, reject) => {
					if (signal?.aborted) return reject(signal.reason);
					const t = clock.setTimer(delayMs, () => resolve());
					signal?.addEventListener(
						"abort",
						() => {
							t.cancel();
							reject(signal.reason);
						},
						{ once: true },
					);
				}),
		};
		return clock;
	}

	/**
	 * Runs the scheduler until `done()` or nothing is left: drains the microtasks, then moves
	 * the clock to the next event or timer and runs it.
	 */
	async runUntil(done: () => boolean): Promise<boolean> {
		for (;;) {
			await new Promise<void>((r) => setImmediate(r));
			if (done()) return true;
			if (++this.steps > MAX_STEPS || this.now() > MAX_VIRTUAL_MS + START) return false;
			let best = -1;
			for (let i = 0; i < this.#queue.length; i++) {
				const e = this.#queue[i] as Event;
				if (e.cancelled) {
					this.#queue.splice(i--, 1);
					continue;
				}
				const b = this.#queue[best] as Event | undefined;
				if (b === undefined || e.at < b.at || (e.at === b.at && e.seq < b.seq)) best = i;
			}
			const next = this.#queue[best];
			const timer = this.clock.nextDeadline();
			if (timer !== undefined && (next === undefined || timer <= next.at)) {
				this.clock.advance(timer - this.now());
				this.note("timers");
				continue;
			}
			if (next === undefined) return false;
			this.#queue.splice(best, 1);
			if (next.at > this.now()) this.clock.advance(next.at - this.now());
			this.note(next.what);
			await next.run();
		}
	}

	/** Storage requests not yet applied or answered. */
	get pendingStorage(): number {
		let n = 0;
		for (const e of this.#queue) if (e.storage) n++;
		return n;
	}

	get procRng(): Rng {
		return this.#procRng;
	}

	get clientRng(): Rng {
		return this.#clientRng;
	}

	/** A process fault decision (pause, crash, move): its number, or undefined when suppressed. */
	procFault(what: string): boolean {
		const n = this.#decide("proc");
		if (n === undefined || !this.faultsOn) return false;
		this.#record(n, what);
		return true;
	}
}

const errorOutcome = (e: unknown): { status: string; committed: "no" | "yes" | "unknown" } => {
	if (!CpError.is(e)) return { status: "500", committed: "unknown" };
	if (e.committed !== "no") return { status: "500", committed: e.committed };
	switch (e.code) {
		case "CP_BAD_REQUEST":
			return { status: "400", committed: "no" };
		case "CP_NOT_FOUND":
			return { status: "404", committed: "no" };
		case "CP_IDEMPOTENCY_KEY_IN_FLIGHT":
			return { status: "409", committed: "no" };
		case "CP_IDEMPOTENCY_KEY_REUSED":
			return { status: "422", committed: "no" };
		default:
			return { status: "503", committed: "no" };
	}
};

/** Runs one seed to the end and checks it. */
export async function runSeed(opts: RunOptions): Promise<RunResult> {
	const w = new World(opts);
	const profile = opts.profile;
	const cfgRng = new Rng(opts.seed ^ 0x5bd1e995);
	const holders = cfgRng.chance(0.5) ? 3 : 2;
	const trustLevel = opts.trustLevel ?? (cfgRng.int(0, 2) as 0 | 1 | 2);
	const coalesceWrites = cfgRng.chance(0.5);
	const pipelineDepth = opts.pipelineDepth ?? 1;
	// Drawn exactly as before (the same seeds replay the same runs at depth 1), then forced on.
	// Level 2 takes conditional batches only pipelined (cp's event writer, `pipelined`).
	const conditionalBatches =
		profile.conditionalBatches && (trustLevel !== 2 || pipelineDepth > 1)
			? cfgRng.chance(0.5) || pipelineDepth > 1
			: false;
	const atomicBatches =
		profile.fencing === "epoch" && trustLevel === 2 ? cfgRng.chance(0.5) : false;
	const workspaces = [1001, 1002, 1003].slice(0, cfgRng.int(1, 3));
	// Pipelined: more clients at once, so that commands of the partition overlap more often.
	const nClients = cfgRng.int(2, 3) + (pipelineDepth > 1 ? 3 : 0);
	// Small caches: cache misses read the storage (more interleavings), and lru-cache allocates
	// its whole capacity up front.
	const lruCacheSize = cfgRng.pick([2, 16, 256]);
	const budget = opts.ops ?? cfgRng.int(8, 20);
	const config = `profile=${profile.name} holders=${holders} level=${trustLevel} coalesce=${coalesceWrites} conditionalBatches=${conditionalBatches} atomicBatches=${atomicBatches} workspaces=${workspaces.length} clients=${nClients} ops=${budget} cache=${lruCacheSize}${pipelineDepth > 1 ? ` pipelineDepth=${pipelineDepth}` : ""}${opts.unsafeUnfenced ? " MUTANT=unsafeUnfenced" : ""}${opts.neverServe ? " MUTANT=neverServe" : ""}`;
	w.note(config);

	const base = createMemTTLStorage({ clock: w.clock, fencing: profile.fencing });
	const procs: Incarnation[] = [];
	const current: Incarnation[] = [];
	const start = (h: number): Incarnation => {
		const proc: Incarnation = {
			tag: `h${h}.${procs.filter((p) => p.holder === h).length}`,
			holder: h,
			dead: false,
			pausedUntil: 0,
		};
		const seqRng = w.procRng.fork(procs.length + 10);
		proc.cp = createCommandProcessor({
			storage: new SimLink(w, proc, base, profile),
			appId: APP,
			partitions: 1,
			trustLevel,
			clock: w.clockOf(proc),
			coalesceWrites,
			conditionalBatches,
			atomicBatches,
			sequencerRetry: { baseDelayMs: 50, maxDelayMs: 400 },
			retryAfterMs: 200,
			sequencer: { lruCacheSize },
			pipelineDepth,
			...(opts.unsafeUnfenced ? { unsafeUnfenced: true } : {}),
			createSequencer: (params, storage, o) =>
				createSequencer(params, storage, { ...o, random: () => seqRng.next() }),
		});
		procs.push(proc);
		current[h] = proc;
		w.note(`start ${proc.tag}`);
		return proc;
	};
	for (let h = 0; h < holders; h++) start(h);

	// --- the lease and its placement driver -------------------------------------------------
	let grant: Grant | undefined;
	let epoch = 0n;
	let moving = false;
	let readyGrant: Grant | undefined;
	const grantTo = (h: number): void => {
		let proc = current[h] as Incarnation;
		if (proc.dead) proc = start(h);
		epoch += 10n;
		w.grantedEpoch = epoch;
		const g: Grant = { holder: h, epoch, deadline: w.now() + LEASE_MS, revoked: false };
		grant = g;
		w.note(`grant epoch ${epoch} to ${proc.tag}`);
		const deployNow = async (): Promise<void> => {
			if (proc.dead || grant !== g) return;
			// The host closes what it still serves of the partition first.
			proc.partition = undefined;
			await proc.cp?.undeploy(0).catch(() => {});
			if (proc.dead || grant !== g) return;
			const valid = (): boolean => w.now() < g.deadline;
			if (opts.neverServe) return; // the liveness mutant: the grant is never deployed
			try {
				const p = proc.cp?.deploy(0, { lease: { epoch: g.epoch, valid } });
				proc.partition = p;
				proc.epoch = g.epoch;
				p?.ready().then(
					() => {
						if (proc.partition === p) readyGrant = g;
					},
					() => {},
				);
			} catch (e) {
				w.note(`deploy failed on ${proc.tag}: ${String(e)}`);
				w.at(w.now() + 200, `deploy again on ${proc.tag}`, () =>
					w.deliver(proc, () => void deployNow()),
				);
			}
		};
		w.deliver(proc, () => void deployNow());
		// Renewals by the holder while it runs and the driver lets it.
		const renew = (): void => {
			if (grant !== g || g.revoked || proc.dead || finished) return;
			if (proc.pausedUntil > w.now() || w.now() >= g.deadline) return; // expired: the PD acts
			g.deadline = w.now() + LEASE_MS;
			w.at(w.now() + RENEW_MS, "renew", renew);
		};
		w.at(w.now() + RENEW_MS, "renew", renew);
		// The host undeploys the partition once its own lease ended.
		const undeployCheck = (): void => {
			if (proc.dead) return;
			if (w.now() < g.deadline) {
				w.at(g.deadline + w.procRng.int(0, 1_500), "undeploy check", undeployCheck);
				return;
			}
			w.deliver(proc, () => {
				const p = proc.partition;
				// Only the partition deployed under this grant (a later grant may have redeployed it).
				if (p === undefined || grant === g || proc.epoch !== g.epoch) return;
				proc.partition = undefined;
				w.note(`undeploy on ${proc.tag}`);
				void p.close().catch(() => {});
			});
		};
		w.at(g.deadline, "undeploy check", undeployCheck);
	};
	/** Moves the lease: stop renewing, wait out the deadline, grant to `to`. */
	const move = (to: number): void => {
		if (moving) return;
		moving = true;
		const g = grant;
		if (g !== undefined) g.revoked = true;
		const wait = (): void => {
			if (g !== undefined && w.now() < g.deadline + SKEW_MS) {
				w.at(g.deadline + SKEW_MS, "await expiry", wait);
				return;
			}
			moving = false;
			grantTo(to);
		};
		wait();
	};
	const others = (h: number): number[] =>
		[...Array(holders).keys()].filter((x) => x !== h && !(current[x] as Incarnation).dead);
	// The placement driver: a lease that expired (its holder paused or crashed) goes elsewhere.
	const pdCheck = (): void => {
		if (grant !== undefined && !moving && w.now() >= grant.deadline + SKEW_MS) {
			const alive = others(grant.holder);
			move(alive.length > 0 ? w.procRng.pick(alive) : grant.holder);
		}
		if (!finished) w.at(w.now() + 1_000, "pd check", pdCheck);
	};
	grantTo(0);
	let finished = false;
	w.at(w.now() + 500, "pd check", pdCheck);

	// --- process faults ----------------------------------------------------------------------
	const procFaults = (): void => {
		if (finished || !w.faultsOn) return;
		const rng = w.procRng;
		const h = rng.int(0, holders - 1);
		const proc = current[h] as Incarnation;
		const kind = rng.int(0, 9);
		const ms = rng.int(500, 6_000);
		if (kind <= 3) {
			if (!proc.dead && w.procFault(`pause ${proc.tag} for ${ms} ms`))
				proc.pausedUntil = Math.max(proc.pausedUntil, w.now() + ms);
		} else if (kind <= 5) {
			if (!proc.dead && others(h).length > 0 && w.procFault(`crash ${proc.tag}`)) {
				proc.dead = true;
				w.at(w.now() + ms, `restart h${h}`, () => {
					if ((current[h] as Incarnation).dead) start(h);
				});
			}
		} else if (grant !== undefined && !moving) {
			const to = others(grant.holder);
			if (to.length > 0) {
				const target = rng.pick(to);
				if (w.procFault(`move lease from h${grant.holder} to h${target}`)) move(target);
			}
		}
		w.at(w.now() + rng.int(300, 4_000), "process faults", procFaults);
	};
	w.at(w.now() + w.procRng.int(300, 3_000), "process faults", procFaults);
	// Overlapping grants (a --num-vvm change, a switch between placements): the lease moves at
	// once, and the old holder serves on until its own deadline, not knowing. Only the fence then
	// stands between them. From its own random stream, so earlier seeds keep their draws. Opt-in
	// (`--overlaps`) until the defects it still finds on "ordered" fencing are closed (README).
	const overlapRng = new Rng(opts.seed ^ 0x6a09e667);
	if (opts.overlaps === true && overlapRng.chance(0.5)) {
		for (let i = overlapRng.int(1, 2); i > 0; i--)
			w.at(w.now() + overlapRng.int(300, 8_000), "overlapping grant", () => {
				if (finished || !w.faultsOn || grant === undefined || moving) return;
				const old = grant;
				const to = others(old.holder);
				if (to.length === 0) return;
				const target = overlapRng.pick(to);
				if (
					!w.procFault(
						`overlapping grant: h${target} takes the lease while h${old.holder} serves on until its deadline`,
					)
				)
					return;
				old.revoked = true; // no more renewals; its valid() holds until its deadline
				grantTo(target);
			});
	}

	// --- clients ------------------------------------------------------------------------------
	const ops: OpRecord[] = [];
	const anomalies: string[] = [];
	let issued = 0;
	let running = nClients;
	const registers: Array<Array<{ wsid: number; id: number; value: number }>> = [];
	let nextValue = 1;
	const client = async (c: number): Promise<void> => {
		const rng = w.clientRng.fork(c);
		registers[c] = [];
		const mine = registers[c] as Array<{ wsid: number; id: number; value: number }>;
		let target = 0;
		let n = 0;
		while (issued < budget) {
			issued++;
			const opKey = `c${c}o${n++}`;
			const update = mine.length > 0 && rng.chance(0.4) ? rng.pick(mine) : undefined;
			const wsid = update?.wsid ?? rng.pick(workspaces);
			const value = update === undefined ? undefined : nextValue++;
			const rec: OpRecord = {
				client: c,
				op: opKey,
				kind: update === undefined ? "create" : "update",
				wsid,
				...(update === undefined ? {} : { id: update.id, value: value as number }),
				outcome: "unknown",
				okAnswers: [],
				attempts: [],
				replays: 0,
				startMono: w.now(),
				endMono: 0,
			};
			ops.push(rec);
			let sawUnknown = false;
			for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
				if (attempt > 0) {
					w.note(`client ${c} backs off`);
					await w.clock.sleep(rng.int(50, 600));
					w.note(`client ${c} retries`);
				}
				// Locate: the placement's holder, sometimes a stale one.
				if (grant !== undefined && rng.chance(0.85)) target = grant.holder;
				else target = rng.int(0, holders - 1);
				const proc = current[target] as Incarnation;
				const answer = await new Promise<
					{ ok: CommandResult } | { status: string; committed: "no" | "yes" | "unknown" }
				>((resolve) => {
					let settled = false;
					const done = (
						a: { ok: CommandResult } | { status: string; committed: "no" | "yes" | "unknown" },
					): void => {
						if (settled) return;
						settled = true;
						timeout.cancel();
						resolve(a);
					};
					const timeout = w.at(w.now() + CLIENT_TIMEOUT_MS, `client ${c} timeout`, () =>
						done({ status: "timeout", committed: "unknown" }),
					);
					const reqDelay = w.delay();
					w.at(w.now() + reqDelay, `request ${opKey} to ${proc.tag}`, () => {
						if (proc.dead) {
							w.at(w.now() + w.delay(), `net error ${opKey}`, () =>
								done({ status: "net", committed: "unknown" }),
							);
							return;
						}
						w.deliver(proc, () => {
							const p = proc.partition;
							if (p === undefined) {
								w.at(w.now() + w.delay(), `421 ${opKey}`, () =>
									done({ status: "421", committed: "no" }),
								);
								return;
							}
							const req =
								update === undefined
									? p.createRecord({
											wsid,
											table: TABLE,
											fields: { name: opKey },
											idempotencyKey: opKey,
										})
									: p.updateRecord({
											wsid,
											table: TABLE,
											id: update.id,
											fields: { email: `${opKey}:${value}` },
											idempotencyKey: opKey,
										});
							void req
								.then(
									(r) => ({ ok: r }),
									(e: unknown) => errorOutcome(e),
								)
								.then((a) => {
									// The answer's way back: delayed, sometimes lost.
									const lost = w.faultsOn && w.faultRng.chance(w.rates.lost);
									if (lost && w.procFault(`lost answer of ${opKey} from ${proc.tag}`)) {
										w.at(w.now() + w.delay(), `net error ${opKey}`, () =>
											done({ status: "net", committed: "unknown" }),
										);
										return;
									}
									w.at(w.now() + w.delay(), `answer ${opKey}`, () => done(a));
								});
						});
					});
				});
				if ("ok" in answer) {
					const r = answer.ok;
					rec.attempts.push("201");
					rec.okAnswers.push(JSON.stringify({ w: r.CurrentWLogOffset, ids: r.NewIDs }));
					if (r.replayed) rec.replays++;
					rec.result ??= {
						CurrentWLogOffset: r.CurrentWLogOffset,
						NewIDs: { ...r.NewIDs },
						plogOffset: r.plogOffset,
					};
					rec.outcome = "ok";
					w.note(`ok ${opKey} w=${r.CurrentWLogOffset} p=${r.plogOffset}`);
					if (update === undefined) {
						const id = r.NewIDs["1"];
						if (id !== undefined) mine.push({ wsid, id, value: 0 });
					} else update.value = value as number;
					void readBack(proc, rec, "ok");
					break;
				}
				rec.attempts.push(answer.status);
				w.note(`${answer.status}/${answer.committed} ${opKey}`);
				if (answer.committed !== "no") sawUnknown = true;
				// "yes: read it back": the answering holder serves the update.
				if (answer.committed === "yes" && update !== undefined)
					void readBack(proc, { ...rec, value: value as number }, "committed yes");
				if (/^4\d\d$/.test(answer.status) && !["421", "409", "422"].includes(answer.status)) break;
			}
			if (rec.outcome !== "ok") rec.outcome = sawUnknown ? "unknown" : "not-written";
			rec.endMono = w.now();
		}
		running--;
	};
	/** Reads after "yes": the record as the answering holder serves it shows the command. */
	const readBack = async (proc: Incarnation, rec: OpRecord, after: string): Promise<void> => {
		const p = proc.partition;
		if (p === undefined || proc.dead || proc.pausedUntil > w.now()) return;
		const id = rec.kind === "create" ? rec.result?.NewIDs["1"] : rec.id;
		if (id === undefined) return;
		const fields = await p.readRecord({ wsid: rec.wsid, table: TABLE, id }).then(
			(f) => f as Record<string, unknown>,
			(e: unknown) => (CpError.is(e) && e.code === "CP_NOT_FOUND" ? null : undefined),
		);
		if (fields === undefined) return;
		if (fields === null) {
			anomalies.push(
				`stale-read: after ${rec.op} answered ${after}, reading ${rec.wsid}/${id} finds no record`,
			);
			return;
		}
		if (rec.kind === "create" && fields.name !== rec.op)
			anomalies.push(
				`stale-read: after ${rec.op} answered ${after}, reading ${rec.wsid}/${id} gives name ${String(fields.name)}`,
			);
		if (rec.kind === "update") {
			const m = /:(\d+)$/.exec(String(fields.email ?? ""));
			const seen = m === null ? 0 : Number(m[1]);
			if (seen < (rec.value as number))
				anomalies.push(
					`stale-read: after ${rec.op} (value ${rec.value}) answered ${after}, reading ${rec.wsid}/${id} gives ${String(fields.email)}`,
				);
		}
	};
	for (let c = 0; c < nClients; c++)
		w.at(w.now() + w.clientRng.int(0, 200), `client ${c} starts`, () => {
			client(c).catch((e: unknown) => {
				running--;
				anomalies.push(`client ${c} failed: ${e instanceof Error ? e.stack : String(e)}`);
			});
		});

	const done = await w.runUntil(() => running === 0);
	// --- heal: faults off, a fresh grant to a live holder, recovery, every write landed --------
	w.faultsOn = false;
	for (const p of procs) p.pausedUntil = 0;
	let healed = false;
	if (done) {
		const alive = [...Array(holders).keys()].filter((h) => !(current[h] as Incarnation).dead);
		move(alive.length > 0 ? w.procRng.pick(alive) : 0);
		healed = await w.runUntil(() => !moving && grant !== undefined && readyGrant === grant);
		finished = true;
		// Every request still in flight lands (a late write is part of the history); then the next
		// holder recovers once more, as it would after them (a deposed holder's late PLog write under
		// "ordered" fencing is an event the next recovery applies).
		await w.runUntil(() => w.pendingStorage === 0);
		if (healed) {
			const live = [...Array(holders).keys()].filter((h) => !(current[h] as Incarnation).dead);
			move(live.length > 0 ? w.procRng.pick(live) : 0);
			healed = await w.runUntil(() => !moving && grant !== undefined && readyGrant === grant);
		}
	}
	finished = true;
	for (const p of procs) p.dead = true;

	const report = await checkCommandHistory(ops, base, { appId: APP, partitions: 1 });
	// The storage contract, checked by the fault layer itself: a lost answer reported as "nothing
	// was written", a conditional write that took effect twice, a resend that undid a later write.
	const contract = [...w.causes].filter((c) => !c.startsWith("deposed-numbers"));
	const all = [...report.anomalies, ...anomalies, ...contract];
	const stuck = !done || !healed;
	return {
		seed: opts.seed,
		ok: all.length === 0,
		anomalies: all,
		traceHash: w.traceHash,
		faults: w.faults,
		config,
		steps: w.steps,
		virtualMs: w.now() - START,
		stuck,
		...(w.trace === undefined ? {} : { trace: w.trace }),
		causes: [...w.causes],
		stats: {
			ops: ops.length,
			acked: report.acknowledged,
			unknown: report.unknown,
			notWritten: report.notWritten,
		},
	};
}
