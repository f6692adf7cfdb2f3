// The fault injector: at seeded random times, a seeded random fault on a seeded random target.
// Each fault is logged as `fault` (kind, target, parameters, `mono`) when it starts and
// `fault-end` when it is undone, so the report counts them and the checker can line them up
// with the hosts' logs.
import type { ChaosHost } from "./chaos-host.ts";
import type { EventLog } from "./events.ts";
import type { PathMode } from "./fault-proxy.ts";
import type { FaultKind } from "./faults-catalog.ts";
import type { HostClocks } from "./host-clocks.ts";
import { sleep } from "./mono.ts";
import type { ChaosOptions } from "./options.ts";
import type { Rng } from "./rng.ts";
import type { StorageBackend } from "./storage-backend.ts";

/** Probability that a process fault picks a current leader when there is one. */
const LEADER_BIAS = 0.7;

/** What the injector works on. */
export interface FaultTargets {
	readonly hosts: readonly ChaosHost[];
	readonly storage: StorageBackend;
	readonly clocks: HostClocks | undefined;
}

/** A running injector. */
export interface FaultInjector {
	/** Faults under way now. */
	active(): number;
	/** Stops injecting and undoes every fault under way (SIGCONT, paths back to pass, storage resumed). */
	stop(): Promise<void>;
}

interface Active {
	readonly id: number;
	readonly kind: FaultKind;
	/** Undoes the fault now (idempotent). */
	readonly undo: () => void;
}

/**
 * Starts injecting faults of `options.faults` (weights) about every `options.faultIntervalMs`,
 * at most `options.maxConcurrentFaults` at once.
 *
 * @example
 * ```ts
 * const faults = startFaults(options, { hosts, storage, clocks }, events, rng.fork("faults"));
 * await faults.stop();
 * ```
 */
export function startFaults(
	options: ChaosOptions,
	targets: FaultTargets,
	events: EventLog,
	rng: Rng,
): FaultInjector {
	const d = options.leadershipSeconds * 1000;
	const stopping = new AbortController();
	const active = new Map<number, Active>();
	const pathBusy = new Set<string>();
	let storagePaused = false;
	let nextId = 1;

	const alive = (h: ChaosHost): boolean => h.current !== undefined;
	const pickHost = (eligible: (h: ChaosHost) => boolean, preferLeaders: boolean) => {
		const candidates = targets.hosts.filter(eligible);
		if (preferLeaders && rng.chance(LEADER_BIAS)) {
			const leaders = candidates.filter((h) => h.slotsLed.size > 0);
			if (leaders.length > 0) return rng.pick(leaders);
		}
		return rng.pick(candidates);
	};

	/** Registers a fault that `undo` ends, after `durationMs` unless the run stops first. */
	const timed = (
		kind: FaultKind,
		fields: Record<string, unknown>,
		durationMs: number,
		undo: () => void,
	): void => {
		const id = nextId++;
		let done = false;
		const end = (): void => {
			if (done) return;
			done = true;
			clearTimeout(timer);
			undo();
			active.delete(id);
			events.emit("fault-end", { id, kind, ...("host" in fields ? { host: fields.host } : {}) });
		};
		events.emit("fault", { id, kind, durationMs: Math.round(durationMs), ...fields });
		const timer = setTimeout(end, durationMs);
		active.set(id, { id, kind, undo: end });
	};

	const processTarget = (h: ChaosHost) => {
		const inc = h.current;
		return inc === undefined
			? undefined
			: { host: h.name, pid: inc.pid, slotsLed: [...h.slotsLed] };
	};

	const stopFor = (kind: "stop-short" | "stop-long", min: number, max: number): boolean => {
		const h = pickHost((x) => alive(x) && !x.busy, true);
		const target = h && processTarget(h);
		if (h === undefined || target === undefined) return false;
		h.busy = true;
		h.signal("SIGSTOP", target.pid);
		timed(kind, target, rng.between(min, max) * d, () => {
			h.signal("SIGCONT", target.pid);
			h.busy = false;
		});
		return true;
	};

	const starts: Record<FaultKind, () => boolean> = {
		kill() {
			const h = pickHost((x) => alive(x) && !x.busy, true);
			const target = h && processTarget(h);
			if (h === undefined || target === undefined) return false;
			events.emit("fault", { id: nextId++, kind: "kill", ...target });
			h.signal("SIGKILL", target.pid);
			return true;
		},
		restart() {
			const h = pickHost((x) => alive(x) && !x.busy, true);
			const inc = h?.current;
			const target = h && processTarget(h);
			if (h === undefined || inc === undefined || target === undefined) return false;
			h.busy = true;
			timed("restart", target, 0, () => {});
			h.signal("SIGTERM", target.pid);
			void inc.exit.then(() => {
				h.busy = false;
			});
			return true;
		},
		"stop-short": () => stopFor("stop-short", 0.05, 0.5),
		"stop-long": () => stopFor("stop-long", 0.8, 2),
		"cpu-starve"() {
			const h = pickHost((x) => alive(x) && !x.busy, true);
			const target = h && processTarget(h);
			if (h === undefined || target === undefined) return false;
			const periodMs = rng.between(20, 200);
			const stoppedShare = rng.between(0.3, 0.9);
			h.busy = true;
			let running = true;
			let cycle: NodeJS.Timeout | undefined;
			const stopPhase = (): void => {
				if (!running) return;
				h.signal("SIGSTOP", target.pid);
				cycle = setTimeout(contPhase, periodMs * stoppedShare);
			};
			const contPhase = (): void => {
				h.signal("SIGCONT", target.pid);
				if (running) cycle = setTimeout(stopPhase, periodMs * (1 - stoppedShare));
			};
			timed(
				"cpu-starve",
				{
					...target,
					periodMs: Math.round(periodMs),
					stoppedShare: Number(stoppedShare.toFixed(2)),
				},
				rng.between(1, 3) * d,
				() => {
					running = false;
					if (cycle !== undefined) clearTimeout(cycle);
					h.signal("SIGCONT", target.pid);
					h.busy = false;
				},
			);
			stopPhase();
			return true;
		},
		"storage-pause"() {
			if (storagePaused) return false;
			storagePaused = true;
			targets.storage.pause();
			timed(
				"storage-pause",
				{ how: targets.storage.pauseMethod },
				rng.between(0.3, 1.5) * d,
				() => {
					targets.storage.resume();
					storagePaused = false;
				},
			);
			return true;
		},
		"proxy-delay"() {
			const h = pickHost((x) => !pathBusy.has(x.name), true);
			if (h === undefined) return false;
			const ms = Math.round(rng.between(0.05, 0.5) * d);
			return path(h, "proxy-delay", { kind: "delay", ms }, rng.between(1, 3) * d, { delayMs: ms });
		},
		"proxy-hold"() {
			const h = pickHost((x) => !pathBusy.has(x.name), true);
			if (h === undefined) return false;
			return path(h, "proxy-hold", { kind: "hold" }, rng.between(0.3, 1.5) * d, {});
		},
		"proxy-hold-writes"() {
			const h = pickHost((x) => !pathBusy.has(x.name), true);
			if (h === undefined) return false;
			const mode: PathMode = targets.storage.writesVisible
				? { kind: "hold-writes" }
				: { kind: "hold" };
			return path(h, "proxy-hold-writes", mode, rng.between(0.5, 2) * d, {
				writesOnly: targets.storage.writesVisible,
			});
		},
		"proxy-drop"() {
			const h = pickHost((x) => !pathBusy.has(x.name), true);
			if (h === undefined) return false;
			return path(h, "proxy-drop", { kind: "drop" }, rng.between(0.3, 1.5) * d, {});
		},
		"proxy-drop-reply"() {
			const h = pickHost((x) => !pathBusy.has(x.name), true);
			if (h === undefined) return false;
			return path(h, "proxy-drop-reply", { kind: "drop-reply" }, rng.between(0.3, 1.5) * d, {});
		},
		clock() {
			const clocks = targets.clocks;
			const h = rng.pick(targets.hosts);
			if (clocks === undefined || h === undefined) return false;
			const toMs = Math.round(rng.between(-options.clockRangeMs, options.clockRangeMs));
			const fromMs = clocks.set(h.name, toMs);
			events.emit("fault", {
				id: nextId++,
				kind: "clock",
				host: h.name,
				pid: h.current?.pid,
				fromMs,
				toMs,
				slotsLed: [...h.slotsLed],
			});
			return true;
		},
	};

	function path(
		h: ChaosHost,
		kind: FaultKind,
		mode: PathMode,
		durationMs: number,
		fields: Record<string, unknown>,
	): boolean {
		const index = targets.hosts.indexOf(h);
		const proxies = targets.storage.proxiesOf(index);
		pathBusy.add(h.name);
		for (const p of proxies) p.setMode(mode);
		timed(
			kind,
			{ host: h.name, pid: h.current?.pid, slotsLed: [...h.slotsLed], ...fields },
			durationMs,
			() => {
				for (const p of proxies) p.setMode({ kind: "pass" });
				pathBusy.delete(h.name);
			},
		);
		return true;
	}

	const loop = (async () => {
		while (!stopping.signal.aborted) {
			await sleep(rng.exponential(options.faultIntervalMs), stopping.signal);
			if (stopping.signal.aborted) break;
			if (active.size >= options.maxConcurrentFaults) continue;
			const kind = rng.weighted(options.faults);
			if (kind === undefined) continue; // --faults none
			starts[kind]();
		}
	})();

	return {
		active: () => active.size,
		async stop() {
			stopping.abort();
			await loop;
			for (const a of [...active.values()]) a.undo();
		},
	};
}
