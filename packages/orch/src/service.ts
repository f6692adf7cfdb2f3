/** What a {@link VVMService} gets when it starts. */
export interface VVMServiceContext {
	/**
	 * Aborted as soon as the service must stop acting: when shutdown begins or when the VVM has a
	 * problem (leadership lost, another service failed to start). `reason` says which.
	 */
	readonly signal: AbortSignal;
	/**
	 * `true` only while this VVM holds its leadership and the local lease deadline (the send time
	 * of the last successful renewal plus 0.8 of the duration) has not passed. Check it right
	 * before every action that must happen only on the leader.
	 */
	leaseValid(): boolean;
	/**
	 * The fencing token of this VVM's leadership: strictly greater than any earlier leader's of
	 * the slot. Put it on every write the service makes as leader and let the resource reject a
	 * smaller one. `undefined` when the leadership storage keeps no tokens.
	 */
	readonly fencingToken: number | undefined;
}

/**
 * A unit of work that runs only while the VVM is leader: an HTTP API, a command processor, a
 * worker. Services start in the configured order after the leadership is acquired and stop in
 * reverse order at shutdown. A service whose `start` rejects is a problem of the VVM
 * (`VVM_SERVICES_LAUNCH`), not a crash; it is not stopped (its `start` must clean up after
 * itself), while the services started before it are.
 *
 * @example
 * ```ts
 * const worker: VVMService = {
 *   name: "worker",
 *   async start({ signal, leaseValid }) {
 *     const timer = setInterval(() => { if (leaseValid()) doWork(); }, 1_000);
 *     signal.addEventListener("abort", () => clearInterval(timer), { once: true });
 *   },
 *   async stop() {},
 * };
 * ```
 */
export interface VVMService {
	/** Used in events and error messages. */
	readonly name: string;
	/** Resolves once the service runs; rejects if it cannot start. */
	start(context: VVMServiceContext): Promise<void>;
	/** Resolves once the service stopped and released its resources. */
	stop(): Promise<void>;
}
