import { spawn } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageDir = join(dirname(fileURLToPath(import.meta.url)), "..");
const fixture = join(packageDir, "test", "fixtures", "blocked-leader.ts");

interface ChildResult {
	readonly code: number | null;
	readonly signal: NodeJS.Signals | null;
	readonly stdout: string;
	readonly stderr: string;
	/** Parent's `Date.now()` when the child exited. */
	readonly exitedAt: number;
}

function runChild(args: readonly string[]): Promise<ChildResult> {
	return new Promise((resolve, reject) => {
		const child = spawn(
			process.execPath,
			["--conditions=@vvm/source", "--import", "tsx", fixture, ...args],
			{ cwd: packageDir, stdio: ["ignore", "pipe", "pipe"] },
		);
		let stdout = "";
		let stderr = "";
		child.stdout.on("data", (chunk: Buffer) => {
			stdout += chunk.toString();
		});
		child.stderr.on("data", (chunk: Buffer) => {
			stderr += chunk.toString();
		});
		child.on("error", reject);
		child.on("close", (code, signal) =>
			resolve({ code, signal, stdout, stderr, exitedAt: Date.now() }),
		);
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
		expect(result.stderr).toContain("leadership of 1 was not renewed within 1600 ms");
		expect(result.stderr).toContain("SIGKILL");
	}, 30_000);

	it("hands the line to `log` on the main thread when it answers, then kills", async () => {
		const result = await runChild(["log", "300"]);
		stamp(result.stdout, "SCHEDULED");
		expect(result.signal).toBe("SIGKILL");
		expect(result.stdout).toMatch(
			/^LOG \[@vvm\/ielections\] killer: test deadline; deadline passed/m,
		);
		expect(result.stderr).not.toContain("killer:");
	}, 30_000);

	it("falls back to stderr when `log` cannot run because the main thread is blocked", async () => {
		const result = await runChild(["block-log", "300"]);
		stamp(result.stdout, "SCHEDULED");
		expect(result.signal).toBe("SIGKILL");
		expect(result.stdout).not.toContain("LOG ");
		expect(result.stderr).toContain("[@vvm/ielections] killer: test deadline; deadline passed");
	}, 30_000);
});
