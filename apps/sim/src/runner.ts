// Many seeds, and the shrinker of one failing seed.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import type { Profile, ProfileName } from "./profiles.ts";
import { dynProfile, epochProfile } from "./profiles.ts";
import type { RunOptions, RunResult } from "./world.ts";
import { runSeed } from "./world.ts";

/**
 * The profile of a name. "epoch" and "ordered" draw their batch shapes per seed (see
 * {@link profileFor}); "dyn" is measured on the real driver once per process.
 */
export async function loadProfile(name: ProfileName): Promise<Profile> {
	if (name === "dyn") return dynProfile();
	// Both batch shapes are offered; the world draws per seed which cp uses.
	return epochProfile(name === "epoch" ? "epoch" : "ordered", true, true);
}

/** One failure of {@link runMany}. */
interface Failure {
	readonly seed: number;
	readonly profile: ProfileName;
	readonly anomalies: readonly string[];
	/** Wall time since the start of the batch when it was found, ms. */
	readonly atMs: number;
	readonly config: string;
	readonly causes: readonly string[];
}

/** What the seeds of one profile did in a batch (liveness: did the partitions serve?). */
interface ProfileTally {
	readonly runs: number;
	/** Client operations issued. */
	readonly ops: number;
	/** Client operations answered "ok" (acknowledged). */
	readonly acked: number;
	readonly stuck: number;
}

/** A seed that counted as stuck (its clients did not finish or its partition did not recover). */
interface StuckSeed {
	readonly seed: number;
	readonly profile: ProfileName;
	readonly config: string;
}

/** What {@link runMany} did. */
export interface ManySummary {
	readonly seeds: number;
	readonly runs: number;
	readonly ms: number;
	readonly runsPerSecond: number;
	/** CPU time of this process over the batch (user + system), ms: the machine is shared. */
	readonly cpuMs: number;
	readonly failures: readonly Failure[];
	readonly stuck: number;
	/** The first stuck seeds (at most {@link MAX_STUCK_LISTED}). */
	readonly stuckSeeds: readonly StuckSeed[];
	/** Per profile that ran at least one seed. */
	readonly byProfile: Readonly<Partial<Record<ProfileName, ProfileTally>>>;
}

const MAX_STUCK_LISTED = 20;

/**
 * The least share of client operations a profile's seeds must get acknowledged ("ok") in a batch.
 * Measured on the tree of 2026-12 (seeds 1..100 per profile and level): 0.57 (`dyn`, level 0) to
 * 0.74 (`epoch`, level 2), 0.64 pipelined; single seeds with heavy faults acknowledge nothing.
 * A quarter is far below every measured share and far above a build that serves rarely or never.
 */
export const MIN_ACKED_SHARE = 0.25;
/**
 * A profile's acknowledgements are judged once it ran this many seeds: about one seed in 50 of the
 * real tree acknowledges nothing (faults on every attempt), so one or two seeds say nothing.
 */
const MIN_RUNS_JUDGED = 20;

/**
 * Liveness of a batch, beside its failures: a seed that never served is no pass. Each problem is a
 * line: any stuck seed (clients that never finished or a partition that never recovered: every
 * safety check passes on a run that did nothing); and, for a profile that ran at least
 * {@link MIN_RUNS_JUDGED} seeds, nothing acknowledged or less than {@link MIN_ACKED_SHARE} of its
 * operations.
 */
export function livenessProblems(s: ManySummary): string[] {
	const problems: string[] = [];
	if (s.stuck > 0)
		problems.push(
			`${s.stuck} stuck seed(s): ${s.stuckSeeds.map((x) => `${x.seed} (${x.profile})`).join(", ")}${s.stuck > s.stuckSeeds.length ? ", …" : ""}`,
		);
	for (const [name, t] of Object.entries(s.byProfile) as [ProfileName, ProfileTally][]) {
		if (t.runs < MIN_RUNS_JUDGED) continue;
		const share = t.ops === 0 ? 0 : t.acked / t.ops;
		if (t.acked === 0)
			problems.push(
				`profile ${name}: nothing acknowledged in ${t.runs} seeds (${t.ops} operations)`,
			);
		else if (share < MIN_ACKED_SHARE)
			problems.push(
				`profile ${name}: ${t.acked} of ${t.ops} operations acknowledged (${(share * 100).toFixed(1)} %, below ${MIN_ACKED_SHARE * 100} %) in ${t.runs} seeds`,
			);
	}
	return problems;
}

/** `byProfile` as one line: runs, acknowledged share, stuck. */
export function tallyLine(s: ManySummary): string {
	return (Object.entries(s.byProfile) as [ProfileName, ProfileTally][])
		.map(
			([name, t]) =>
				`${name}: ${t.runs} seeds, ${t.acked}/${t.ops} acked (${t.ops === 0 ? 0 : ((t.acked * 100) / t.ops).toFixed(1)} %), ${t.stuck} stuck`,
		)
		.join("; ");
}

/** Options of {@link runMany}. */
export interface ManyOptions {
	readonly from: number;
	readonly count: number;
	/** Seeds `from`, `from + stride`, … (a worker's share); default 1. */
	readonly stride?: number;
	readonly profiles: readonly ProfileName[];
	readonly unsafeUnfenced?: boolean;
	/** The liveness mutant ({@link RunOptions.neverServe}). */
	readonly neverServe?: boolean;
	/** Overlapping grants ({@link RunOptions.overlaps}). */
	readonly overlaps?: boolean;
	readonly trustLevel?: 0 | 1 | 2;
	/** cp's `pipelineDepth` for every seed (see {@link RunOptions.pipelineDepth}). */
	readonly pipelineDepth?: number;
	readonly stopAtFirst?: boolean;
	/** With `stopAtFirst`: only a failure with an anomaly of one of these kinds stops the batch. */
	readonly stopOn?: readonly string[];
	/** Stop once this much wall time passed (ms). */
	readonly budgetMs?: number;
	readonly progress?: (line: string) => void;
}

/** The profile a seed runs with when several are given: one per seed, in turn. */
export function profileOfSeed<T>(seed: number, profiles: readonly T[]): T {
	return profiles[((seed % profiles.length) + profiles.length) % profiles.length] as T;
}

/** Runs seeds `from..from+count-1`, each over its profile ({@link profileOfSeed}). */
export async function runMany(o: ManyOptions): Promise<ManySummary> {
	const profiles = await Promise.all(o.profiles.map((n) => loadProfile(n)));
	const t0 = performance.now();
	const cpu0 = process.cpuUsage();
	// Errors are part of every run (refused writes, CP_BUSY): their stack traces cost a fifth of
	// the CPU and say nothing the trace does not.
	const stackTraceLimit = Error.stackTraceLimit;
	Error.stackTraceLimit = 0;
	try {
		return await manyRuns(o, profiles, t0, cpu0);
	} finally {
		Error.stackTraceLimit = stackTraceLimit;
	}
}

async function manyRuns(
	o: ManyOptions,
	profiles: readonly Profile[],
	t0: number,
	cpu0: NodeJS.CpuUsage,
): Promise<ManySummary> {
	const failures: Failure[] = [];
	let runs = 0;
	let seeds = 0;
	let stuck = 0;
	const stuckSeeds: StuckSeed[] = [];
	const byProfile: Partial<Record<ProfileName, ProfileTally>> = {};
	let lastReport = t0;
	const stride = o.stride ?? 1;
	for (let i = 0; i < o.count; i++) {
		const seed = o.from + i * stride;
		seeds++;
		{
			const profile = profileOfSeed(seed, profiles);
			const r = await runSeed({
				seed,
				profile,
				...(o.unsafeUnfenced ? { unsafeUnfenced: true } : {}),
				...(o.neverServe ? { neverServe: true } : {}),
				...(o.overlaps ? { overlaps: true } : {}),
				...(o.trustLevel === undefined ? {} : { trustLevel: o.trustLevel }),
				...(o.pipelineDepth === undefined ? {} : { pipelineDepth: o.pipelineDepth }),
			});
			runs++;
			const t = byProfile[profile.name] ?? { runs: 0, ops: 0, acked: 0, stuck: 0 };
			byProfile[profile.name] = {
				runs: t.runs + 1,
				ops: t.ops + r.stats.ops,
				acked: t.acked + r.stats.acked,
				stuck: t.stuck + (r.stuck ? 1 : 0),
			};
			if (r.stuck) {
				stuck++;
				if (stuckSeeds.length < MAX_STUCK_LISTED)
					stuckSeeds.push({ seed, profile: profile.name, config: r.config });
				o.progress?.(`STUCK seed ${seed} profile ${profile.name} (${r.config})`);
			}
			if (!r.ok) {
				failures.push({
					seed,
					profile: profile.name,
					anomalies: r.anomalies,
					atMs: performance.now() - t0,
					config: r.config,
					causes: r.causes,
				});
				o.progress?.(
					`FAILED seed ${seed} profile ${profile.name} after ${((performance.now() - t0) / 1000).toFixed(1)} s (${r.config}): [${[...new Set(r.anomalies.map(kindOf))].join(", ")}] ${r.anomalies.find((a) => kindOf(a) !== "stale-read") ?? r.anomalies[0]}${r.causes.length > 0 ? ` [cause: ${r.causes.map(kindOf).join(", ")}]` : ""}`,
				);
				const hit =
					o.stopOn === undefined || r.anomalies.some((a) => o.stopOn?.includes(kindOf(a)));
				if (o.stopAtFirst && hit) break;
			}
		}
		const now = performance.now();
		if (now - lastReport > 5_000) {
			lastReport = now;
			o.progress?.(
				`${seeds} seeds, ${runs} runs, ${((runs * 1000) / (now - t0)).toFixed(0)} runs/s, ${failures.length} failed, ${stuck} stuck`,
			);
		}
		if (o.budgetMs !== undefined && now - t0 > o.budgetMs) break;
	}
	const ms = performance.now() - t0;
	const cpu = process.cpuUsage(cpu0);
	const cpuMs = (cpu.user + cpu.system) / 1000;
	return {
		seeds,
		runs,
		ms,
		runsPerSecond: (runs * 1000) / ms,
		cpuMs,
		failures,
		stuck,
		stuckSeeds,
		byProfile,
	};
}

/** The shrinker's result. */
export interface Shrunk {
	readonly result: RunResult;
	readonly ops: number;
	readonly runs: number;
}

/** An anomaly's kind: its first word (`lost`, `applied-twice`, `storage`, `stale-read`...). */
const kindOf = (anomaly: string): string => anomaly.split(":")[0] ?? anomaly;

/**
 * The shortest failing schedule of a failing seed: fewer client operations while it still
 * fails, then each injected fault turned off in turn (kept off when the run still fails), until
 * no single fault can go. "Still fails" means: an anomaly of the wanted kind (default: the first
 * kind other than `stale-read`, the commonest).
 */
export async function shrinkSeed(
	base: Omit<RunOptions, "suppress" | "ops">,
	first: RunResult,
	kindWanted?: string,
): Promise<Shrunk> {
	let runs = 0;
	let best = first;
	const kinds = first.anomalies.map(kindOf);
	const kind = kindWanted ?? kinds.find((k) => k !== "stale-read") ?? kinds[0] ?? "";
	const fails = (r: RunResult): boolean => r.anomalies.some((a) => kindOf(a) === kind);
	let ops = first.stats.ops;
	const suppress = new Set<number>();
	const tryRun = async (o: number, s: ReadonlySet<number>): Promise<RunResult> => {
		runs++;
		return runSeed({ ...base, ops: o, suppress: s });
	};
	// Fewer operations.
	for (let o = Math.max(1, Math.floor(ops / 2)); o < ops; ) {
		const r = await tryRun(o, suppress);
		if (fails(r)) {
			best = r;
			ops = o;
			o = Math.max(1, Math.floor(o / 2));
		} else o = Math.floor((o + ops + 1) / 2) === ops ? ops : Math.floor((o + ops + 1) / 2);
	}
	// Fewer faults: chunks of the remaining ones first (halves, quarters, …), then one at a time,
	// until a pass removes none (delta debugging, to a local minimum).
	for (let changed = true; changed && runs < 2_000; ) {
		changed = false;
		const left = best.faults.map((f) => f.n).filter((n) => !suppress.has(n));
		for (
			let size = Math.floor(left.length / 2);
			size >= 1 && runs < 2_000;
			size = Math.floor(size / 2)
		) {
			for (let i = 0; i < left.length; i += size) {
				const chunk = left.slice(i, i + size).filter((n) => !suppress.has(n));
				if (chunk.length === 0) continue;
				const s = new Set([...suppress, ...chunk]);
				const r = await tryRun(ops, s);
				if (fails(r)) {
					for (const n of chunk) suppress.add(n);
					best = r;
					changed = true;
				}
			}
		}
	}
	const final = await tryRun(ops, suppress);
	return { result: fails(final) ? final : best, ops, runs };
}

/**
 * {@link runMany} over `workers` processes (the CLI with `--json`), seeds split by stride: the
 * same seeds, the same verdicts, on every core. Wall time is the slowest worker's.
 */
export async function runParallel(o: ManyOptions, workers: number): Promise<ManySummary> {
	if (workers <= 1) return runMany(o);
	const cli = fileURLToPath(new URL("./cli.ts", import.meta.url));
	const t0 = performance.now();
	const parts = await Promise.all(
		Array.from({ length: workers }, (_, w) => {
			const count = Math.ceil((o.count - w) / workers);
			const args = [
				"--import",
				"tsx",
				"--conditions=@vvm/source",
				cli,
				"--json",
				"--from",
				String(o.from + w),
				"--stride",
				String(workers),
				"--seeds",
				String(Math.max(0, count)),
				"--profile",
				o.profiles.join(","),
				...(o.unsafeUnfenced ? ["--mutant"] : []),
				...(o.neverServe ? ["--mutant-never-serve"] : []),
				...(o.overlaps ? ["--overlaps"] : []),
				...(o.trustLevel === undefined ? [] : ["--level", String(o.trustLevel)]),
				...(o.pipelineDepth === undefined ? [] : ["--pipeline", String(o.pipelineDepth)]),
				...(o.budgetMs === undefined ? [] : ["--budget-ms", String(o.budgetMs)]),
			];
			return new Promise<ManySummary>((resolve, reject) => {
				// From the package's directory, where `tsx` resolves.
				const child = spawn(process.execPath, args, {
					cwd: fileURLToPath(new URL("..", import.meta.url)),
					stdio: ["ignore", "pipe", "inherit"],
				});
				let out = "";
				child.stdout.on("data", (b: Buffer) => {
					out += b.toString("utf8");
				});
				child.on("error", reject);
				child.on("close", () => {
					const last = out.trim().split("\n").pop() ?? "";
					try {
						resolve(JSON.parse(last) as ManySummary);
					} catch {
						reject(new Error(`sim worker ${w} gave no summary: ${out.slice(-500)}`));
					}
				});
			});
		}),
	);
	const ms = performance.now() - t0;
	const seeds = parts.reduce((a, p) => a + p.seeds, 0);
	const runs = parts.reduce((a, p) => a + p.runs, 0);
	return {
		seeds,
		runs,
		ms,
		runsPerSecond: (runs * 1000) / ms,
		cpuMs: parts.reduce((a, p) => a + p.cpuMs, 0),
		failures: parts.flatMap((p) => p.failures).sort((a, b) => a.seed - b.seed),
		stuck: parts.reduce((a, p) => a + p.stuck, 0),
		stuckSeeds: parts
			.flatMap((p) => p.stuckSeeds)
			.sort((a, b) => a.seed - b.seed)
			.slice(0, MAX_STUCK_LISTED),
		byProfile: mergeTallies(parts.map((p) => p.byProfile)),
	};
}

function mergeTallies(
	parts: readonly ManySummary["byProfile"][],
): Partial<Record<ProfileName, ProfileTally>> {
	const out: Partial<Record<ProfileName, ProfileTally>> = {};
	for (const part of parts)
		for (const [name, t] of Object.entries(part) as [ProfileName, ProfileTally][]) {
			const o = out[name] ?? { runs: 0, ops: 0, acked: 0, stuck: 0 };
			out[name] = {
				runs: o.runs + t.runs,
				ops: o.ops + t.ops,
				acked: o.acked + t.acked,
				stuck: o.stuck + t.stuck,
			};
		}
	return out;
}
