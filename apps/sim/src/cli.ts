// `pnpm --filter @vvm/sim sim`: runs seeds, replays one, shrinks a failure. See README.md.
import { parseArgs } from "node:util";
import type { ProfileName } from "./profiles.ts";
import { PROFILES } from "./profiles.ts";
import {
	livenessProblems,
	loadProfile,
	profileOfSeed,
	runMany,
	runParallel,
	shrinkSeed,
	tallyLine,
} from "./runner.ts";
import { runSeed, START } from "./world.ts";

// `--placement`: the placement part (README, "Placement"), with options of its own.
if (process.argv.includes("--placement")) {
	const { placementMain } = await import("./placement-cli.ts");
	process.exit(await placementMain(process.argv.slice(2)));
}

const { values } = parseArgs({
	options: {
		seeds: { type: "string", default: "1000" },
		from: { type: "string", default: "1" },
		seed: { type: "string" },
		profile: { type: "string", default: "all" },
		soak: { type: "boolean", default: false },
		mutant: { type: "boolean", default: false },
		"mutant-never-serve": { type: "boolean", default: false },
		overlaps: { type: "boolean", default: false },
		level: { type: "string" },
		pipeline: { type: "string" },
		"stop-at-first": { type: "boolean", default: false },
		trace: { type: "boolean", default: false },
		"no-shrink": { type: "boolean", default: false },
		kind: { type: "string" },
		"stop-on": { type: "string" },
		stride: { type: "string", default: "1" },
		workers: { type: "string", default: "1" },
		json: { type: "boolean", default: false },
		"budget-ms": { type: "string" },
	},
});

const names: ProfileName[] =
	values.profile === "all" ? [...PROFILES] : (values.profile?.split(",") as ProfileName[]);
for (const n of names)
	if (!PROFILES.includes(n)) {
		console.error(`unknown profile ${n}; one of ${PROFILES.join(", ")}, or all`);
		process.exit(2);
	}
const level = values.level === undefined ? undefined : (Number(values.level) as 0 | 1 | 2);
const mutant = values.mutant === true;
const neverServe = values["mutant-never-serve"] === true;
const neverServeOpt = {
	...(neverServe ? { neverServe: true } : {}),
	...(values.overlaps === true ? { overlaps: true } : {}),
};
const pipeline = values.pipeline === undefined ? undefined : Number(values.pipeline);
const pipelineOpt = pipeline === undefined ? {} : { pipelineDepth: pipeline };

if (values.seed !== undefined) {
	const seed = Number(values.seed);
	for (const name of [profileOfSeed(seed, names)]) {
		const profile = await loadProfile(name);
		const r = await runSeed({
			seed,
			profile,
			keepTrace: values.trace,
			unsafeUnfenced: mutant,
			...neverServeOpt,
			...(level === undefined ? {} : { trustLevel: level }),
			...pipelineOpt,
		});
		console.log(
			`seed ${seed} profile ${name}: ${r.ok ? "ok" : "FAILED"} (${r.config}) trace ${r.traceHash}, ${r.steps} steps, ${r.faults.length} faults, ${r.virtualMs} virtual ms${r.stuck ? ", STUCK" : ""}`,
		);
		if (values.trace) for (const line of r.trace ?? []) console.log(`  ${line}`);
		if (r.ok) continue;
		for (const a of r.anomalies) console.log(`  ${a}`);
		for (const c of r.causes.filter((x) => !r.anomalies.includes(x))) console.log(`  cause: ${c}`);
		if (values["no-shrink"]) continue;
		const s = await shrinkSeed(
			{
				seed,
				profile,
				unsafeUnfenced: mutant,
				...neverServeOpt,
				...(level === undefined ? {} : { trustLevel: level }),
				...pipelineOpt,
			},
			r,
			values.kind,
		);
		console.log(
			`shortest failing schedule (${s.runs} replays): ops ${s.ops}, ${s.result.faults.length} of ${r.faults.length} faults kept`,
		);
		console.log(`  ${s.result.config}`);
		for (const f of s.result.faults) console.log(`  t=${f.at - START} ms  #${f.n}  ${f.what}`);
		console.log("  anomalies:");
		for (const a of s.result.anomalies) console.log(`    ${a}`);
		for (const c of s.result.causes.filter((x) => !s.result.anomalies.includes(x)))
			console.log(`    cause: ${c}`);
		console.log(
			`replay: pnpm --filter @vvm/sim sim --seed ${seed} --profile ${name}${level === undefined ? "" : ` --level ${level}`}${mutant ? " --mutant" : ""}${values.overlaps === true ? " --overlaps" : ""}${pipeline === undefined ? "" : ` --pipeline ${pipeline}`}`,
		);
	}
	process.exit(0);
}

const count = values.soak ? Number.MAX_SAFE_INTEGER : Number(values.seeds);
const json = values.json === true;
const many = {
	from: Number(values.from),
	count,
	stride: Number(values.stride),
	profiles: names,
	unsafeUnfenced: mutant,
	...neverServeOpt,
	...(level === undefined ? {} : { trustLevel: level }),
	...pipelineOpt,
	stopAtFirst: values["stop-at-first"] || values["stop-on"] !== undefined,
	...(values["stop-on"] === undefined ? {} : { stopOn: values["stop-on"].split(",") }),
	...(values["budget-ms"] === undefined ? {} : { budgetMs: Number(values["budget-ms"]) }),
	...(json ? {} : { progress: (line: string) => console.log(line) }),
};
const workers = Number(values.workers);
const summary = workers > 1 ? await runParallel(many, workers) : await runMany(many);
// A stuck seed, or a profile that acknowledged nothing (or too little), fails the batch as a
// failed seed does: every safety check passes on a run whose partition never served.
const liveness = livenessProblems(summary);
const code = summary.failures.length === 0 && liveness.length === 0 ? 0 : 1;
if (json) {
	// Exit once the line is written: stdout to a pipe is asynchronous, and a process.exit right
	// after a long line (many failures) cut it, so the parallel runner found no summary.
	process.stdout.write(`${JSON.stringify(summary)}\n`, () => process.exit(code));
} else {
	console.log(
		`${summary.seeds} seeds (profiles ${names.join(",")}, one per seed in turn; ${workers} worker${workers > 1 ? "s" : ""}) in ${(summary.ms / 1000).toFixed(1)} s: ${summary.runsPerSecond.toFixed(1)} seeds/s (CPU ${(summary.cpuMs / 1000).toFixed(1)} s); ${summary.failures.length} failed, ${summary.stuck} stuck`,
	);
	console.log(`  ${tallyLine(summary)}`);
	for (const f of summary.failures.slice(0, 20))
		console.log(
			`  FAILED seed ${f.seed} profile ${f.profile} at ${(f.atMs / 1000).toFixed(1)} s: ${f.anomalies[0]}`,
		);
	for (const p of liveness) console.log(`  FAILED (liveness): ${p}`);
	process.exit(code);
}
