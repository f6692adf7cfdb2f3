// One chaos run: storage, hosts, load, faults, until the duration or the number of leadership
// changes is reached; then everything is stopped and the checker reads the run's files.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { HostBuild } from "@vvm/vvm-host/launch";
import { chooseHostBuild } from "@vvm/vvm-host/launch";
import type { HostLine } from "./chaos-host.ts";
import { ChaosHost } from "./chaos-host.ts";
import type { CheckReport } from "./checker.ts";
import type { CommandReport } from "./command-checker.ts";
import { checkCommandHistory } from "./command-checker.ts";
import type { CommandLoad } from "./command-load.ts";
import { startCommandLoad } from "./command-load.ts";
import { createEventLog } from "./events.ts";
import { startFaults } from "./fault-injector.ts";
import type { FinalRecovery } from "./final-recovery.ts";
import { recoverAllPartitions } from "./final-recovery.ts";
import type { FirstServeState } from "./first-serve.ts";
import { FIRST_SERVE_PROGRESS_MS, FirstServeWait, firstServeText } from "./first-serve.ts";
import type { HostClocks } from "./host-clocks.ts";
import { createHostClocks } from "./host-clocks.ts";
import type { ClusterShape } from "./host-command.ts";
import { hostCommand, REPO_ROOT } from "./host-command.ts";
import type { LineFile } from "./jsonl-file.ts";
import { openLineFile } from "./jsonl-file.ts";
import type { LoadStats } from "./load.ts";
import { startLoad } from "./load.ts";
import { monoMs, sleep } from "./mono.ts";
import type { Operator, OperatorReport } from "./operator.ts";
import { startOperator } from "./operator.ts";
import type { ChaosOptions } from "./options.ts";
import type { PartitionEpochReport } from "./partition-epochs.ts";
import { checkPartitionEpochs } from "./partition-epochs.ts";
import { createRng } from "./rng.ts";
import { checkRunDir, hostLogFile, RUN_FILES, readHistory } from "./run-files.ts";
import type { SlowLoopsReport } from "./slow-loops.ts";
import { SlowLoops } from "./slow-loops.ts";
import type { StorageBackend } from "./storage-backend.ts";
import { openStorageBackend } from "./storage-backend.ts";

/** What a run produced. */
export interface RunResult {
	readonly options: ChaosOptions;
	readonly outDir: string;
	readonly build: HostBuild;
	readonly storage: string;
	readonly elapsedMs: number;
	/** Why the run ended: `duration`, `changes`, `interrupted`, `no-leader`, `host-config-error`. */
	readonly stopReason: string;
	/** `no-leader`: where the wait for the first leaders stood when it gave up. */
	readonly firstServe?: FirstServeState;
	/** The hosts' `leases.slow-loop` warnings (storage too slow for the lease interval), if any. */
	readonly slowLoops?: SlowLoopsReport;
	/** Whether the requested number of changes was reached (always true without `--changes`). */
	readonly targetReached: boolean;
	readonly load: LoadStats;
	readonly hostStarts: number;
	/** From the hosts' logs: faults, exits, and (leadership workload) overlaps. */
	readonly report: CheckReport;
	/** The commands workload's verdict, from the clients' history against the storage. */
	readonly commands?: CommandReport;
	/** commands: partitions deployed after the first time every partition was served. */
	readonly partitionMoves?: number;
	/** commands: what the final recovery (every partition deployed once more) applied before the check. */
	readonly finalRecovery?: FinalRecovery;
	/** commands: no two incarnations deployed a partition under one epoch (the hosts' logs). */
	readonly epochs?: PartitionEpochReport;
	/** commands with `--operator`: the actions taken and whether each completed. */
	readonly operator?: OperatorReport;
}

/** The host's cluster application ID (`HOST_APP_ID` of vvm-host): the commands checker's keys. */
const HOST_APP_ID = 1;
/** commands: how long clients retry their last operation once the faults are undone. */
const DRAIN_MS = 30_000;

/**
 * A commands run's own verdict: its history was checked (a commands run without one fails) and
 * passed, enough operations acknowledged among it (`CommandReport.ok`). True for other workloads.
 */
export function commandsPassed(result: RunResult): boolean {
	if (result.options.workload !== "commands") return true;
	return result.commands?.ok ?? false;
}

/** The verdict of a run: its checkers passed (and, with `--changes`, the target was reached). */
export function runPassed(result: RunResult): boolean {
	return (
		result.report.ok &&
		commandsPassed(result) &&
		(result.epochs?.ok ?? true) &&
		(result.operator?.ok ?? true) &&
		result.targetReached &&
		result.stopReason !== "interrupted"
	);
}

function defaultOutDir(options: ChaosOptions): string {
	const stamp = new Date().toISOString().replace(/[:.]/g, "-").slice(0, 19);
	const mutants =
		options.unsafeMutants.length > 0 ? `-mutant-${options.unsafeMutants.join("+")}` : "";
	const workload = options.workload === "commands" ? `-commands-L${options.trustLevel}` : "";
	return join(
		REPO_ROOT,
		".chaos",
		`${stamp}-${options.storage}${workload}-seed${options.seed}${mutants}`,
	);
}

const clockText = (ms: number): string => {
	const s = Math.floor(ms / 1000);
	return `${String(Math.floor(s / 60)).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
};

/**
 * Runs one chaos run and checks it. `say` receives the progress lines; `stop` ends the run early
 * (it is still checked).
 *
 * @example
 * ```ts
 * const result = await runChaos(parseChaosOptions(["--changes", "100"])!, console.log);
 * process.exit(result.report.ok && result.targetReached ? 0 : 1);
 * ```
 */
export async function runChaos(
	options: ChaosOptions,
	say: (line: string) => void,
	stop: AbortSignal = new AbortController().signal,
): Promise<RunResult> {
	const outDir = options.outDir ?? defaultOutDir(options);
	mkdirSync(join(outDir, RUN_FILES.hostsDir), { recursive: true });
	const files: LineFile[] = [];
	const open = (path: string): LineFile => {
		const f = openLineFile(path);
		files.push(f);
		return f;
	};
	const events = createEventLog(open(join(outDir, RUN_FILES.events)));
	const rng = createRng(options.seed);
	const build = chooseHostBuild(options.hostFrom);
	const names = Array.from({ length: options.hosts }, (_, i) => `H${i + 1}`);

	const commands = options.workload === "commands";
	const acquisitions = new Map<number, number>();
	const changes = (): number =>
		[...acquisitions.values()].reduce((sum, n) => sum + Math.max(0, n - 1), 0);
	// commands: partitions served at least once, and deployments after all were.
	const partitionsReady = new Set<number>();
	let partitionMoves = 0;
	let faultsStarted = 0;
	events.onEvent((e) => {
		if (e.event === "fault") faultsStarted++;
	});

	let storage: StorageBackend | undefined;
	let gaveUp: FirstServeState | undefined;
	const slowLoops = new SlowLoops();
	const hosts: ChaosHost[] = [];
	const emergency = (): void => {
		for (const h of hosts) h.killNow();
		storage?.killNow();
	};
	process.on("exit", emergency);
	const started = monoMs();
	try {
		say(`[chaos] seed ${options.seed}; logs in ${outDir}`);
		storage = await openStorageBackend(options, REPO_ROOT, outDir);
		const backend = storage;
		const clocks: HostClocks | undefined =
			options.faults.clock > 0 ? createHostClocks(join(outDir, "clocks"), names) : undefined;
		writeFileSync(
			join(outDir, RUN_FILES.run),
			`${JSON.stringify(
				{
					options,
					build,
					storage: backend.description,
					hostCommand: hostCommand(options, build, backend.hostArgs(0), {}).args,
				},
				null,
				"\t",
			)}\n`,
		);
		say(
			`[chaos] ${options.hosts} hosts (${build === "dist" ? "built apps/vvm-host/dist" : "sources via tsx"}), ${options.numVVM} slot(s), d = ${options.leadershipSeconds} s, on ${backend.description}${options.unsafeMutants.length > 0 ? `; UNSAFE MUTANTS ${options.unsafeMutants.join("+")}` : ""}`,
		);
		const restartRng = rng.fork("restarts");
		// Created before the hosts: their lines report progress to it from their first one, and the
		// run begins once it is complete (every slot led, or every partition served once).
		const wait = new FirstServeWait(commands ? options.partitions : options.numVVM, monoMs());
		// What the operator actions change between starts (placement, --num-vvm, --num-vvm-from).
		const cluster: { current: ClusterShape } = {
			current: { placement: options.placement, numVVM: options.numVVM, numVVMFrom: undefined },
		};
		let operator: Operator | undefined;
		names.forEach((name, i) => {
			hosts.push(
				new ChaosHost({
					name,
					command: () =>
						hostCommand(
							options,
							build,
							backend.hostArgs(i),
							clocks?.env(name) ?? {},
							cluster.current,
						),
					log: open(hostLogFile(outDir, name)),
					stderr: open(join(outDir, RUN_FILES.hostsDir, `${name}.stderr.log`)),
					events,
					restartDelayMs: () => restartRng.between(100, 1000),
					onLine: (h, line: HostLine) => {
						operator?.onLine(h, line);
						if (line.event === "acquired" && typeof line.slot === "number") {
							acquisitions.set(line.slot, (acquisitions.get(line.slot) ?? 0) + 1);
							if (!commands) wait.progress(monoMs(), acquisitions.size);
						}
						if (line.event === "partition-ready" && typeof line.partition === "number") {
							if (partitionsReady.size >= options.partitions) partitionMoves++;
							partitionsReady.add(line.partition);
							if (commands) wait.progress(monoMs(), partitionsReady.size);
						}
						// A lease granted is progress too: on a slow storage leases may lapse and be
						// granted again more than once before a partition is first served.
						if (line.event === "leases.granted") wait.progress(monoMs());
						slowLoops.record(line);
					},
				}),
			);
		});
		events.emit("run-start", { seed: options.seed, hosts: names, build });
		for (const h of hosts) h.start();

		let stopReason = "";
		const fatal = (): string | undefined => hosts.find((h) => h.fatal !== undefined)?.fatal;
		let lastWaitLine = monoMs();
		while (!wait.complete && !stop.aborted) {
			if (fatal() !== undefined) {
				stopReason = "host-config-error";
				break;
			}
			const now = monoMs();
			if (wait.expired(now)) {
				stopReason = "no-leader";
				gaveUp = wait.state(now);
				break;
			}
			if (now - lastWaitLine >= FIRST_SERVE_PROGRESS_MS) {
				lastWaitLine = now;
				say(`[chaos] waiting for the first leaders: ${firstServeText(wait.state(now), commands)}`);
			}
			await sleep(100, stop);
		}
		if (gaveUp !== undefined) say(`[chaos] no leader: ${firstServeText(gaveUp, commands)}`);
		const answers = open(join(outDir, RUN_FILES.answers));
		const load = commands ? undefined : startLoad(hosts, answers, options.loadIntervalMs);
		const clients: CommandLoad | undefined =
			commands && stopReason === ""
				? startCommandLoad(
						hosts,
						open(join(outDir, RUN_FILES.history)),
						{
							clients: options.clients,
							workspaces: Array.from({ length: options.workspaces }, (_, i) => 1001 + i),
							pauseMs: options.loadIntervalMs,
							requestTimeoutMs: 5_000,
							opTimeoutMs: 20_000,
						},
						rng.fork("clients"),
					)
				: undefined;
		const faults =
			stopReason === ""
				? startFaults(options, { hosts, storage: backend, clocks }, events, rng.fork("faults"))
				: undefined;
		if (stopReason === "" && commands && options.operator.length > 0)
			operator = startOperator(
				{ options, hosts, cluster, backend, build, events, say },
				rng.fork("operator"),
			);
		const runStart = monoMs();
		if (stopReason === "")
			say(
				commands
					? `[chaos] every partition is served after ${clockText(runStart - started)}; clients and faults start`
					: `[chaos] every slot has a leader after ${clockText(runStart - started)}; faults start`,
			);
		let lastProgress = runStart;
		while (stopReason === "") {
			await sleep(200, stop);
			const now = monoMs();
			if (stop.aborted) stopReason = "interrupted";
			else if (fatal() !== undefined) stopReason = "host-config-error";
			else if (options.changes !== undefined && changes() >= options.changes)
				stopReason = "changes";
			else if (options.durationS !== undefined && now - runStart >= options.durationS * 1000) {
				stopReason = "duration";
			}
			if (now - lastProgress >= options.progressSeconds * 1000 || stopReason !== "") {
				lastProgress = now;
				const leaders = hosts
					.flatMap((h) => [...h.slotsLed].map((s) => `s${s}=${h.name}`))
					.sort()
					.join(" ");
				const c = clients?.stats;
				if (c !== undefined) {
					say(
						`[chaos ${clockText(now - runStart)}] ops ${c.ops}: ok ${c.ok}, unknown ${c.unknown}, not written ${c.notWritten}, rejected ${c.rejected}, retries ${c.retries} | operator actions ${operator?.done ?? 0} | partition moves ${partitionMoves} | faults ${faultsStarted} (${faults?.active() ?? 0} active) | hosts up ${hosts.filter((h) => h.current).length}/${hosts.length}, starts ${hosts.reduce((n, h) => n + h.starts, 0)}`,
					);
					continue;
				}
				say(
					`[chaos ${clockText(now - runStart)}] changes ${changes()}${options.changes ? `/${options.changes}` : ""} | leaders ${leaders || "-"} | faults ${faultsStarted} (${faults?.active() ?? 0} active) | work ok ${load?.stats.accepted ?? 0}, refused ${load?.stats.refused ?? 0}, no answer ${load?.stats.failed ?? 0} | hosts up ${hosts.filter((h) => h.current).length}/${hosts.length}, starts ${hosts.reduce((n, h) => n + h.starts, 0)}`,
				);
			}
		}
		if (stopReason === "host-config-error") say(`[chaos] ${fatal()}`);
		let operatorReport: OperatorReport | undefined;
		if (operator !== undefined) {
			say("[chaos] the operator finishes its current action");
			operatorReport = await operator.stop();
		}
		say(`[chaos] stopping (${stopReason}); undoing faults, stopping load and hosts`);
		await faults?.stop();
		await load?.stop();
		if (clients !== undefined) {
			say(`[chaos] clients finish their last operations (at most ${DRAIN_MS / 1000} s)`);
			await clients.stop(DRAIN_MS);
		}
		await Promise.all(hosts.map((h) => h.shutdown()));
		events.emit("run-end", { reason: stopReason });
		for (const f of files) f.close();
		let commandReport: CommandReport | undefined;
		let finalRecovery: FinalRecovery | undefined;
		if (commands && clients !== undefined) {
			const direct = await backend.checkerStorage();
			try {
				const scope = { appId: HOST_APP_ID, partitions: options.partitions };
				say("[chaos] final recovery: every partition deployed once more, as its next holder would");
				finalRecovery = await recoverAllPartitions(direct.storage, {
					...scope,
					trustLevel: options.trustLevel,
				});
				say("[chaos] checking the clients' history against the storage");
				commandReport = await checkCommandHistory(await readHistory(outDir), direct.storage, scope);
			} finally {
				await direct.close();
			}
		}
		await backend.close();
		storage = undefined;
		const report = await checkRunDir(outDir);
		const epochs = commands ? await checkPartitionEpochs(outDir) : undefined;
		const slowReport = slowLoops.report();
		const result: RunResult = {
			options,
			outDir,
			build,
			storage: backend.description,
			elapsedMs: monoMs() - started,
			stopReason,
			...(gaveUp === undefined ? {} : { firstServe: gaveUp }),
			...(slowReport === undefined ? {} : { slowLoops: slowReport }),
			targetReached:
				stopReason !== "no-leader" &&
				stopReason !== "host-config-error" &&
				(options.changes === undefined || report.changes >= options.changes),
			load: { ...(load?.stats ?? { accepted: 0, refused: 0, failed: 0 }) },
			hostStarts: hosts.reduce((n, h) => n + h.starts, 0),
			report,
			...(commandReport === undefined ? {} : { commands: commandReport, partitionMoves }),
			...(finalRecovery === undefined ? {} : { finalRecovery }),
			...(epochs === undefined ? {} : { epochs }),
			...(operatorReport === undefined ? {} : { operator: operatorReport }),
		};
		writeFileSync(join(outDir, RUN_FILES.report), `${JSON.stringify(result, null, "\t")}\n`);
		return result;
	} finally {
		process.off("exit", emergency);
		emergency();
		for (const f of files) f.close();
		await storage?.close().catch(() => {});
	}
}
