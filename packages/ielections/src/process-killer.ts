import { writeSync } from "node:fs";
import { Worker } from "node:worker_threads";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import type { Killer } from "./killer.ts";

/** Options of {@link processKiller}. */
export interface ProcessKillerOptions {
	/**
	 * Receives the line that says why the process is being killed (at `error`, fields
	 * `{ event: "killer", line }`), on the main thread. The watchdog commits to the kill 100 ms
	 * before the deadline, hands the line to the main thread, and waits for it until the deadline;
	 * when the main thread does not answer (its event loop is blocked), or without `logger`, the
	 * watchdog writes the line to stderr itself: a process about to be SIGKILLed always says why.
	 * Either way the line is written before the kill, and the kill happens by the deadline.
	 */
	readonly logger?: Logger;
}

const SLOTS = 64;
const REASON_BYTES = 1024;
const LOG_GRACE_MS = 100;

// Control words (Int32): [0] generation, bumped on every schedule so the watchdog re-reads;
// [1] slot the watchdog asks the main thread to log (-1 none); [2] log acknowledged (0/1).
// Deadlines (BigInt64, one per slot): monotonic ms (process.hrtime), 0 = none. A slot that logs
// through the main thread commits LOG_GRACE_MS before its deadline (its "trigger"), so the line is
// written and the process killed by the deadline itself.
// Reasons: REASON_BYTES per slot, UTF-8, with an Int32 length per slot.
//
// The watchdog is plain CommonJS evaluated in a worker thread: it never returns to its own event
// loop, it blocks in Atomics.wait until the earliest trigger or until the main thread changes
// one, so it fires even when the main thread's event loop is blocked.
const WATCHDOG_SOURCE = `
"use strict";
const { workerData, parentPort } = require("node:worker_threads");
const { writeSync } = require("node:fs");
const ctrl = new Int32Array(workerData.ctrl);
const deadlines = new BigInt64Array(workerData.deadlines);
const lengths = new Int32Array(workerData.lengths);
const reasons = new Uint8Array(workerData.reasons);
const logged = new Uint8Array(workerData.logged);
const nowMs = () => process.hrtime.bigint() / 1000000n;
const grace = (i) => (logged[i] === 1 ? ${LOG_GRACE_MS}n : 0n);
for (;;) {
	const generation = Atomics.load(ctrl, 0);
	let slot = -1;
	let trigger = 0n;
	let deadline = 0n;
	for (let i = 0; i < deadlines.length; i++) {
		const d = Atomics.load(deadlines, i);
		if (d !== 0n && (slot < 0 || d - grace(i) < trigger)) { slot = i; trigger = d - grace(i); deadline = d; }
	}
	const now = nowMs();
	if (slot >= 0 && now >= trigger) {
		const len = Atomics.load(lengths, slot);
		const reason = Buffer.from(reasons.subarray(slot * ${REASON_BYTES}, slot * ${REASON_BYTES} + len)).toString("utf8");
		const when = now <= deadline ? "deadline in " + String(deadline - now) + " ms" : "deadline passed " + String(now - deadline) + " ms ago";
		const line = "[@vvm/ielections] killer: " + reason + "; " + when + "; killing process " + process.pid + " with SIGKILL\\n";
		let done = false;
		if (logged[slot] === 1) {
			Atomics.store(ctrl, 2, 0);
			Atomics.store(ctrl, 1, slot);
			parentPort.postMessage(line);
			const wait = Number(deadline - nowMs());
			done = (wait > 0 && Atomics.wait(ctrl, 2, 0, wait) !== "timed-out") || Atomics.load(ctrl, 2) === 1;
		}
		if (!done) { try { writeSync(2, line); } catch {} }
		process.kill(process.pid, "SIGKILL");
		for (;;) Atomics.wait(ctrl, 0, Atomics.load(ctrl, 0));
	}
	const timeout = slot < 0 ? undefined : Number(trigger - now);
	Atomics.wait(ctrl, 0, generation, timeout);
}
`;

interface Watchdog {
	readonly ctrl: Int32Array;
	readonly deadlines: BigInt64Array;
	readonly lengths: Int32Array;
	readonly reasons: Uint8Array;
	readonly logged: Uint8Array;
	readonly logs: Map<number, (line: string) => void>;
	nextSlot: number;
	/** Slots given back by `disarm` (no deadline, not logged), taken before `nextSlot`. */
	readonly free: number[];
	/** Why the watchdog thread is gone; deadlines are no longer enforced. */
	failure: string | undefined;
}

let watchdog: Watchdog | undefined;

function startWatchdog(): Watchdog {
	const shared = {
		ctrl: new SharedArrayBuffer(3 * 4),
		deadlines: new SharedArrayBuffer(SLOTS * 8),
		lengths: new SharedArrayBuffer(SLOTS * 4),
		reasons: new SharedArrayBuffer(SLOTS * REASON_BYTES),
		logged: new SharedArrayBuffer(SLOTS),
	};
	const w: Watchdog = {
		ctrl: new Int32Array(shared.ctrl),
		deadlines: new BigInt64Array(shared.deadlines),
		lengths: new Int32Array(shared.lengths),
		reasons: new Uint8Array(shared.reasons),
		logged: new Uint8Array(shared.logged),
		logs: new Map(),
		nextSlot: 0,
		free: [],
		failure: undefined,
	};
	Atomics.store(w.ctrl, 1, -1);
	const worker = new Worker(WATCHDOG_SOURCE, { eval: true, workerData: shared });
	worker.on("message", (line: string) => {
		const slot = Atomics.load(w.ctrl, 1);
		try {
			w.logs.get(slot)?.(line.trimEnd());
		} finally {
			Atomics.store(w.ctrl, 2, 1);
			Atomics.notify(w.ctrl, 2);
		}
	});
	// The watchdog is gone, so no deadline can be enforced any more: say so loudly, and make every
	// later schedule() throw, which ends the leaderships that depend on it.
	worker.on("error", (error) => {
		w.failure = `killer watchdog failed: ${String(error)}`;
		writeSync(2, `[@vvm/ielections] ${w.failure}\n`);
	});
	worker.on("exit", (code) => {
		w.failure ??= `killer watchdog exited (code ${code})`;
	});
	// The watchdog must never keep the process alive on its own.
	worker.unref();
	return w;
}

function monotonicMs(): bigint {
	return process.hrtime.bigint() / 1_000_000n;
}

/**
 * The production {@link Killer}: a watchdog in a worker thread (one per process, started lazily on
 * the first `schedule`, `unref`'d) that SIGKILLs the whole process at the deadline, even when the
 * main thread's event loop is blocked, after writing why (see {@link ProcessKillerOptions.log}).
 * Each killer takes a deadline slot (64 per process) at its first `schedule` and gives it back at
 * `disarm` (the slot is taken again at the next `schedule`), so only killers with a deadline
 * pending count; the process dies at the earliest pending deadline, never
 * after it (with `log`, the kill is committed 100 ms before the deadline so the line can be
 * written first). Deadlines use the monotonic clock (`process.hrtime`), so wall-clock steps do not
 * move them. A deadline within 100 ms (with `log`) or already passed is final: neither `schedule`
 * nor `disarm` can rescue the process any more.
 *
 * @example
 * ```ts
 * const elections = createElections(storage, { killer: processKiller({ logger: pino() }) });
 * ```
 */
export function processKiller(options: ProcessKillerOptions = {}): Killer {
	let slot: number | undefined;
	const encoder = new TextEncoder();
	const logger = options.logger;
	const log =
		logger === undefined
			? undefined
			: (line: string): void => {
					libraryLogger(logger, { pkg: "@vvm/ielections" }).error({ event: "killer", line }, line);
				};
	const graceMs = log === undefined ? 0n : BigInt(LOG_GRACE_MS);
	/** The slot's deadline is committed (passed, or within the log grace): wake the watchdog. */
	const committed = (w: Watchdog, s: number): boolean => {
		const current = Atomics.load(w.deadlines, s);
		if (current === 0n || monotonicMs() < current - graceMs) return false;
		Atomics.add(w.ctrl, 0, 1);
		Atomics.notify(w.ctrl, 0);
		return true;
	};
	return {
		schedule(delayMs: number, reason: string): void {
			// The delay counts from now, the caller's reading: what follows (the worker's start on
			// the first call, encoding the reason, a GC pause in either) must not push it later.
			const now = monotonicMs();
			if (typeof delayMs !== "number" || Number.isNaN(delayMs) || delayMs < 0) {
				throw new RangeError(
					`[@vvm/ielections] killer delay must be a number >= 0, got ${String(delayMs)}`,
				);
			}
			watchdog ??= startWatchdog();
			const w = watchdog;
			if (w.failure !== undefined) throw new Error(`[@vvm/ielections] ${w.failure}`);
			if (slot === undefined) {
				const reused = w.free.pop();
				if (reused === undefined && w.nextSlot >= SLOTS)
					throw new RangeError(
						`[@vvm/ielections] at most ${SLOTS} armed process killers per process`,
					);
				slot = reused ?? w.nextSlot++;
				// A free slot has no deadline (0), so the watchdog ignores it while it is set up here.
				w.logged[slot] = log === undefined ? 0 : 1;
				if (log !== undefined) w.logs.set(slot, log);
				else w.logs.delete(slot);
			}
			// A deadline that already passed is final: after SIGSTOP/SIGCONT (or a long stall) the main
			// thread may get here before the watchdog has woken up; re-arming would rescue a process
			// that outlived its lease. Wake the watchdog instead and let it fire.
			if (committed(w, slot)) return;
			const bytes = encoder.encode(reason).subarray(0, REASON_BYTES);
			w.reasons.set(bytes, slot * REASON_BYTES);
			Atomics.store(w.lengths, slot, bytes.length);
			const deadline = now + BigInt(Math.ceil(Math.min(delayMs, 1e15)));
			Atomics.store(w.deadlines, slot, deadline === 0n ? 1n : deadline);
			Atomics.add(w.ctrl, 0, 1);
			Atomics.notify(w.ctrl, 0);
		},
		disarm(): void {
			const w = watchdog;
			if (w === undefined || slot === undefined || w.failure !== undefined) return;
			if (committed(w, slot)) return;
			Atomics.store(w.deadlines, slot, 0n);
			Atomics.add(w.ctrl, 0, 1);
			Atomics.notify(w.ctrl, 0);
			// Nothing pending: the slot goes back to the pool (F6: an Elections per unit of work would
			// otherwise use up the 64 slots); the next schedule() of this killer takes one again.
			w.logs.delete(slot);
			w.logged[slot] = 0;
			w.free.push(slot);
			slot = undefined;
		},
	};
}
