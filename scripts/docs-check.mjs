// The docs check: runs the shell blocks of the READMEs that a new user would type, as written, on a
// fresh clone of the repository, with the machine's own node and npm first on PATH (the repo-local
// Node 22 of a bootstrapped shell is taken off it), and fails naming README and line when one fails.
//
//   node scripts/docs-check.mjs [--worktree | --in-place] [--require-servers] [--only <text>] [--keep] [--verbose]
//
// Where it runs:
//   (default)    `git clone` of this repository's HEAD into a temp directory: committed work only;
//   --worktree   a copy of the working tree's tracked and untracked, not ignored, files (what
//                `git ls-files -co --exclude-standard` lists): uncommitted work included;
//   --in-place   the tree this script is in, as it is (for a tree that is a fresh copy already).
// --only <text> runs only the READMEs whose path contains <text>; --keep keeps the temp directory;
// --verbose prints every block's output as it comes (else only a failed block's last 40 lines).
// --require-servers (implied by CI=true: CI starts the servers before) fails a block whose server
// does not listen, instead of skipping it with the reason.
//
// Which blocks: a fenced block of language sh, bash or shell runs when the line just before its
// fence (blank lines aside) is a marker, with space-separated options:
//
//   <!-- docs-check: run -->                          run from the repository root, exit 0 expected
//   <!-- docs-check: run needs=pg,dynamodb -->        skipped (or failed, --require-servers) when
//                                                     PostgreSQL / DynamoDB Local / Cassandra /
//                                                     Redis (pg, dynamodb, cassandra, redis) does
//                                                     not listen
//   <!-- docs-check: run sigint-after=^leader: -->    Ctrl-C (SIGINT to the block's processes) at
//                                                     the first output line matching the regex
//   <!-- docs-check: run exit=137 -->                 another exit status expected
//   <!-- docs-check: run expect=^event\s1: -->        some output line must match the regex
//   <!-- docs-check: run timeout=240 -->              seconds (default 120)
//   <!-- docs-check: run background ready=http://127.0.0.1:8080/readyz port=8080 -->
//                                                     started and left running for the README's
//                                                     next blocks once the URL answers 2xx; Ctrl-C
//                                                     at the README's end; port: the rest of the
//                                                     README is skipped when it is taken already
//   <!-- docs-check: skip: <why a new user would not type this, or why CI cannot> -->
//
// Every shell block of a README under examples/ must carry a marker (an unmarked one fails the
// check); elsewhere only the marked ones run. Each block runs in `bash -e -o pipefail` from the
// repository root, the READMEs one after the other, a README's blocks in order.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { connect } from "node:net";
import { constants, tmpdir } from "node:os";
import { delimiter, dirname, join, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { stripVTControlCharacters } from "node:util";

const HERE = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const t0 = performance.now();
const since = () => `${((performance.now() - t0) / 1000).toFixed(0)} s`;
const log = (line) => console.log(`docs-check: ${line}`);

// --- arguments ------------------------------------------------------------------------------------
const args = process.argv.slice(2);
let mode = "clone";
let only = "";
let keep = false;
// As the real-server suites do: in CI a server that does not listen is a failure, not a skip.
let requireServers = process.env.CI === "true";
let verbose = false;
for (let i = 0; i < args.length; i++) {
	const a = args[i];
	if (a === "--worktree") mode = "worktree";
	else if (a === "--in-place") mode = "in-place";
	else if (a === "--keep") keep = true;
	else if (a === "--require-servers") requireServers = true;
	else if (a === "--verbose") verbose = true;
	else if (a === "--only" && i + 1 < args.length) only = args[++i];
	else {
		console.error(
			"usage: node scripts/docs-check.mjs [--worktree | --in-place] [--require-servers] [--only <text>] [--keep] [--verbose]",
		);
		process.exit(2);
	}
}

// --- the tree to check --------------------------------------------------------------------------
let scratch;
let root = HERE;
if (mode !== "in-place") {
	scratch = mkdtempSync(join(tmpdir(), "vvm-docs-check-"));
	root = join(scratch, "repo");
	const git = (...a) => spawnSync("git", ["-C", HERE, ...a], { encoding: "utf8" });
	if (mode === "clone") {
		const head = git("rev-parse", "--short", "HEAD").stdout.trim();
		log(`git clone of ${HERE} at ${head} (committed work only) into ${root}`);
		const r = spawnSync("git", ["clone", "--quiet", "--no-hardlinks", HERE, root], {
			stdio: "inherit",
		});
		if (r.status !== 0) {
			rmSync(scratch, { recursive: true, force: true });
			process.exit(1);
		}
	} else {
		log(`copy of the working tree of ${HERE} (tracked and untracked, not ignored) into ${root}`);
		const files = git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
			.stdout.split("\0")
			.filter((f) => f !== "" && existsSync(join(HERE, f)));
		const r = spawnSync(
			"bash",
			["-c", 'mkdir -p "$1" && tar --null -T - -cf - | tar -xf - -C "$1"', "copy", root],
			{ cwd: HERE, input: files.join("\0"), stdio: ["pipe", "inherit", "inherit"] },
		);
		if (r.status !== 0) {
			rmSync(scratch, { recursive: true, force: true });
			process.exit(1);
		}
	}
}

// --- the environment a new user has -----------------------------------------------------------------
// Off PATH: the repo-local Node and pnpm (.tools/) and node_modules/.bin of an `npm run` or a
// bootstrapped shell; out: what npm or the bootstrap set for their children.
const env = { ...process.env };
env.PATH = (env.PATH ?? "")
	.split(delimiter)
	.filter(
		(p) => p !== "" && !p.includes(`${sep}.tools${sep}`) && !p.includes(`node_modules${sep}.bin`),
	)
	.join(delimiter);
for (const k of Object.keys(env)) {
	if (
		/^npm_/i.test(k) ||
		["NODE_OPTIONS", "INIT_CWD", "VVM_BOOTSTRAP_INSTALLED", "VVM_NODE"].includes(k)
	)
		delete env[k];
}
const userNode = spawnSync("node", ["-v"], { env, encoding: "utf8" }).stdout?.trim() || "none";
const userNpm = spawnSync("npm", ["-v"], { env, encoding: "utf8" }).stdout?.trim() || "none";
log(
	`blocks run with the node and npm on PATH without the repo's .tools/: node ${userNode}, npm ${userNpm}`,
);

// --- the READMEs and their blocks -------------------------------------------------------------------
const SKIP_DIRS = new Set([
	"node_modules",
	".git",
	".tools",
	"dist",
	".turbo",
	".data",
	".vvm-data",
	".servers",
]);
function readmes(dir) {
	const out = [];
	for (const e of readdirSync(dir, { withFileTypes: true })) {
		if (e.isDirectory() && !SKIP_DIRS.has(e.name)) out.push(...readmes(join(dir, e.name)));
		else if (e.isFile() && e.name === "README.md") out.push(join(dir, e.name));
	}
	return out;
}

const MARKER = /^<!--\s*docs-check:\s*(.*?)\s*-->$/;
const SHELL = new Set(["sh", "bash", "shell"]);
const errors = [];

/** The shell blocks of one README, with their markers parsed. */
function blocksOf(file) {
	const rel = relative(root, file);
	const lines = readFileSync(file, "utf8").split("\n");
	const blocks = [];
	for (let i = 0; i < lines.length; i++) {
		const open = lines[i].match(/^ {0,3}(`{3,}|~{3,})\s*([\w-]*)/);
		if (!open) continue;
		let end = i + 1;
		while (end < lines.length && !lines[end].trim().startsWith(open[1])) end++;
		const lang = open[2];
		const text = lines.slice(i + 1, end).join("\n");
		const fenceLine = i + 1;
		i = end;
		if (!SHELL.has(lang)) continue;
		let j = fenceLine - 2;
		while (j >= 0 && lines[j].trim() === "") j--;
		const m = j >= 0 ? lines[j].trim().match(MARKER) : null;
		const where = `${rel}:${fenceLine}`;
		if (!m) {
			if (rel.startsWith(`examples${sep}`))
				errors.push(`${where}: a shell block without a docs-check marker (run, or skip: <reason>)`);
			continue;
		}
		const spec = m[1];
		if (/^skip\b/.test(spec)) {
			const reason = spec.replace(/^skip:?\s*/, "");
			if (reason === "") errors.push(`${where}: docs-check skip needs a reason`);
			blocks.push({ where, skip: reason, text });
			continue;
		}
		const [verb, ...opts] = spec.split(/\s+/);
		if (verb !== "run") {
			errors.push(`${where}: unknown docs-check marker "${spec}" (run … or skip: <reason>)`);
			continue;
		}
		const block = { where, text, needs: [], exit: 0, timeout: 120, background: false };
		for (const o of opts) {
			const [k, ...rest] = o.split("=");
			const v = rest.join("=");
			if (k === "background") block.background = true;
			else if (k === "needs") block.needs = v.split(",");
			else if (k === "exit") block.exit = Number(v);
			else if (k === "timeout") block.timeout = Number(v);
			else if (k === "sigint-after") block.sigintAfter = new RegExp(v);
			else if (k === "expect") block.expect = new RegExp(v);
			else if (k === "ready") block.ready = v;
			else if (k === "port") block.port = Number(v);
			else errors.push(`${where}: unknown docs-check option "${o}"`);
		}
		for (const n of block.needs)
			if (!SERVERS[n])
				errors.push(`${where}: needs=${n}: not one of ${Object.keys(SERVERS).join(", ")}`);
		if (block.background && !block.ready) errors.push(`${where}: background needs ready=<url>`);
		blocks.push(block);
	}
	return blocks;
}

// --- servers ------------------------------------------------------------------------------------
const hostPort = (s, port) => {
	const [h, p] = s.split(":");
	return { host: h || "127.0.0.1", port: Number(p || port) };
};
const SERVERS = {
	pg: () => ({
		name: "PostgreSQL",
		host: env.PGHOST || "127.0.0.1",
		port: Number(env.PGPORT || 54329),
	}),
	dynamodb: () => {
		const u = new URL(env.DYNAMODB_ENDPOINT || "http://127.0.0.1:8000");
		return { name: "DynamoDB Local", host: u.hostname, port: Number(u.port || 80) };
	},
	cassandra: () => ({
		name: "Cassandra",
		...hostPort((env.CASSANDRA_CONTACT_POINTS || "127.0.0.1:9042").split(",")[0], 9042),
	}),
	redis: () => {
		const u = new URL(env.REDIS_URL || `redis://127.0.0.1:${env.REDIS_PORT || 6390}`);
		return { name: "Redis", host: u.hostname, port: Number(u.port || 6379) };
	},
};
function listening(host, port) {
	return new Promise((done) => {
		const s = connect({ host, port });
		const end = (ok) => {
			s.destroy();
			done(ok);
		};
		s.setTimeout(1000, () => end(false));
		s.once("connect", () => end(true));
		s.once("error", () => end(false));
	});
}

// --- running a block ------------------------------------------------------------------------------
const live = new Set();
function killGroup(child, signal) {
	try {
		process.kill(-child.pid, signal);
	} catch {}
}
for (const sig of ["SIGINT", "SIGTERM"]) {
	process.on(sig, () => {
		for (const c of live) killGroup(c, "SIGKILL");
		if (scratch && !keep) rmSync(scratch, { recursive: true, force: true });
		process.exit(130);
	});
}

/** Starts a block in a process group of its own; its stdout and stderr lines are kept. */
function start(block) {
	const child = spawn("bash", ["-e", "-o", "pipefail", "-c", block.text], {
		cwd: root,
		env,
		detached: true,
		stdio: ["ignore", "pipe", "pipe"],
	});
	live.add(child);
	const run = { child, lines: [], onLine: () => {} };
	for (const stream of [child.stdout, child.stderr]) {
		let buf = "";
		stream.setEncoding("utf8").on("data", (d) => {
			buf += d;
			for (let n = buf.indexOf("\n"); n !== -1; n = buf.indexOf("\n")) {
				const line = stripVTControlCharacters(buf.slice(0, n)); // colours off
				buf = buf.slice(n + 1);
				run.lines.push(line);
				if (verbose) console.log(`    | ${line}`);
				run.onLine(line);
			}
		});
	}
	run.exited = new Promise((done) =>
		child.once("exit", (code, signal) => {
			live.delete(child);
			done(signal ? 128 + constants.signals[signal] : code);
		}),
	);
	return run;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Waits up to ms for the run to exit; SIGTERM then SIGKILL to its group if it does not. */
async function waitExit(run, ms) {
	const timedOut = Symbol();
	const got = await Promise.race([run.exited, sleep(ms).then(() => timedOut)]);
	if (got !== timedOut) return { status: got };
	killGroup(run.child, "SIGTERM");
	if ((await Promise.race([run.exited, sleep(5000).then(() => timedOut)])) === timedOut)
		killGroup(run.child, "SIGKILL");
	await run.exited;
	return { timedOut: true };
}

function tail(run, n = 40) {
	return run.lines
		.slice(-n)
		.map((l) => `    | ${l}`)
		.join("\n");
}

/** Runs one foreground block; returns undefined when it passed, else why it failed. */
async function runBlock(block) {
	const run = start(block);
	let interrupted = false;
	if (block.sigintAfter) {
		const check = (line) => {
			if (!interrupted && block.sigintAfter.test(line)) {
				interrupted = true;
				killGroup(run.child, "SIGINT");
			}
		};
		run.onLine = check;
		for (const l of run.lines) check(l);
	}
	const r = await waitExit(run, block.timeout * 1000);
	if (r.timedOut)
		return [
			`timed out after ${block.timeout} s${block.sigintAfter && !interrupted ? ` (no line matched ${block.sigintAfter})` : ""}`,
			run,
		];
	if (block.sigintAfter && !interrupted)
		return [`exited (${r.status}) before a line matched ${block.sigintAfter}`, run];
	if (r.status !== block.exit) return [`exit status ${r.status}, expected ${block.exit}`, run];
	if (block.expect && !run.lines.some((l) => block.expect.test(l)))
		return [`no output line matched ${block.expect}`, run];
	return [undefined, run];
}

/** Starts a background block and waits for its URL; returns [error, run]. */
async function startBackground(block) {
	const run = start(block);
	const deadline = performance.now() + block.timeout * 1000;
	let exited;
	run.exited.then((s) => {
		exited = s;
	});
	while (performance.now() < deadline && exited === undefined) {
		try {
			const res = await fetch(block.ready, { signal: AbortSignal.timeout(2000) });
			if (res.ok) return [undefined, run];
		} catch {}
		await sleep(500);
	}
	if (exited !== undefined) return [`exited (${exited}) before ${block.ready} answered`, run];
	await stopBackground(run);
	return [`${block.ready} did not answer within ${block.timeout} s`, run];
}

async function stopBackground(run) {
	killGroup(run.child, "SIGINT");
	const r = await waitExit(run, 20_000);
	return r.timedOut
		? "did not stop within 20 s of Ctrl-C (killed)"
		: `stopped on Ctrl-C (exit ${r.status})`;
}

// --- main -------------------------------------------------------------------------------------------
const files = readmes(root)
	.filter((f) => relative(root, f).includes(only))
	.sort();
const plan = files
	.map((f) => ({ file: relative(root, f), blocks: blocksOf(f) }))
	.filter((r) => r.blocks.length);
if (errors.length) {
	for (const e of errors) console.error(`docs-check: ${e}`);
	finish(1);
}
const total = plan.reduce((n, r) => n + r.blocks.filter((b) => !b.skip).length, 0);
log(`${total} blocks to run in ${plan.length} READMEs (${since()})`);

const failed = [];
const skipped = [];
let passed = 0;
let n = 0;
for (const { file, blocks } of plan) {
	const background = [];
	let rest;
	for (const block of blocks) {
		if (block.skip !== undefined) {
			skipped.push(`${block.where}: ${block.skip}`);
			continue;
		}
		n++;
		const head = `[${n}/${total}] ${block.where}`;
		if (rest) {
			log(`${head} skipped: ${rest}`);
			skipped.push(`${block.where}: ${rest}`);
			continue;
		}
		const missing = [];
		for (const need of block.needs) {
			const s = SERVERS[need]();
			if (!(await listening(s.host, s.port)))
				missing.push(`${s.name} is not listening on ${s.host}:${s.port}`);
		}
		if (missing.length) {
			const why = `${missing.join("; ")} (start it: bash tooling/servers/start-all.sh, or pnpm servers:start)`;
			if (requireServers) {
				log(`${head} FAILED: ${why}`);
				failed.push(`${block.where}: ${why}`);
			} else {
				log(`${head} skipped: ${why}`);
				skipped.push(`${block.where}: ${why}`);
			}
			continue;
		}
		if (block.port && (await listening("127.0.0.1", block.port))) {
			rest = `port ${block.port} is taken already on this machine (the README's program would not start)`;
			log(`${head} skipped: ${rest}`);
			skipped.push(`${block.where}: ${rest}`);
			continue;
		}
		const first =
			block.text.split("\n").find((l) => l.trim() !== "" && !l.trim().startsWith("#")) ?? "";
		log(
			`${head} ${block.background ? "in the background: " : ""}${first.trim()}${block.text.trim().includes("\n") ? " …" : ""} (${since()})`,
		);
		const t = performance.now();
		const [error, run] = block.background ? await startBackground(block) : await runBlock(block);
		const secs = ((performance.now() - t) / 1000).toFixed(1);
		if (error) {
			console.error(
				`docs-check: ${head} FAILED after ${secs} s: ${error}; the block:\n${block.text.replace(/^/gm, "    $ ")}\n  its last output lines:\n${tail(run)}`,
			);
			failed.push(`${block.where}: ${error}`);
			rest = `an earlier block of ${file} failed`;
			continue;
		}
		if (block.background) {
			log(`${head} answers at ${block.ready} after ${secs} s; left running for the next blocks`);
			background.push({ block, run });
		} else {
			passed++;
			log(`${head} ok (${secs} s)`);
		}
	}
	for (const { block, run } of background) {
		log(`${block.where}: ${await stopBackground(run)}`);
		passed++;
	}
}

log(`${passed} passed, ${skipped.length} skipped, ${failed.length} failed, in ${since()}`);
for (const s of skipped) log(`  skipped ${s}`);
for (const f of failed) console.error(`docs-check: FAILED ${f}`);
finish(failed.length ? 1 : 0);

function finish(status) {
	for (const c of live) killGroup(c, "SIGKILL");
	if (scratch) {
		if (keep) log(`kept ${scratch}`);
		else rmSync(scratch, { recursive: true, force: true });
	}
	process.exit(status);
}
