// Runs an example the way its README says, from its directory (the current one), and checks what
// it prints. Plain Node, no dependencies: it runs in the rehearsal's consumer directories.
//
//   node run-example.mjs leader-election ts|js   # dynamodb, cassandra, level
//   node run-example.mjs leader-election-pg ts|js
//   node run-example.mjs election-redis ts|js   # failover, then the paused-holder demo
//   node run-example.mjs sequencer-level ts|js
//   node run-example.mjs host-command-fetch ts|js   # against the host at VVM_HOST_URL
//   node run-example.mjs cp-over-leases ts|js
//
// ts runs src/<name>.ts (Node's type stripping), js runs dist/<name>.js (emitted by tsc).
// Env: DYNAMODB_ENDPOINT, CASSANDRA_CONTACT_POINTS, PGHOST/PGPORT/PGUSER/PGDATABASE, REDIS_URL
// (default the loopback servers).
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const [example, mode] = process.argv.slice(2);
const EXAMPLES = [
	"leader-election",
	"leader-election-pg",
	"election-redis",
	"sequencer-level",
	"host-command-fetch",
	"cp-over-leases",
];
if (!EXAMPLES.includes(example) || !["ts", "js"].includes(mode)) {
	console.error(`usage: run-example.mjs ${EXAMPLES.join("|")} ts|js`);
	process.exit(2);
}
const WAIT_MS = 30_000;
const entry = (name) => (mode === "ts" ? `src/${name}.ts` : `dist/${name}.js`);
const unique = `${process.pid}_${Date.now().toString(36)}`;

/** A child process whose stdout lines are kept with the time they arrived. */
function start(label, file, env = {}) {
	const child = spawn(process.execPath, [file], {
		env: { ...process.env, ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	const run = { label, child, lines: [], waiters: [], stderr: "" };
	let buffer = "";
	child.stdout.setEncoding("utf8").on("data", (chunk) => {
		buffer += chunk;
		for (let i = buffer.indexOf("\n"); i !== -1; i = buffer.indexOf("\n")) {
			const line = { text: buffer.slice(0, i), at: performance.now() };
			buffer = buffer.slice(i + 1);
			run.lines.push(line);
			console.log(`  [${label}] ${line.text}`);
			for (const w of [...run.waiters]) w();
		}
	});
	child.stderr.setEncoding("utf8").on("data", (chunk) => {
		run.stderr += chunk;
	});
	run.exited = new Promise((resolve) => {
		child.once("exit", (code, signal) => resolve({ code, signal, at: performance.now() }));
	});
	return run;
}

function fail(message, ...runs) {
	for (const r of runs) if (r.stderr) console.error(`  [${r.label} stderr]\n${r.stderr}`);
	throw new Error(message);
}

/** The first line matching `pattern`, waiting up to WAIT_MS for it. */
function waitLine(run, pattern) {
	return new Promise((resolve, reject) => {
		const check = () => {
			const line = run.lines.find((l) => pattern.test(l.text));
			if (line === undefined) return false;
			clearTimeout(timer);
			run.waiters.splice(run.waiters.indexOf(check), 1);
			resolve(line);
			return true;
		};
		const timer = setTimeout(() => {
			run.waiters.splice(run.waiters.indexOf(check), 1);
			reject(new Error(`${run.label}: no line matching ${pattern} within ${WAIT_MS} ms`));
		}, WAIT_MS);
		run.waiters.push(check);
		check();
	});
}

async function expectExit(run, expected) {
	let timer;
	const timeout = new Promise((resolve) => {
		timer = setTimeout(resolve, WAIT_MS, undefined);
	});
	const exit = await Promise.race([run.exited, timeout]);
	clearTimeout(timer);
	if (exit === undefined) {
		run.child.kill("SIGKILL");
		fail(`${run.label} did not exit within ${WAIT_MS} ms`, run);
	}
	const got = exit.signal ?? exit.code;
	if (got !== expected) fail(`${run.label} exited with ${got}, expected ${expected}`, run);
	return exit;
}

/** Two processes on one job: A leads, B waits; SIGINT to A; B leads once A has released. */
async function failover(backend, env, file = backend) {
	console.log(`leader-election/${backend} (${mode}): A leads, B follows, SIGINT A, B takes over`);
	const a = start(`${backend} A`, entry(file), env);
	let b;
	try {
		await waitLine(a, /^leader: /);
		b = start(`${backend} B`, entry(file), env);
		await waitLine(b, /^follower: /);
		a.child.kill("SIGINT");
		const stoppedWorking = await waitLine(a, /^stopped working/); // printed before the release
		await waitLine(a, /^released: /);
		await expectExit(a, 0);
		const bLeads = await waitLine(b, /^leader: /);
		if (bLeads.at < stoppedWorking.at) fail("B led while A was still working", a, b);
		b.child.kill("SIGINT");
		await expectExit(b, 0);
	} finally {
		for (const r of [a, b])
			if (r !== undefined && r.child.exitCode === null) r.child.kill("SIGKILL");
	}
}

/** A paused lock holder wakes up: its write lands with Redlock and is refused when fenced. */
async function pauseDemo(env) {
	console.log(
		`election-redis pause-demo (${mode}): Redlock's stale write lands, the fenced one not`,
	);
	const run = start("pause-demo", entry("pause-demo"), env);
	await expectExit(run, 0);
	for (const want of [
		/^ {2}A: write landed$/,
		/^ {2}A: write refused \(TTLSTORAGE_FENCED\)$/,
		/^redlock: the stale write landed: the resource holds A's data/,
		/^ielections: the stale write was refused: the resource holds B's data$/,
	])
		if (!run.lines.some((l) => want.test(l.text)))
			fail(`pause-demo printed no line matching ${want}`, run);
}

/** One host: lead, SIGINT, and a restart leads at its first attempt (the record was deleted). */
async function restart(dataDir) {
	console.log(`leader-election/level (${mode}): lead, SIGINT, restart leads at once`);
	for (const label of ["level run 1", "level run 2"]) {
		const run = start(label, entry("level"), { DATA_DIR: dataDir, JOB: `rehearsal_${unique}` });
		try {
			const leads = await waitLine(run, /^leader: /);
			// Leading at once, not after waiting for the previous run's record to expire.
			if (run.lines.some((l) => l.at <= leads.at && /^follower: /.test(l.text)))
				fail(`${label} waited for a leader record the previous run should have deleted`, run);
			run.child.kill("SIGINT");
			await waitLine(run, /^released: /);
			await expectExit(run, 0);
		} finally {
			if (run.child.exitCode === null) run.child.kill("SIGKILL");
		}
	}
}

/** Three runs on one database, the second SIGKILLed: the numbers stay dense across all of them. */
async function sequencer(dataDir) {
	console.log(`sequencer-level (${mode}): 5 commands, a crash after 2, 3 more; no gap, no repeat`);
	const runs = [
		[{ COMMANDS: "5" }, 0],
		[{ COMMANDS: "5", CRASH_AFTER: "2" }, "SIGKILL"],
		[{ COMMANDS: "3" }, 0],
	];
	const events = [];
	for (const [i, [env, expected]] of runs.entries()) {
		const run = start(`run ${i + 1}`, entry("main"), { DATA_DIR: dataDir, ...env });
		await expectExit(run, expected);
		for (const { text } of run.lines) {
			const m = text.match(/^event (\d+): workspace (\d+) wlog (\d+) record (\d+)$/);
			if (m) events.push(m.slice(1).map(Number));
		}
	}
	const next = new Map();
	events.forEach(([offset, wsid, wlog, record], i) => {
		const want = next.get(wsid) ?? { wlog: 1, record: 200_001 };
		if (offset !== i + 1 || wlog !== want.wlog || record !== want.record) {
			throw new Error(
				`event ${i + 1}: got offset ${offset}, wlog ${wlog}, record ${record} for workspace ${wsid}; expected offset ${i + 1}, wlog ${want.wlog}, record ${want.record}`,
			);
		}
		next.set(wsid, { wlog: wlog + 1, record: record + 1 });
	});
	if (events.length !== 10)
		throw new Error(`expected 10 events over the three runs, got ${events.length}`);
}

/** Two runs on one workspace of a running host: each creates a record and reads the same one back. */
async function hostCommand() {
	const url = process.env.VVM_HOST_URL;
	if (url === undefined)
		throw new Error("host-command-fetch needs VVM_HOST_URL (a running vvm-host)");
	// A workspace of its own per run of this script (several Node lines share one host).
	const wsid = String(1_000 + (Date.now() % 1_000_000_000));
	console.log(`host-command-fetch (${mode}): two creates and reads in workspace ${wsid} at ${url}`);
	for (const n of [1, 2]) {
		const run = start(`run ${n}`, entry("main"), { VVM_HOST_URL: url, WSID: wsid });
		await expectExit(run, 0);
		const json = (prefix) => {
			const line = run.lines.find((l) => l.text.startsWith(prefix));
			if (line === undefined) fail(`run ${n} printed no "${prefix}" line`, run);
			return JSON.parse(line.text.slice(prefix.length));
		};
		const created = json("created: ");
		const record = json("read: ");
		const id = created.NewIDs?.["1"];
		if (created.CurrentWLogOffset !== n || !Number.isSafeInteger(id))
			fail(`run ${n}: expected WLog offset ${n} and a new ID, got ${JSON.stringify(created)}`, run);
		if (record["sys.ID"] !== id || record.name !== "Ada Lovelace")
			fail(`run ${n}: read ${JSON.stringify(record)}, expected record ${id}`, run);
	}
}

/** Two nodes over one LevelDB: four creates, one node stops, the other reads all four. */
async function cpOverLeases(dataDir) {
	console.log(`cp-over-leases (${mode}): creates on two nodes, node a stops, b reads them all`);
	const run = start("cp-over-leases", entry("main"), { DATA_DIR: dataDir });
	await expectExit(run, 0);
	const created = run.lines.filter((l) => /^created in workspace \d+ on node [ab]:1/.test(l.text));
	const read = run.lines.filter((l) =>
		/^read in workspace (\d+) on node b:1: Ada \1$/.test(l.text),
	);
	if (created.length !== 4 || read.length !== 4 || !run.lines.some((l) => l.text === "done"))
		fail(`expected 4 creates, 4 reads on node b and "done"; got ${run.lines.length} lines`, run);
}

const scratch = mkdtempSync(join(tmpdir(), "vvm-example-"));
try {
	if (example === "leader-election") {
		const shared = {
			JOB: `rehearsal_${unique}`,
			TABLE: "rehearsal_leaders",
			KEYSPACE: "rehearsal_leaders",
		};
		await failover("dynamodb", {
			...shared,
			DYNAMODB_ENDPOINT: process.env.DYNAMODB_ENDPOINT ?? "http://127.0.0.1:8000",
		});
		await failover("cassandra", shared);
		await restart(join(scratch, "level"));
	} else if (example === "leader-election-pg") {
		// The repository's PostgreSQL (tooling/servers/postgres) unless PG* say otherwise.
		await failover("pg", {
			JOB: `rehearsal_${unique}`,
			PGHOST: process.env.PGHOST ?? "127.0.0.1",
			PGPORT: process.env.PGPORT ?? "54329",
			PGUSER: process.env.PGUSER ?? "vvm",
			PGDATABASE: process.env.PGDATABASE ?? "vvm",
		});
	} else if (example === "election-redis") {
		// The repository's Redis (tooling/servers/redis) unless REDIS_URL says otherwise.
		const env = {
			JOB: `rehearsal_${unique}`,
			REDIS_URL: process.env.REDIS_URL ?? "redis://127.0.0.1:6390",
		};
		await failover("redis", env, "main");
		await pauseDemo(env);
	} else if (example === "sequencer-level") {
		await sequencer(join(scratch, "sequencer"));
	} else if (example === "cp-over-leases") {
		await cpOverLeases(join(scratch, "cp-over-leases"));
	} else {
		await hostCommand();
	}
	console.log(`${example} (${mode}): ok`);
} finally {
	rmSync(scratch, { recursive: true, force: true });
}
