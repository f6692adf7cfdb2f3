import type { Clock } from "@vvm/clock";

/**
 * @internal How long the estimated wait must stay on the other side of the target before the
 * queue counts as standing (or no longer does): CoDel's interval. Bursts shorter than this are
 * absorbed up to the hard bound.
 */
export const STANDING_INTERVAL_MS = 100;

/** @internal The bounds of a {@link SerialQueue}'s admission, in ms of estimated wait. */
export interface QueueWaitBounds {
	/** No command is admitted whose estimated wait exceeds this (`maxQueueWaitMs`). */
	readonly maxWaitMs: number;
	/**
	 * Once the estimated wait has stayed above this for {@link STANDING_INTERVAL_MS} (a standing
	 * queue, not a burst), a command is admitted only when its estimated wait is within it (or no
	 * other command is waiting), until the estimate has stayed within it for an interval again
	 * (`queueWaitTargetMs`).
	 */
	readonly targetMs: number;
}

/**
 * @internal Runs tasks one at a time, in submission order: the commands of one partition, so the
 * sequencer's methods are never called concurrently. It measures the service time of its tasks
 * (a moving average) and estimates from it how long a task submitted now would wait:
 * {@link SerialQueue.shed} is the admission decision. No allocation beyond the task's own
 * promises: the estimate is a few numbers.
 */
export class SerialQueue {
	readonly #clock: Clock;
	readonly #bounds: QueueWaitBounds;
	readonly #noop = (): void => {};
	#tail: Promise<void> = Promise.resolve();
	/** Tasks submitted and not yet settled (the running one included). */
	length = 0;
	/** Moving average of a task's service time (ms, 1/8 weight to each new one); 0 until measured. */
	serviceMs = 0;
	#measured = false;
	/** When the running task started (monotonic). */
	#startedAt = 0;
	/** The queue is standing (see {@link QueueWaitBounds.targetMs}). */
	#standing = false;
	/** Since when the estimates contradict {@link SerialQueue.#standing} without a break; -1: none. */
	#contradictedSince = -1;
	readonly #done = (): void => {
		const now = this.#clock.monotonic();
		const sample = now - this.#startedAt;
		if (this.#measured) this.serviceMs += (sample - this.serviceMs) / 8;
		else {
			this.serviceMs = sample;
			this.#measured = true;
		}
		// The next task, if any, starts now (its `then` runs right after this one).
		this.#startedAt = now;
		this.length--;
		this.#observe(this.length * this.serviceMs, now);
	};

	constructor(clock: Clock, bounds: QueueWaitBounds) {
		this.#clock = clock;
		this.#bounds = bounds;
	}

	run<T>(task: () => Promise<T>): Promise<T> {
		if (this.length++ === 0) this.#startedAt = this.#clock.monotonic();
		const result = this.#tail.then(task);
		this.#tail = result.then(this.#done, this.#done);
		return result;
	}

	/** Resolves once every task submitted so far has settled. */
	idle(): Promise<void> {
		return this.#tail.then(this.#noop);
	}

	/**
	 * How long a task submitted now would wait before it starts (ms): the tasks ahead of it times
	 * the partition's pace, the slower of the average service time and the running task's time so
	 * far (a stalled storage shows at once, not only when the stalled task ends).
	 */
	waitEstimateMs(): number {
		const n = this.length;
		if (n === 0) return 0;
		return n * Math.max(this.serviceMs, this.#clock.monotonic() - this.#startedAt);
	}

	/**
	 * The admission decision for a task about to be submitted: `0` to admit it, else the estimated
	 * wait (ms, `>= 1`), which also says when the backlog will have drained. Shed when the wait
	 * would exceed `maxWaitMs`, or when the queue is standing and the wait would exceed
	 * `targetMs` while another task is already waiting.
	 */
	shed(): number {
		const n = this.length;
		const now = this.#clock.monotonic();
		const wait = n === 0 ? 0 : n * Math.max(this.serviceMs, now - this.#startedAt);
		this.#observe(wait, now);
		const { maxWaitMs, targetMs } = this.#bounds;
		if (wait > maxWaitMs || (this.#standing && n > 1 && wait > targetMs))
			return Math.max(1, Math.ceil(wait));
		return 0;
	}

	/** The queue is standing: commands are admitted only within `targetMs`. */
	get standing(): boolean {
		return this.#standing;
	}

	/** Flips {@link SerialQueue.#standing} once the estimates contradicted it for an interval. */
	#observe(waitMs: number, now: number): void {
		if (waitMs > this.#bounds.targetMs === this.#standing) this.#contradictedSince = -1;
		else if (this.#contradictedSince < 0) this.#contradictedSince = now;
		else if (now - this.#contradictedSince >= STANDING_INTERVAL_MS) {
			this.#standing = !this.#standing;
			this.#contradictedSince = -1;
		}
	}
}
