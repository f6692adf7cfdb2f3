// One host of the chaos cluster ("H1", "H2", ...): a vvm-host process, restarted whenever it
// exits, each start a new incarnation (a new PID and leader-value nonce). Its stdout lines go,
// unchanged, to hosts/<name>.log for the checker; the chaos tool only peeks at them.
import type { ChildProcess } from "node:child_process";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import type { EventLog } from "./events.ts";
import type { LineFile } from "./jsonl-file.ts";
import { monoMs } from "./mono.ts";

/** How to start the host program. */
export interface HostCommand {
	readonly command: string;
	readonly args: readonly string[];
	readonly cwd: string;
	readonly env: Readonly<Record<string, string>>;
}

/** One process of a host. */
export interface Incarnation {
	readonly pid: number;
	readonly child: ChildProcess;
	readonly startedMono: number;
	/** From its `listening` line. */
	port: number | undefined;
	/** The leader value `address#nonce`, from its `listening` line. */
	holder: string | undefined;
	/** Slots it leads as far as its log says (acquired, not yet lost or released). */
	readonly slotsLed: Set<number>;
	exited: boolean;
	readonly exit: Promise<void>;
}

/** A parsed host log line the tool looks at. */
export interface HostLine {
	readonly event?: string;
	readonly slot?: number;
	readonly [field: string]: unknown;
}

/** Options of {@link ChaosHost}. */
export interface ChaosHostOptions {
	readonly name: string;
	/** Built afresh for each start (clock offsets live in files the command points at). */
	readonly command: () => HostCommand;
	readonly log: LineFile;
	readonly stderr: LineFile;
	readonly events: EventLog;
	/** Delay before a restart, ms (a seeded draw). */
	readonly restartDelayMs: () => number;
	readonly onLine?: (host: ChaosHost, line: HostLine) => void;
}

/** A host: its current incarnation, restarts, and what faults may do to it. */
export class ChaosHost {
	readonly name: string;
	readonly #options: ChaosHostOptions;
	#current: Incarnation | undefined;
	#restart = true;
	#restartTimer: NodeJS.Timeout | undefined;
	/** A process fault (kill, stop, starve, restart) is on this host now. */
	busy = false;
	starts = 0;
	/**
	 * Set when an incarnation exited with code 2 (the host refused its configuration): it is not
	 * restarted, and the run stops with this reason.
	 */
	fatal: string | undefined;
	readonly #stderrTail: string[] = [];

	constructor(options: ChaosHostOptions) {
		this.name = options.name;
		this.#options = options;
	}

	/** The running incarnation, if any. */
	get current(): Incarnation | undefined {
		const c = this.#current;
		return c !== undefined && !c.exited ? c : undefined;
	}

	/** Slots the running incarnation leads (by its log). */
	get slotsLed(): ReadonlySet<number> {
		return this.current?.slotsLed ?? new Set();
	}

	/** Starts an incarnation now. */
	start(): Incarnation {
		const { command, args, cwd, env } = this.#options.command();
		const child = spawn(command, [...args], { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
		const pid = child.pid;
		if (pid === undefined) throw new Error(`${this.name}: the host process did not start`);
		this.starts++;
		let markExited: () => void = () => {};
		const incarnation: Incarnation = {
			pid,
			child,
			startedMono: monoMs(),
			port: undefined,
			holder: undefined,
			slotsLed: new Set(),
			exited: false,
			exit: new Promise<void>((resolve) => {
				markExited = resolve;
			}),
		};
		this.#current = incarnation;
		this.#options.events.emit("host-start", { host: this.name, pid, start: this.starts });
		createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (text) => {
			this.#options.log.write(text);
			let line: HostLine;
			try {
				line = JSON.parse(text) as HostLine;
			} catch {
				return;
			}
			this.#observe(incarnation, line);
			this.#options.onLine?.(this, line);
		});
		createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (text) => {
			this.#options.stderr.write(`${pid} ${text}`);
			this.#stderrTail.push(text);
			if (this.#stderrTail.length > 5) this.#stderrTail.shift();
		});
		child.once("exit", (code, signal) => {
			incarnation.exited = true;
			this.#options.events.emit("host-exit", {
				host: this.name,
				pid,
				code,
				signal,
				slotsLed: [...incarnation.slotsLed],
			});
			incarnation.slotsLed.clear();
			markExited();
			if (code === 2) {
				// Bad configuration: every restart would fail the same way.
				this.#restart = false;
				this.fatal = `${this.name} exited 2 (bad configuration): ${this.#stderrTail.join(" | ")}`;
			}
			if (this.#restart) {
				this.#restartTimer = setTimeout(() => {
					this.#restartTimer = undefined;
					if (this.#restart) this.start();
				}, this.#options.restartDelayMs());
			}
		});
		return incarnation;
	}

	#observe(inc: Incarnation, line: HostLine): void {
		switch (line.event) {
			case "listening":
				inc.port = line.port as number;
				inc.holder = line.holder as string;
				return;
			case "acquired":
				if (typeof line.slot === "number") inc.slotsLed.add(line.slot);
				return;
			case "lost":
			case "released":
				if (typeof line.slot === "number") inc.slotsLed.delete(line.slot);
				return;
			case "problem":
			case "shutdown-started":
				inc.slotsLed.clear();
				return;
		}
	}

	/**
	 * Sends `signal` to the running incarnation (only if it is `pid`, when given: a fault aimed
	 * at one process never hits its successor); `false` when none runs.
	 */
	signal(signal: NodeJS.Signals, pid?: number): boolean {
		const c = this.current;
		if (c === undefined || (pid !== undefined && c.pid !== pid)) return false;
		try {
			process.kill(c.pid, signal);
			return true;
		} catch {
			return false;
		}
	}

	/**
	 * Ends the host for good: no more restarts; SIGCONT (it may be stopped), SIGTERM, and SIGKILL
	 * after `graceMs`. Resolves once it exited.
	 */
	async shutdown(graceMs = 10_000): Promise<void> {
		this.#restart = false;
		if (this.#restartTimer !== undefined) clearTimeout(this.#restartTimer);
		const c = this.current;
		if (c === undefined) return;
		this.signal("SIGCONT");
		this.signal("SIGTERM");
		const timer = setTimeout(() => this.signal("SIGKILL"), graceMs);
		await c.exit;
		clearTimeout(timer);
	}

	/**
	 * An operator's stop (a `--num-vvm` change, a placement switch): like {@link shutdown}, but
	 * {@link resume} starts the host again. Faults find no running incarnation meanwhile.
	 */
	async pause(graceMs = 10_000): Promise<void> {
		await this.shutdown(graceMs);
	}

	/** Starts the host again after {@link pause}, with what its command says now; restarts resume. */
	resume(): void {
		if (this.fatal !== undefined || this.current !== undefined) return;
		this.#restart = true;
		this.start();
	}

	/** Last resort (the tool itself is exiting): SIGKILL without waiting. */
	killNow(): void {
		this.#restart = false;
		if (this.#restartTimer !== undefined) clearTimeout(this.#restartTimer);
		this.signal("SIGCONT");
		this.signal("SIGKILL");
	}
}
