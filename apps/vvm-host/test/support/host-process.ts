// Spawns the host (its build when up to date, else its sources: src/launch.ts) and follows its
// JSON log lines.
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { chooseHostBuild, HOST_DIR, hostCliArgs } from "../../src/launch.ts";
import { systemMonotonicMs } from "../../src/logger.ts";

export const APP_DIR: string = HOST_DIR;

export interface LogLine {
	readonly level: number;
	readonly time: number;
	readonly pid: number;
	readonly event?: string;
	readonly msg?: string;
	readonly [key: string]: unknown;
}

export interface HostProcess {
	readonly name: string;
	readonly child: ChildProcess;
	readonly pid: number;
	readonly lines: LogLine[];
	readonly stderr: string[];
	/** Resolves with the first log line (past or future) matching `predicate`. */
	waitFor(predicate: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
	/** `at`: the test's `Date.now()`; `mono`: `CLOCK_MONOTONIC` ms, as the host's `mono` log field. */
	readonly exited: Promise<{
		code: number | null;
		signal: NodeJS.Signals | null;
		at: number;
		mono: number;
	}>;
	/** The bound HTTP port, from the `listening` line (within `timeoutMs`, as {@link waitFor}). */
	port(timeoutMs?: number): Promise<number>;
}

export function spawnHost(
	name: string,
	args: readonly string[],
	env: Readonly<Record<string, string>> = {},
): HostProcess {
	const child = spawn(process.execPath, [...hostCliArgs(chooseHostBuild()), ...args], {
		cwd: APP_DIR,
		env: { ...process.env, VVM_STORAGE: "", CI: process.env.CI ?? "", ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	const lines: LogLine[] = [];
	const stderr: string[] = [];
	const waiters = new Set<{ predicate: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
	createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
		let line: LogLine;
		try {
			line = JSON.parse(text) as LogLine;
		} catch {
			stderr.push(`[stdout] ${text}`);
			return;
		}
		lines.push(line);
		for (const w of [...waiters]) {
			if (w.predicate(line)) {
				waiters.delete(w);
				w.resolve(line);
			}
		}
	});
	createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (t) =>
		stderr.push(t),
	);
	const exited: HostProcess["exited"] = new Promise((resolveExit) => {
		child.once("exit", (code, signal) =>
			resolveExit({ code, signal, at: Date.now(), mono: systemMonotonicMs() }),
		);
	});
	const waitFor = (predicate: (l: LogLine) => boolean, timeoutMs = 20_000): Promise<LogLine> => {
		const found = lines.find(predicate);
		if (found) return Promise.resolve(found);
		return new Promise((resolveLine, reject) => {
			const waiter = {
				predicate,
				resolve: (l: LogLine) => {
					clearTimeout(timer);
					resolveLine(l);
				},
			};
			// A safety net so a broken host fails the test instead of hanging it; not a timing assertion.
			const timer = setTimeout(() => {
				waiters.delete(waiter);
				reject(
					new Error(
						`${name}: no matching log line within ${timeoutMs} ms\nstdout:\n${lines
							.map((l) => JSON.stringify(l))
							.join("\n")}\nstderr:\n${stderr.join("\n")}`,
					),
				);
			}, timeoutMs);
			waiters.add(waiter);
			void exited.then(() => {
				if (!waiters.has(waiter)) return;
				setTimeout(() => {
					if (!waiters.has(waiter)) return;
					waiters.delete(waiter);
					clearTimeout(timer);
					reject(
						new Error(
							`${name} exited before the expected log line; last lines:\n${lines
								.slice(-40)
								.map((l) => JSON.stringify(l))
								.join("\n")}\nstderr:\n${stderr.join("\n")}`,
						),
					);
				}, 200);
			});
		});
	};
	return {
		name,
		child,
		pid: child.pid as number,
		lines,
		stderr,
		waitFor,
		exited,
		async port(timeoutMs?: number) {
			const line = await waitFor((l) => l.event === "listening", timeoutMs);
			return line.port as number;
		},
	};
}

/** Kills the process by PID if it still runs (SIGCONT first, in case it was stopped). */
export function killHard(host: HostProcess): void {
	if (host.child.exitCode !== null || host.child.signalCode !== null) return;
	try {
		process.kill(host.pid, "SIGCONT");
		process.kill(host.pid, "SIGKILL");
	} catch {
		// already gone
	}
}

/** Runs the CLI to completion and returns its exit code and output. */
export async function runCli(
	args: readonly string[],
	env: Readonly<Record<string, string>> = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
	const child = spawn(process.execPath, [...hostCliArgs(chooseHostBuild()), ...args], {
		cwd: APP_DIR,
		env: { ...process.env, VVM_STORAGE: "", ...env },
		stdio: ["ignore", "pipe", "pipe"],
	});
	let stdout = "";
	let stderr = "";
	child.stdout.on("data", (d: Buffer) => {
		stdout += d.toString();
	});
	child.stderr.on("data", (d: Buffer) => {
		stderr += d.toString();
	});
	const code = await new Promise<number | null>((r) => child.once("close", (c) => r(c)));
	return { code, stdout, stderr };
}
