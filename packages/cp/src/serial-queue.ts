const noop = (): void => {};

/**
 * @internal Runs tasks one at a time, in submission order: the commands of one partition, so the
 * sequencer's methods are never called concurrently.
 */
export class SerialQueue {
	#tail: Promise<void> = Promise.resolve();
	/** Tasks submitted and not yet settled (the running one included). */
	length = 0;

	run<T>(task: () => Promise<T>): Promise<T> {
		this.length++;
		const done = (): void => {
			this.length--;
		};
		const result = this.#tail.then(task);
		this.#tail = result.then(done, done);
		return result;
	}

	/** Resolves once every task submitted so far has settled. */
	idle(): Promise<void> {
		return this.#tail.then(noop);
	}
}
