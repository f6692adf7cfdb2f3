// A paused lock holder wakes up and writes: with Redlock the stale write lands; with @vvm/ielections
// and a write fenced by its token, Redis refuses it. Both on the Redis at REDIS_URL (default
// redis://127.0.0.1:6379). Each side runs two holder processes, A and B, of this same file:
//
//   1. A takes the lock (Redlock: 2 s; ielections: a 2 s lease and its fencing token), checks that
//      it still holds it, and is paused right after the check, before its write: it stops itself
//      with SIGSTOP (a stop-the-world GC pause, a frozen VM, a laptop lid);
//   2. B waits until A's lock has expired, takes it, writes the resource, and exits;
//   3. A is resumed (SIGCONT) and goes on with the write it was about to make.
//
// The resource is a Redis key: with Redlock a plain SET (what the lock is meant to protect), with
// ielections the storage's fenced put (the token is the fence's epoch, raised by each holder when
// it takes over). JOB names the demo's keys (default "pause-demo"; tokens keep growing across runs).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createElections, createElectionsStorage } from "@vvm/ielections";
import { fromUtf8, TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { createRedisTTLStorage, REDIS_CLIENT_OPTIONS } from "@vvm/ttlstorage-redis";
import { Redis } from "ioredis";
import Redlock from "redlock";

type Kind = "redlock" | "ielections";
const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const job = process.env.JOB ?? "pause-demo";
const LOCK_MS = 2_000;
const redlockResource = `examples-redlock:${job}`; // Redlock's lock key is `${redlockResource}:lock`
const [reportP, reportC] = [utf8("reports"), utf8(job)];

async function connect(): Promise<Redis> {
	const client = new Redis(url, { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
	client.on("error", (error) => console.error(`redis: ${error.message}`));
	await client.connect();
	return client;
}

/** Says what the holder checked; A then stops itself until SIGCONT: the pause, before its write. */
function checked(name: string, check: string, paused: boolean): void {
	console.log(`${name}: ${check}${paused ? "; paused before its write" : ""}`);
	if (!paused) return;
	process.kill(process.pid, "SIGSTOP");
	console.log(`${name}: resumed, writing`);
}

/** One holder: takes the lock, writes the resource (after a pause for A), releases. */
async function holder(kind: Kind, name: string, paused: boolean): Promise<void> {
	const client = await connect();
	const data = `written by ${name}`;
	try {
		if (kind === "redlock") {
			// redlock 4 calls eval(args, callback), which ioredis serves (its types are node_redis' own).
			// It retries every 100 ms for up to 10 s: B waits out A's lock.
			const servers = [client as unknown as Redlock.CompatibleRedisClient];
			const redlock = new Redlock(servers, { retryCount: 100, retryDelay: 100 });
			const lock = await redlock.lock(`${redlockResource}:lock`, LOCK_MS);
			const left = lock.expiration - Date.now();
			checked(name, `holds the Redlock lock, ${left} ms left`, paused);
			await client.set(redlockResource, data, "EX", 600);
			console.log(`${name}: write landed`);
			await lock.unlock().catch((error: Error) => console.log(`${name}: unlock: ${error.message}`));
			return;
		}
		const storage = createRedisTTLStorage({ client, keyPrefix: "examples:", sweepIntervalMs: 0 });
		const elections = createElections(
			createElectionsStorage<string, string>(storage, {
				pKey: () => utf8("leaders"),
				cCols: utf8,
				encodeValue: utf8,
				decodeValue: fromUtf8,
			}),
			// The demo turns the killer off to show what the fence does on its own. Keep it on in
			// production: it would likely end A as it wakes, but not a write already on its way (a
			// slow network, a proxy holding it); nothing but the resource can refuse that one.
			{ killer: { schedule: () => {}, disarm: () => {} } },
		);
		let signal: AbortSignal | undefined;
		for (let i = 0; signal === undefined && i < 100; i++) {
			signal = await elections.acquireLeadership(job, `${name}#${process.pid}`, LOCK_MS / 1000);
			if (signal === undefined) await new Promise((r) => setTimeout(r, 100));
		}
		const state = elections.leadership(job);
		if (state?.fencingToken === undefined) throw new Error(`${name}: not elected within 10 s`);
		const fence = { scope: utf8(`fence/${job}`), epoch: BigInt(state.fencingToken) };
		await storage.raiseFence(fence.scope, fence.epoch); // as a new leader does first
		const check = `leads with fencing token ${state.fencingToken}, ${Math.round(state.leaseTimeLeftMs)} ms left`;
		checked(name, check, paused);
		try {
			await storage.put(reportP, reportC, utf8(data), 600, { fence });
			console.log(`${name}: write landed`);
		} catch (error) {
			if (!TTLStorageError.is(error) || error.code !== "TTLSTORAGE_FENCED") throw error;
			console.log(`${name}: write refused (${error.code})`);
		}
		await elections.cleanup(); // A's was lost at its first renewal after the pause: nothing to delete
		await storage.close();
	} finally {
		client.disconnect();
	}
}

/** A holder process of this file; `line(text)` resolves once it has printed a line containing it. */
function start(kind: Kind, name: string, paused: boolean) {
	const file = fileURLToPath(import.meta.url);
	const args = [...process.execArgv, file, "holder", kind, name, String(paused)];
	const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"] });
	const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
	let seen = "";
	child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
		seen += chunk;
		process.stdout.write(chunk.replace(/^(?=.)/gm, "  "));
	});
	const line = (text: string) =>
		new Promise<void>((resolve, reject) => {
			const check = () => seen.includes(text) && resolve();
			child.stdout.on("data", check);
			void exited.then(() => reject(new Error(`${name} exited before printing "${text}"`)));
			check();
		});
	return { child, exited, line };
}

/** One side: A paused after its check, B meanwhile, A resumed; then what the resource holds. */
async function scenario(kind: Kind, read: () => Promise<string | undefined>): Promise<string> {
	console.log(`--- ${kind}`);
	const a = start(kind, "A", true);
	try {
		await a.line("paused before its write");
		const b = start(kind, "B", false); // waits until A's lock has expired
		if ((await b.exited) !== 0) throw new Error(`${kind}: B failed`);
		a.child.kill("SIGCONT");
		if ((await a.exited) !== 0) throw new Error(`${kind}: A failed`);
	} finally {
		if (a.child.exitCode === null) a.child.kill("SIGKILL");
	}
	const holds = await read();
	return holds === "written by A"
		? "the stale write landed: the resource holds A's data, written over B's after A's lock had expired"
		: `the stale write was refused: the resource holds ${holds === "written by B" ? "B's data" : String(holds)}`;
}

if (process.argv[2] === "holder") {
	const [kind, name, paused] = process.argv.slice(3);
	await holder(kind as Kind, name ?? "?", paused === "true");
} else {
	const client = await connect();
	const storage = createRedisTTLStorage({ client, keyPrefix: "examples:", sweepIntervalMs: 0 });
	try {
		const redlock = await scenario(
			"redlock",
			async () => (await client.get(redlockResource)) ?? undefined,
		);
		const fenced = await scenario("ielections", async () => {
			const value = await storage.get(reportP, reportC);
			return value === undefined ? undefined : fromUtf8(value);
		});
		console.log(`redlock: ${redlock}`);
		console.log(`ielections: ${fenced}`);
	} finally {
		await storage.close();
		client.disconnect();
	}
}
