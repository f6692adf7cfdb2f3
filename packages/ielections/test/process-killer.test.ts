import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const fixture = join(packageDir, "test", "fixtures", "blocked-leader.ts");
const exitStamp = join(packageDir, "test", "fixtures", "exit-stamp.mjs");

interface ChildResult {
	readonly code: number | null;
	readonly signal: NodeJS.Signals | null;
	readonly stdout: string;
	readonly stderr: string;
	/** Parent's `process.hrtime` ms (CLOCK_MONOTONIC, as the child's stamps) when the child exited. */
	readonly exitedAt: number;
}

// A child the killer failed to kill would spin forever: every test ends with its children gone
// (each runs in a process group of its own: the wrapper and the child together).
const groups = new Set<number>();
afterEach(() => {
	for (const pgid of groups) {
		try {
			process.kill(-pgid, "SIGKILL");
		} catch {
			// already gone
		}
	}
	groups.clear();
});

/** `stamped`: run through exit-stamp.mjs, which prints `EXITED <mono ms> <signal>`. */
function runChild(args: readonly string[], stamped = false): Promise<ChildResult> {
	return new Promise((resolve, reject) => {
		const node = ["--conditions=@vvm/source", "--import", "tsx", fixture, ...args];
		const child = spawn(
			process.execPath,
			stamped ? [exitStamp, process.execPath, ...node] : node,
			// detached: a group of its own, so cleanup can kill the wrapper and the child together
			{ cwd: packageDir, stdio: ["ignore", "pipe", "pipe"], detached: true },
		);
		groups.add(child.pid as number);
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (chunk: Buffer) => {
			stdout += chunk.toString();
		});
		child.stderr.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		child.on("error", reject);
		let exitedAt = 0;
		child.on("exit", () => {
			exitedAt = Number(process.hrtime.bigint() / 1_000_000n);
		});
		child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr, exitedAt }));
	});
}

function stamp(stdout: string, word: string): number {
	const match = new RegExp(`^${word} (\\d+)$`, "m").exec(stdout);
	if (match === null) throw new Error(`child never printed ${word}; stdout: ${stdout}`);
	return Number(match[1]);
}

describe("processKiller", () => {
	it("kills a leader whose event loop is blocked, at the 0.8 d deadline, and says why", async () => {
		const durationSeconds = 2;
		const deadlineMs = durationSeconds * 1000 * 0.8;
		const result = await runChild(["block", String(durationSeconds)]);
		const acquiredAt = stamp(result.stdout, "ACQUIRED");
		const lived = result.exitedAt - acquiredAt;
		// Measured, not a timing assertion: generous tolerance for a loaded 2-core machine.
		console.info(`blocked leader killed ${lived} ms after acquiring (deadline ${deadlineMs} ms)`);
		expect(result.signal).toBe("SIGKILL");
		expect(lived).toBeGreaterThanOrEqual(deadlineMs - 100);
		expect(lived).toBeLessThan(deadlineMs + 2_000);
		expect(result.stderr).toContain("[@vvm/ielections] killer:");
		expect(result.stderr).toContain(
			"leadership of 1: no renewal succeeded within 1600 ms of the insert that acquired it",
		);
		expect(result.stderr).toContain("SIGKILL");
	}, 30_000);

	it("kills a leader whose renewal hangs and whose event loop is blocked before its record expires", async () => {
		// d = 10: the first renewal (sent at S) succeeds, so the record expires at S + 10 s; the
		// second hangs, its killer deadline is min(now + 0.75 d, S + d - 0.025 d) = S + 9.75 s, and the
		// log grace (100 ms, the main thread never answers) comes out of that, not after it. The
		// death is stamped by an idle wrapper process, not by this (busy) test runner.
		const d = 10;
		const result = await runChild(["hang-block", String(d)], true);
		const renewalSentAt = stamp(result.stdout, "RENEWAL_SENT");
		stamp(result.stdout, "HANGING");
		const exit = /^EXITED (\d+) (\S+)$/m.exec(result.stdout);
		const diedAt = Number(exit?.[1]);
		const recordExpiresAt = renewalSentAt + d * 1000;
		const marginMs = recordExpiresAt - diedAt;
		console.info(
			`hung, blocked leader killed ${marginMs} ms before its record expired (deadline margin ${d * 25} ms)`,
		);
		expect(exit?.[2]).toBe("SIGKILL");
		expect(result.stdout).not.toContain("LOG ");
		expect(result.stderr).toContain("renewal attempt 1 did not finish within");
		// Dead before the record expired (the parent sees the exit after the fact, so this is
		// conservative), and not before the deadline's log grace began.
		expect(marginMs).toBeGreaterThan(0);
		expect(diedAt).toBeGreaterThanOrEqual(recordExpiresAt - d * 25 - 100);
	}, 40_000);

	it("is disarmed by cleanup(): a library that let go of its leadership is not killed", async () => {
		const d = 1;
		const result = await runChild(["release", String(d)]);
		stamp(result.stdout, "RELEASED");
		// Lived 3 d after the release: well past every deadline the leadership ever had.
		stamp(result.stdout, "ALIVE");
		expect({ code: result.code, signal: result.signal, stderr: result.stderr }).toEqual({
			code: 0,
			signal: null,
			stderr: "",
		});
	}, 30_000);

	it("gives a disarmed killer's slot back: more than 64 killers in turn, and a reused slot still kills", async () => {
		const result = await runChild(["reuse", "300"]);
		stamp(result.stdout, "REUSED");
		stamp(result.stdout, "SCHEDULED");
		expect(result.signal).toBe("SIGKILL");
		// Killed for the reused slot's own deadline, not for one of the disarmed ones. The line goes
		// to `log` (stdout here) or, when the main thread does not answer within the 100 ms grace
		// (a loaded machine), to stderr: either is right, this test is about the slot.
		const said = `${result.stdout}\n${result.stderr}`;
		expect(said).toMatch(/\[@vvm\/ielections\] killer: test deadline; /);
		expect(said).not.toContain("far deadline");
	}, 30_000);

	it("hands the line to `log` on the main thread when it answers, then kills", async () => {
		const result = await runChild(["log", "300"]);
		stamp(result.stdout, "SCHEDULED");
		expect(result.signal).toBe("SIGKILL");
		// The line is handed over during the log grace, before the deadline.
		expect(result.stdout).toMatch(
			/^LOG \[@vvm\/ielections\] killer: test deadline; deadline in \d+ ms; killing process/m,
		);
		expect(result.stderr).not.toContain("killer:");
	}, 30_000);

	it("falls back to stderr when `log` cannot run because the main thread is blocked", async () => {
		const result = await runChild(["block-log", "300"]);
		stamp(result.stdout, "SCHEDULED");
		expect(result.signal).toBe("SIGKILL");
		expect(result.stdout).not.toContain("LOG ");
		expect(result.stderr).toMatch(
			/\[@vvm\/ielections\] killer: test deadline; deadline (in|passed) /,
		);
	}, 30_000);
});
