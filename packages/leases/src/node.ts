import { randomBytes } from "node:crypto";
import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { BatchState, StoredShard } from "./batch-store.ts";
import { BatchStore } from "./batch-store.ts";
import { LeasesError } from "./errors.ts";
import type { LeaseEvent, SlowLoop } from "./events.ts";
import { Heartbeat } from "./heartbeat.ts";
import { LocalLeases } from "./holder.ts";
import { leaseKeys } from "./keys.ts";
import type { LeaseChange, LeaseTable, LeaseView } from "./lease-table.ts";
import { LeaseTableState } from "./lease-table.ts";
import { Loop } from "./loop.ts";
import type { Counters, LeaseMetrics } from "./metrics.ts";
import { newCounters, noteBatchRead } from "./metrics.ts";
import type { LeaseHolder } from "./model.ts";
import type { LeaseNodeOptions, ResolvedOptions } from "./options.ts";
import { resolveOptions } from "./options.ts";
import { PlacementActor } from "./placement-actor.ts";
import { NO_KILLER, PlacementDriverCandidate } from "./placement-driver.ts";
import { SlowRuns } from "./slow-runs.ts";

/** Waits until no background work of a node is in flight (test suites only). @internal */
export const kIdle: unique symbol = Symbol("vvm.leases.idle");
/** Whether background work of a node is in flight (test suites only). @internal */
export const kBusy: unique symbol = Symbol("vvm.leases.busy");
/** The node's placement-driver candidate (test suites only). @internal */
export const kCandidate: unique symbol = Symbol("vvm.leases.candidate");
/** The held deadline of a group, even just past it (test suites only). @internal */
export const kHeldDeadline: unique symbol = Symbol("vvm.leases.heldDeadline");
/** Stops every loop without touching storage or ending leases: a crash (test suites only). @internal */
export const kCrash: unique symbol = Symbol("vvm.leases.crash");

/**
 * One host's membership in a lease cluster: its heartbeat, the leases it holds (and the
 * callbacks that start and stop its groups), its copy of the lease table, and optionally a
 * placement-driver candidate.
 *
 * @example
 * ```ts
 * await using node = createLeaseNode({ storage, address: "10.0.0.1:8080", placementDriver: { groups: 64 } });
 * await node.start();
 * if (!node.serving(7)) reply(421, node.holderOf(7)?.holder.address);
 * ```
 */
export interface LeaseNode extends AsyncDisposable {
	readonly address: string;
	/** Unique per process start: leases name it, so a restarted host never inherits old ones. */
	readonly incarnation: string;
	/**
	 * Aborts when the node stops: `close()` (`LEASES_CLOSED`), or another process took this
	 * address over (`LEASES_REPLACED`: every lease ended at once; the host should exit).
	 */
	readonly signal: AbortSignal;
	/**
	 * Joins the cluster (writes the heartbeat), reads the lease table, then starts the background
	 * loops. Rejects with `LEASES_STORAGE_ERROR` when storage fails, or with `signal.reason`; the
	 * node is closed then (its heartbeat deleted if it was written). A batch that needs an
	 * operator (`LEASES_BATCH_ROOT_MISSING`, `LEASES_CORRUPT_RECORD`) does not fail it: the node
	 * starts, serves nothing, and reports the fault (`batch-fault` event, `metrics().batchFault`).
	 */
	start(options?: { readonly signal?: AbortSignal }): Promise<void>;
	/** Whether this host may serve `group` now: it holds the lease and its local deadline has not passed. */
	serving(group: number): boolean;
	/** Local deadline (`clock.monotonic()`) of a served group. */
	deadline(group: number): number | undefined;
	/** Groups this host serves now, ascending. */
	servedGroups(): number[];
	/** The live lease of `group` as this host knows it (who to send a 421 to), or `undefined`. */
	holderOf(group: number): LeaseView | undefined;
	/** The whole table, for `GET /leases`. */
	table(): LeaseTable;
	metrics(): LeaseMetrics;
	/**
	 * Reads the batch now (polling does it every `pollIntervalMs`). Rejects with
	 * `LEASES_STORAGE_ERROR`, `LEASES_CORRUPT_RECORD` or `LEASES_BATCH_ROOT_MISSING`.
	 */
	refresh(options?: { readonly signal?: AbortSignal }): Promise<void>;
	/**
	 * Resolves with the live lease of `group` as soon as one is known (at once if it is); rejects
	 * with `signal.reason` when `signal` aborts, or `LEASES_CLOSED`.
	 */
	waitForHolder(group: number, options?: { readonly signal?: AbortSignal }): Promise<LeaseView>;
	/**
	 * Stops serving every group (`closed`), gives up the placement driver's leadership, deletes
	 * the heartbeat and stops every loop. Idempotent.
	 */
	close(): Promise<void>;
}

/** Test hooks of a node, behind symbols. @internal */
export interface NodeInternals {
	[kIdle](): Promise<void>;
	readonly [kBusy]: boolean;
	readonly [kCandidate]: PlacementDriverCandidate | undefined;
	[kCrash](): Promise<void>;
	[kHeldDeadline](group: number): number | undefined;
}

/** The test hooks of a node made by {@link createLeaseNode}. @internal */
export function internals(node: LeaseNode): NodeInternals {
	return node as unknown as NodeInternals;
}

interface Waiter {
	readonly group: number;
	readonly resolve: (view: LeaseView) => void;
	readonly reject: (reason: unknown) => void;
}

class LeaseNodeImpl implements LeaseNode {
	readonly address: string;
	readonly incarnation: string;
	readonly #o: ResolvedOptions;
	readonly #options: LeaseNodeOptions;
	readonly #clock: Clock;
	readonly #store: BatchStore;
	readonly #heartbeat: Heartbeat;
	readonly #local: LocalLeases;
	readonly #table = new LeaseTableState();
	readonly #counters: Counters = newCounters();
	readonly #controller = new AbortController();
	readonly #heartbeatLoop: Loop;
	readonly #pollLoop: Loop;
	readonly #candidate: PlacementDriverCandidate | undefined;
	readonly #waiters = new Set<Waiter>();
	#batch: BatchState | undefined;
	/** `clock.monotonic()` at the start of the last read of the batch that succeeded. */
	#lastReadAt: number | undefined;
	/** `clock.monotonic()` when `start()` was called. */
	#startedAt: number | undefined;
	#started = false;
	#closing: Promise<void> | undefined;

	constructor(options: LeaseNodeOptions) {
		this.#o = resolveOptions(options);
		this.#options = options;
		const o = this.#o;
		this.#clock = options.clock ?? systemClock;
		this.address = o.address;
		this.incarnation = `${Math.floor(this.#clock.now()).toString(36)}-${randomBytes(4).toString("hex")}`;
		const me: LeaseHolder = { address: this.address, incarnation: this.incarnation };
		const keys = leaseKeys(o.namespace);
		this.#store = new BatchStore(o.storage, keys);
		this.#local = new LocalLeases(me, this.#clock, o.maxClockSkewMs, {
			onGranted: options.onGranted,
			onEnded: options.onEnded,
			onAcksChanged: () => this.#heartbeatLoop.trigger(),
			emit: (e) => this.#emit(e),
		});
		this.#heartbeat = new Heartbeat({
			storage: o.storage,
			keys,
			holder: me,
			ttlSeconds: o.heartbeatTtlSeconds,
			acks: () => this.#local.acks(),
			deploying: () => this.#local.deploying(),
			accepting: () => this.#accepting(),
			clock: this.#clock,
		});
		const slow = (loop: SlowLoop, intervalMs: number): SlowRuns =>
			new SlowRuns({
				loop,
				intervalMs,
				leaseIntervalMs: o.leaseIntervalMs,
				clock: this.#clock,
				emit: (e) => this.#emit(e),
				count: () => {
					this.#counters.slowRuns++;
				},
			});
		const slowBeats = slow("heartbeat", o.heartbeatIntervalMs);
		this.#heartbeatLoop = new Loop(
			this.#clock,
			o.heartbeatIntervalMs,
			() => this.#beat(),
			(e) => this.#storageError("heartbeat", e),
			(ms) => slowBeats.record(ms),
		);
		const slowPolls = slow("poll", o.pollIntervalMs);
		this.#pollLoop = new Loop(
			this.#clock,
			o.pollIntervalMs,
			() => this.#poll(),
			(e) => this.#storageError("read", e),
			(ms) => slowPolls.record(ms),
		);
		const pd = o.placementDriver;
		if (pd !== undefined) {
			const writer = `${this.address}/${this.incarnation}`;
			const actor = new PlacementActor({
				store: this.#store,
				writer,
				clock: this.#clock,
				groups: pd.groups,
				leaseIntervalMs: o.leaseIntervalMs,
				maxClockSkewMs: o.maxClockSkewMs,
				prolongBelowMs: o.prolongBelowMs,
				freshWindowMs: o.freshWindowMs,
				counters: this.#counters,
				emit: (e) => this.#emit(e),
				onWritten: (shards) => this.#applyLocalWrite(shards),
				limit: pd.recordLimit,
			});
			this.#candidate = new PlacementDriverCandidate({
				storage: o.storage,
				keys,
				writer,
				clock: this.#clock,
				actor,
				tickMs: o.tickIntervalMs,
				slowTicks: slow("tick", o.tickIntervalMs),
				leadershipSeconds: pd.leadershipSeconds,
				killer: pd.killer ?? NO_KILLER,
				counters: this.#counters,
				emit: (e) => this.#emit(e),
			});
		}
	}

	get signal(): AbortSignal {
		return this.#controller.signal;
	}

	#emit(event: LeaseEvent): void {
		try {
			this.#options.onEvent?.(event);
		} catch {
			// A throwing listener must never break the leases.
		}
	}

	#storageError(operation: "heartbeat" | "read" | "leave", error: unknown): void {
		this.#counters.storageErrors++;
		this.#emit({ type: "storage-error", at: this.#clock.now(), operation, error });
	}

	async start(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
		const signal = options.signal;
		if (this.#controller.signal.aborted) throw this.#controller.signal.reason;
		if (this.#started) throw new TypeError("[@vvm/leases] start() was already called");
		this.#started = true;
		this.#startedAt = this.#clock.monotonic();
		try {
			signal?.throwIfAborted();
			try {
				await this.#heartbeat.join();
			} catch (error) {
				throw new LeasesError("LEASES_STORAGE_ERROR", "joining the cluster failed", {
					cause: error,
				});
			}
			signal?.throwIfAborted();
			try {
				await this.refresh(options);
			} catch (error) {
				// A batch an operator has to repair does not keep the host out: it joins, serves
				// nothing, reports the fault (event, `metrics().batchFault`) and takes its leases
				// once the batch is usable again.
				if (noteBatchRead(this.#counters, error) === undefined) throw error;
				this.#emit({ type: "batch-fault", at: this.#clock.now(), operation: "read", error });
			}
		} catch (error) {
			// A node that could not start leaves nothing behind: its heartbeat goes, if written.
			await this.close();
			throw error;
		}
		if (this.#controller.signal.aborted) return;
		this.#heartbeatLoop.start();
		this.#pollLoop.start();
		this.#candidate?.start();
	}

	async #beat(): Promise<void> {
		if (this.#controller.signal.aborted) return;
		try {
			if ((await this.#heartbeat.beat()) === "replaced") this.#replaced();
		} catch (error) {
			this.#storageError("heartbeat", error);
		}
	}

	/**
	 * This host accepts leases while it has read the batch within half a lease interval (two
	 * polls at least): a host that cannot read it sees no prolongation and stops serving at its
	 * deadlines, so its heartbeat says "not accepting" and the placement driver moves its groups
	 * instead of prolonging leases nobody serves.
	 */
	#accepting(): boolean {
		// Before the first read (the join's heartbeat, written right before it), count from the start.
		const at = this.#lastReadAt ?? this.#startedAt;
		return at !== undefined && this.#clock.monotonic() - at < this.#o.freshWindowMs;
	}

	async #poll(): Promise<void> {
		try {
			await this.#read();
		} catch (error) {
			if (noteBatchRead(this.#counters, error) !== undefined)
				this.#emit({ type: "batch-fault", at: this.#clock.now(), operation: "read", error });
			else this.#storageError("read", error);
		}
	}

	async #read(): Promise<void> {
		const startedAt = this.#clock.monotonic();
		const state = await this.#store.read(this.#batch);
		if (this.#controller.signal.aborted) return;
		this.#batch = state;
		this.#lastReadAt = Math.max(this.#lastReadAt ?? startedAt, startedAt);
		noteBatchRead(this.#counters);
		this.#take(this.#table.applyBatch(state, this.#clock.now()));
	}

	#applyLocalWrite(shards: readonly StoredShard[]): void {
		if (this.#controller.signal.aborted) return;
		// This process's placement driver just wrote these: as good as a read of them.
		this.#lastReadAt = this.#clock.monotonic();
		this.#take(this.#table.applyShards(shards, this.#clock.now()));
	}

	#take(changes: readonly LeaseChange[]): void {
		this.#local.apply(changes);
		if (this.#waiters.size === 0) return;
		for (const w of [...this.#waiters]) {
			const view = this.holderOf(w.group);
			if (view !== undefined) {
				this.#waiters.delete(w);
				w.resolve(view);
			}
		}
	}

	async refresh(options: { readonly signal?: AbortSignal } = {}): Promise<void> {
		if (this.#controller.signal.aborted) throw this.#controller.signal.reason;
		options.signal?.throwIfAborted();
		try {
			await this.#read();
		} catch (error) {
			if (LeasesError.is(error)) throw error;
			throw new LeasesError("LEASES_STORAGE_ERROR", "reading the lease batch failed", {
				cause: error,
			});
		}
	}

	serving(group: number): boolean {
		return !this.#controller.signal.aborted && this.#local.serving(group);
	}

	deadline(group: number): number | undefined {
		return this.#local.deadline(group);
	}

	servedGroups(): number[] {
		return this.#local.groups();
	}

	holderOf(group: number): LeaseView | undefined {
		const lease = this.#table.lease(group);
		if (lease === undefined) return undefined;
		const live = this.#clock.now() < lease.expirationTime;
		return live ? { ...lease, live } : undefined;
	}

	table(): LeaseTable {
		return this.#table.table(this.#clock.now());
	}

	metrics(): LeaseMetrics {
		const c = this.#counters;
		return {
			...c,
			leasesHeld: this.#local.groups().length,
			placementDriverActive: this.#candidate?.active ?? false,
			activeActor: this.#candidate?.activeActor ?? this.#table.lastWriter,
		};
	}

	waitForHolder(
		group: number,
		options: { readonly signal?: AbortSignal } = {},
	): Promise<LeaseView> {
		if (!Number.isInteger(group) || group < 0)
			return Promise.reject(
				new RangeError(`[@vvm/leases] group must be an integer >= 0, got ${group}`),
			);
		const signal = options.signal;
		if (signal?.aborted) return Promise.reject(signal.reason);
		if (this.#controller.signal.aborted) return Promise.reject(this.#controller.signal.reason);
		const now = this.holderOf(group);
		if (now !== undefined) return Promise.resolve(now);
		return new Promise<LeaseView>((resolve, reject) => {
			const onAbort = (): void => {
				this.#waiters.delete(waiter);
				reject(signal?.reason);
			};
			const waiter: Waiter = {
				group,
				resolve: (view) => {
					signal?.removeEventListener("abort", onAbort);
					resolve(view);
				},
				reject: (reason) => {
					signal?.removeEventListener("abort", onAbort);
					reject(reason);
				},
			};
			this.#waiters.add(waiter);
			signal?.addEventListener("abort", onAbort, { once: true });
		});
	}

	#rejectWaiters(reason: unknown): void {
		for (const w of [...this.#waiters]) w.reject(reason);
		this.#waiters.clear();
	}

	/** Another incarnation owns the address now: stop serving at once, stop everything. */
	#replaced(): void {
		if (this.#controller.signal.aborted) return;
		const reason = new LeasesError(
			"LEASES_REPLACED",
			`another process took over the address ${this.address}; this node stopped`,
		);
		this.#controller.abort(reason);
		this.#local.endAll("replaced");
		this.#emit({ type: "replaced", at: this.#clock.now(), by: this.address });
		this.#rejectWaiters(reason);
		this.#closing ??= this.#stopLoops();
	}

	async #stopLoops(): Promise<void> {
		await Promise.all([this.#heartbeatLoop.stop(), this.#pollLoop.stop()]);
		await this.#candidate?.close();
	}

	close(): Promise<void> {
		if (this.#closing !== undefined) return this.#closing;
		const reason = new LeasesError("LEASES_CLOSED", "the lease node was closed");
		this.#controller.abort(reason);
		this.#local.endAll("closed");
		this.#rejectWaiters(reason);
		this.#closing = (async () => {
			await this.#stopLoops();
			if (!this.#started) return;
			try {
				await this.#heartbeat.leave();
			} catch (error) {
				this.#storageError("leave", error);
			}
		})();
		return this.#closing;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}

	/** @internal */
	async [kIdle](): Promise<void> {
		for (;;) {
			const busy = [
				this.#heartbeatLoop.running,
				this.#pollLoop.running,
				this.#candidate?.running,
			].filter((p) => p !== undefined);
			if (busy.length === 0) return;
			await Promise.all(busy);
		}
	}

	/** @internal */
	get [kBusy](): boolean {
		return (
			this.#heartbeatLoop.running !== undefined ||
			this.#pollLoop.running !== undefined ||
			this.#candidate?.running !== undefined
		);
	}

	/** @internal */
	get [kCandidate](): PlacementDriverCandidate | undefined {
		return this.#candidate;
	}

	/** @internal */
	[kHeldDeadline](group: number): number | undefined {
		return this.#local.heldDeadline(group);
	}

	/** @internal */
	async [kCrash](): Promise<void> {
		this.#controller.abort(new LeasesError("LEASES_CLOSED", "crashed (test)"));
		this.#rejectWaiters(this.#controller.signal.reason);
		this.#closing ??= Promise.all([
			this.#heartbeatLoop.stop(),
			this.#pollLoop.stop(),
			this.#candidate?.crash(),
		]).then(() => undefined);
		await this.#closing;
	}
}

/**
 * Creates a lease node; nothing touches storage before `start()`. Throws a
 * `TypeError`/`RangeError` naming the problem for a bad option.
 *
 * @example
 * ```ts
 * const node = createLeaseNode({
 *   storage, address: "10.0.0.1:8080", placementDriver: { groups: 64 },
 *   onGranted: async (g) => { await partitions.start(g.group, g.signal); },
 *   onEnded: (e) => partitions.stop(e.group),
 * });
 * await node.start();
 * ```
 */
export function createLeaseNode(options: LeaseNodeOptions): LeaseNode {
	return new LeaseNodeImpl(options);
}
