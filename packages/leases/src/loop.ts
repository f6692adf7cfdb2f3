import type { Clock, TimerHandle } from "@vvm/clock";

/**
 * A background task run every `intervalMs` on the clock, never twice at once: a run that is due
 * while one is in flight runs right after it. `trigger()` asks for a run now.
 * @internal
 */
export class Loop {
	readonly #clock: Clock;
	readonly #intervalMs: number;
	readonly #run: () => Promise<void>;
	readonly #onError: (error: unknown) => void;
	readonly #onDone: ((durationMs: number) => void) | undefined;
	#timer: TimerHandle | undefined;
	#running: Promise<void> | undefined;
	#pending = false;
	#stopped = true;

	/**
	 * `run` should handle its own errors; anything it throws goes to `onError`. `onDone` gets each
	 * run's duration on the clock's monotonic time (to tell a loop slower than its interval).
	 */
	constructor(
		clock: Clock,
		intervalMs: number,
		run: () => Promise<void>,
		onError: (error: unknown) => void,
		onDone?: (durationMs: number) => void,
	) {
		this.#clock = clock;
		this.#intervalMs = intervalMs;
		this.#run = run;
		this.#onError = onError;
		this.#onDone = onDone;
	}

	/** Arms the first run `intervalMs` from now (or runs at once with `immediately`). */
	start(immediately = false): void {
		this.#stopped = false;
		this.#arm();
		if (immediately) this.trigger();
	}

	#arm(): void {
		this.#timer?.cancel();
		if (this.#stopped) return;
		this.#timer = this.#clock.setTimer(
			this.#intervalMs,
			() => {
				this.#arm();
				this.trigger();
			},
			{ unref: true },
		);
	}

	trigger(): void {
		if (this.#stopped) return;
		if (this.#running !== undefined) {
			this.#pending = true;
			return;
		}
		this.#running = (async () => {
			try {
				do {
					this.#pending = false;
					const started = this.#clock.monotonic();
					try {
						await this.#run();
					} catch (error) {
						this.#onError(error);
					}
					this.#onDone?.(this.#clock.monotonic() - started);
				} while (this.#pending && !this.#stopped);
			} finally {
				this.#running = undefined;
			}
		})();
	}

	/** The run in flight, if any. */
	get running(): Promise<void> | undefined {
		return this.#running;
	}

	/** Stops arming runs and waits for the one in flight. */
	async stop(): Promise<void> {
		this.#stopped = true;
		this.#timer?.cancel();
		this.#timer = undefined;
		await this.#running;
	}
}
