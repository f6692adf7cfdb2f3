// Issue 35 over a real PostgreSQL (the database's clock decides expiry): a renewal of a campaign's
// leadership finds its record gone (ELECTIONS_LOST). The lost leadership's killer stays armed, since
// its work may still be running, so the process is doomed; `campaign` used to take the free key
// again at once and was then SIGKILLed while leading, its fresh record blocking every other
// candidate for up to a whole duration. Now `campaign` never leads again after a loss: its `done`
// rejects with the ElectionsError and the process exits, as the README says; a process that ignores
// that is still SIGKILLed by the killer, but no longer holds the key when it dies.
// The candidates are child processes with the production killer (test/fixtures/campaign-child.ts).
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { createElectionsStorage } from "@vvm/ielections";
import { fromUtf8, utf8 } from "@vvm/ttlstorage";
import { afterEach, describe, expect, it } from "vitest";
import { createPgTTLStorage } from "../src/index.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const fixture = usePgSchema("vvm_campaign_killer", skip);
const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const childFile = join(packageDir, "test", "fixtures", "campaign-child.ts");
const run = `${process.pid}-${Date.now().toString(36)}`;
const D = 4; // seconds: renewals every 1 s, the lease 3.2 s after a send

interface Child {
	readonly process: ChildProcess;
	stdout: string;
	stderr: string;
	/** Resolves with the first stdout line matching `pattern`; rejects if the child ends first. */
	line(pattern: RegExp): Promise<RegExpExecArray>;
	/** Resolves when the child is gone, with the parent's monotonic ms of its exit. */
	readonly closed: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

const children = new Set<ChildProcess>();
afterEach(() => {
	for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
	children.clear();
});

const monoMs = (): number => Number(process.hrtime.bigint() / 1_000_000n);

function startChild(key: string, value: string, onLoss: "exit" | "linger"): Child {
	const { schema } = fixture();
	const proc = spawn(
		process.execPath,
		[
			"--conditions=@vvm/source",
			"--import",
			"tsx",
			childFile,
			schema,
			key,
			value,
			String(D),
			onLoss,
		],
		{ cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] },
	);
	children.add(proc);
	const waiters: {
		pattern: RegExp;
		resolve: (m: RegExpExecArray) => void;
		reject: (e: Error) => void;
	}[] = [];
	let ended = false;
	const child: Child = {
		process: proc,
		stdout: "",
		stderr: "",
		line(pattern) {
			const hit = new RegExp(pattern.source, "m").exec(child.stdout);
			if (hit !== null) return Promise.resolve(hit);
			if (ended)
				return Promise.reject(
					new Error(`child ended without ${pattern}: ${child.stdout}${child.stderr}`),
				);
			return new Promise((resolve, reject) => {
				waiters.push({ pattern: new RegExp(pattern.source, "m"), resolve, reject });
			});
		},
		closed: new Promise((resolve) => {
			let at = 0;
			proc.on("exit", () => {
				at = monoMs();
			});
			proc.on("close", (code, signal) => {
				ended = true;
				for (const w of waiters.splice(0))
					w.reject(new Error(`child ended without ${w.pattern}: ${child.stdout}${child.stderr}`));
				resolve({ code, signal, at });
			});
		}),
	};
	proc.stdout?.on("data", (chunk: Buffer) => {
		child.stdout += chunk.toString();
		for (const w of waiters.splice(0)) {
			const hit = w.pattern.exec(child.stdout);
			if (hit !== null) w.resolve(hit);
			else waiters.push(w);
		}
	});
	proc.stderr?.on("data", (chunk: Buffer) => {
		child.stderr += chunk.toString();
	});
	return child;
}

function storage() {
	const { pool, schema } = fixture();
	return createElectionsStorage<string, string>(createPgTTLStorage({ pool, schema }), {
		pKey: () => utf8("campaign-killer"),
		cCols: utf8,
		encodeValue: utf8,
		decodeValue: fromUtf8,
	});
}

const count = (text: string, word: string): number =>
	text.split("\n").filter((l) => l.startsWith(`${word} `)).length;

/** Starts a campaigning child, waits until it leads and renewed once, then deletes its record. */
async function leadThenLose(key: string, value: string, onLoss: "exit" | "linger") {
	const child = startChild(key, value, onLoss);
	await child.line(/^LEADING 1 /);
	await child.line(/^RENEWED /);
	const s = storage();
	// The record is gone: the child's next renewal (a compare-and-swap) returns false.
	expect(await s.compareAndDelete(key, value)).toBe(true);
	return { child, s };
}

describe.skipIf(skip)("campaign over PostgreSQL after a lost renewal (issue 35)", () => {
	it("does not lead again: done rejects with ELECTIONS_LOST, the process exits and the key is free", async () => {
		const key = `exit/${run}`;
		const value = `child-a#${run}`;
		const { child, s } = await leadThenLose(key, value, "exit");
		const end = await child.closed;
		expect({ code: end.code, signal: end.signal }).toEqual({ code: 3, signal: null });
		expect(child.stdout).toMatch(/^STOPPED ELECTIONS_LOST$/m);
		expect(child.stdout).toMatch(/^ENDED ELECTIONS_LOST$/m);
		expect(count(child.stdout, "LEADING")).toBe(1);
		expect(child.stderr).not.toContain("killer:");
		// Nobody holds the key: another candidate leads at once, not a whole duration later.
		expect(await s.get(key)).toBeUndefined();
		expect(await s.insertIfNotExist(key, "other", D)).toBe(true);
		await s.compareAndDelete(key, "other");
	}, 60_000);

	it("a process that ignores the loss is SIGKILLed by the armed killer, never while leading", async () => {
		const key = `linger/${run}`;
		const value = `child-b#${run}`;
		const { child, s } = await leadThenLose(key, value, "linger");
		await child.line(/^ENDED ELECTIONS_LOST$/);
		const lastRenewal = Number(
			[...child.stdout.matchAll(/^RENEWED (\d+)$/gm)].at(-1)?.[1] ?? Number.NaN,
		);
		// The campaign ended without taking the key back: another candidate leads while the doomed
		// process still runs.
		expect(await s.insertIfNotExist(key, "other", D)).toBe(true);
		const end = await child.closed;
		const afterRenewalMs = end.at - lastRenewal;
		console.info(
			`lingering loser killed ${afterRenewalMs} ms after its last good renewal (d = ${D} s)`,
		);
		expect(end.signal).toBe("SIGKILL");
		expect(child.stderr).toContain("was lost (ELECTIONS_LOST) and this process was still running");
		expect(count(child.stdout, "LEADING")).toBe(1);
		expect(child.stdout).toMatch(/^ALIVE /m);
		// The killer's deadline is the lost leadership's: before its last record would have expired
		// (the parent sees the exit late on a loaded machine, hence the slack).
		expect(afterRenewalMs).toBeLessThan(D * 1000 + 2_000);
		expect(await s.get(key)).toBe("other");
		await s.compareAndDelete(key, "other");
	}, 60_000);
});
