// How busy this machine is, measured when a timing suite starts, so the suite can size its leases
// and budgets to the machine rather than to a quiet laptop (issue 35: the multi-process suites
// failed at load ≈ 10 with fixed 2 s leases). A host that gets a third of a core renews late; a
// lease that is wide enough for it keeps the suite's claims (never two holders, failover within
// the lease's bound) meaningful instead of measuring the machine's contention.
import { availableParallelism, loadavg } from "node:os";

/** What {@link measureMachine} found, and the factor a timing suite scales its durations by. */
export interface MachineBudget {
	/** Wall time per CPU time of a short busy loop here: 1 on an idle core, 3 with a third of one. */
	readonly cpuShare: number;
	/** The one-minute load average per core. */
	readonly loadPerCore: number;
	/** The factor: 1 on a quiet machine, up to `maxScale` (both measures, rounded up to a half). */
	readonly scale: number;
}

/**
 * Measures this machine's contention for `sampleMs` (a busy loop: how much CPU it got per wall
 * millisecond) and reads the load average; `VVM_TIMING_SCALE` overrides the factor (for a run
 * that wants the quiet-machine budgets, `1`). Never below 1, never above `maxScale`.
 */
export function measureMachine(sampleMs = 300, maxScale = 4): MachineBudget {
	const wallStart = performance.now();
	const cpuStart = process.cpuUsage();
	let spin = 0;
	while (performance.now() - wallStart < sampleMs) spin = (spin * 31 + 7) % 1_000_003;
	const cpu = process.cpuUsage(cpuStart);
	const cpuMs = Math.max(1, (cpu.user + cpu.system) / 1_000);
	const cpuShare = (performance.now() - wallStart) / cpuMs + (spin < 0 ? 1 : 0);
	const loadPerCore = (loadavg()[0] ?? 0) / availableParallelism();
	const forced = Number(process.env.VVM_TIMING_SCALE);
	const measured = Math.ceil(Math.max(cpuShare, loadPerCore) * 2) / 2;
	const scale = Math.min(
		maxScale,
		Math.max(1, Number.isFinite(forced) && forced > 0 ? forced : measured),
	);
	return { cpuShare, loadPerCore, scale };
}
