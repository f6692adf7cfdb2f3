import type { Bytes } from "@vvm/ttlstorage";
import { fencedError, TTLStorageError } from "@vvm/ttlstorage";
import { DRIVER_NAME } from "./errors.ts";

/**
 * How far ahead of the wall clock (µs) a writer reserves write timestamps: the fence record is
 * extended by a lightweight transaction when less than half of it is left (one LWT a second per
 * scope being written). Also the longest a new epoch's raise waits for the clock (below).
 */
export const STAMP_RESERVATION_MICROS = 2_000_000n;

/**
 * The granularity (µs) of the timestamps a Cassandra coordinator gives lightweight transactions:
 * a Paxos ballot's timestamp is `max(currentTimeMillis() * 1000, last + 1)` (`ClientState
 * .getTimestampForPaxos`), a whole millisecond of the server's clock, or one above the node's
 * previous timestamp (which moves on by one per timestamp it gives within a millisecond).
 */
export const SERVER_CLOCK_GRANULARITY_MICROS = 1000n;

/**
 * Where in its millisecond a stamp starts: a stamp taken in millisecond `m` is at least
 * `m·1000 + 500`, above every Paxos timestamp a coordinator gave in `m` or before, as long as it
 * gave fewer than 500 timestamps within one millisecond; and a fenced write is acknowledged only
 * once the clock has reached the millisecond after its stamp's, so every later Paxos timestamp
 * lies above it (a commit wait of at most 1 ms, during the write's round trip).
 */
export const STAMP_OFFSET_MICROS = 500n;

/** The fence record of a scope on Cassandra: `u64(epoch) u64(ceiling µs)`. @internal */
export interface FenceRow {
	readonly epoch: bigint;
	/** Every write timestamp the epoch's writer may use lies below this. */
	readonly ceiling: bigint;
}

/** @internal */
function encodeFenceRow(row: FenceRow): Uint8Array {
	const out = new Uint8Array(16);
	const v = new DataView(out.buffer);
	v.setBigUint64(0, row.epoch);
	v.setBigUint64(8, row.ceiling);
	return out;
}

/** @internal */
export function decodeFenceRow(value: Bytes): FenceRow {
	if (value.length !== 16)
		throw new TTLStorageError(
			"TTLSTORAGE_FAILED",
			`a fence record holds ${value.length} bytes, expected 16 (epoch, ceiling)`,
			{ driver: DRIVER_NAME, operation: "raiseFence" },
		);
	const v = new DataView(value.buffer, value.byteOffset, 16);
	return { epoch: v.getBigUint64(0), ceiling: v.getBigUint64(8) };
}

/** What {@link FenceStamps} needs of the storage: the fence record's conditional writes. */
export interface FenceRowStore {
	readFenceRow(scope: Bytes): Promise<Bytes | undefined>;
	/** Writes `next` when the record holds `stored` (absent: `undefined`); `true` when written. */
	swapFenceRow(scope: Bytes, stored: Bytes | undefined, next: Bytes): Promise<boolean>;
}

interface ScopeState {
	readonly epoch: bigint;
	/** The next stamp is above this (the previous writer's ceiling, then our own last stamp). */
	last: bigint;
	ceiling: bigint;
	extending: Promise<void> | undefined;
	/** Set when another epoch took the scope over. */
	supersededBy: bigint | undefined;
}

const min = (a: bigint, b: bigint): bigint => (a < b ? a : b);

const realSleep = (micros: bigint): Promise<void> =>
	new Promise((resolve) => {
		setTimeout(resolve, Math.ceil(Number(micros) / 1000));
	});

const key = (scope: Bytes): string =>
	Buffer.from(scope.buffer, scope.byteOffset, scope.byteLength).toString("latin1");

/**
 * Write timestamps for fenced writes, so that Cassandra's last-write-wins orders them by epoch:
 * every timestamp an epoch's writer uses lies below the ceiling it reserved in the scope's fence
 * record (by lightweight transaction), and the next epoch starts above that ceiling. So a newer
 * epoch's write always carries a higher timestamp than any older epoch's write of the same
 * record, whenever either lands, without comparing clocks of different hosts (F1); within one
 * process, later calls get higher timestamps (F2). Wall time only keeps timestamps near real time,
 * and a raise waits until it has passed the old epoch's stamps, so that the lightweight
 * transactions of the new epoch (timestamped by the server) land above them too.
 * @internal
 */
export class FenceStamps {
	readonly #store: FenceRowStore;
	readonly #now: () => bigint;
	readonly #sleep: (micros: bigint) => Promise<void>;
	readonly #skew: bigint;
	readonly #scopes = new Map<string, ScopeState>();

	/**
	 * @param skewMicros the largest difference between this process's clock and any
	 *   coordinator's (0: they share one clock, as on one machine); stamps start that much
	 *   further ahead, and {@link settle} waits that much longer.
	 */
	constructor(
		store: FenceRowStore,
		nowMicros: () => bigint,
		sleepMicros: (micros: bigint) => Promise<void> = realSleep,
		skewMicros = 0n,
	) {
		this.#store = store;
		this.#now = nowMicros;
		this.#sleep = sleepMicros;
		this.#skew = skewMicros;
	}

	/** The lowest stamp above every Paxos timestamp a server could have given until now. */
	#floor(): bigint {
		const g = SERVER_CLOCK_GRANULARITY_MICROS;
		return ((this.#now() + this.#skew) / g) * g + STAMP_OFFSET_MICROS;
	}

	/** How long until every server's Paxos timestamps lie above `stamp` (µs; 0 or less: now). */
	#untilPast(stamp: bigint): bigint {
		const g = SERVER_CLOCK_GRANULARITY_MICROS;
		return (stamp / g + 1n) * g + this.#skew - this.#now();
	}

	/**
	 * Resolves once every lightweight transaction that starts from now on gets a timestamp above
	 * `stamp`: a write stamped `stamp` is acknowledged only after this (a commit wait of at most
	 * 1 ms plus twice the skew), so a conditional write issued after it returned is never
	 * shadowed by it. Not used by the driver since issue 32 (no write carries a timestamp any
	 * more: fenced writes are lightweight transactions on the stored stamp); kept, with its test,
	 * for a write that must carry `USING TIMESTAMP`.
	 */
	async settle(stamp: bigint): Promise<void> {
		// A stamp further ahead than this was not taken from this clock as it reads now (it was
		// set back): waiting it out would stall every write, and cannot restore the order anyway.
		const deadline = this.#now() + SERVER_CLOCK_GRANULARITY_MICROS + 2n * this.#skew;
		for (;;) {
			const wait = min(this.#untilPast(stamp), deadline - this.#now());
			if (wait <= 0n) return;
			await this.#sleep(wait);
		}
	}

	/** `raiseFence`: takes the scope over for `epoch` (default: the stored one + 1). */
	async raise(scope: Bytes, epoch: bigint | undefined): Promise<bigint> {
		for (;;) {
			const stored = await this.#store.readFenceRow(scope);
			const row = stored === undefined ? { epoch: 0n, ceiling: 0n } : decodeFenceRow(stored);
			if (epoch !== undefined && epoch < row.epoch)
				throw fencedError(DRIVER_NAME, "raiseFence", epoch, row.epoch);
			// Our own epoch is still the stored one: a raise to it only confirms that (one read, as
			// `@vvm/cp` does after a PLog write over "ordered" fencing). Swapping the row again
			// pushed its ceiling a reservation further ahead each time, and the next raise then
			// waited that out: 2 s per confirmation in a process whose epoch followed another's.
			const own = this.#scopes.get(key(scope));
			if (
				epoch !== undefined &&
				epoch === row.epoch &&
				own !== undefined &&
				own.epoch === epoch &&
				own.supersededBy === undefined
			)
				return epoch;
			const next = epoch ?? row.epoch + 1n;
			const ceiling = max(row.ceiling, this.#now()) + STAMP_RESERVATION_MICROS;
			if (await this.#store.swapFenceRow(scope, stored, encodeFenceRow({ epoch: next, ceiling }))) {
				const k = key(scope);
				const known = this.#scopes.get(k);
				// A new epoch starts above every stamp the old epochs may have used: their ceiling,
				// or, when the stored epoch was this process's own (one process per epoch), the last
				// stamp it actually handed out, which spares the wait below. The old state is replaced
				// in this same synchronous step: a `next` of the old epoch still waiting (in an
				// extension) finds it replaced and hands out nothing more, so `known.last` stays the
				// highest stamp of the old epoch.
				const last = known !== undefined && known.epoch === row.epoch ? known.last : row.ceiling;
				this.#scopes.set(k, {
					epoch: next,
					last,
					ceiling,
					extending: undefined,
					supersededBy: undefined,
				});
				// The old epoch's stamps reach up to its ceiling, ahead of the clock. A lightweight
				// transaction cannot carry a timestamp (the server gives it its own clock's), so one
				// sent now could land below a late write of the old epoch, or below our own first
				// stamps: wait until the clock has passed them (to the next millisecond: Paxos
				// timestamps are whole milliseconds). At most one reservation: a clock further
				// behind is beyond any skew this can make up for.
				const ahead = this.#untilPast(last);
				if (ahead > 0n) await this.#sleep(min(ahead, STAMP_RESERVATION_MICROS));
				return next;
			}
		}
	}

	/** The timestamp of the next write under `epoch`; `TTLSTORAGE_FENCED` once superseded. */
	async next(scope: Bytes, epoch: bigint, operation: string): Promise<bigint> {
		const k = key(scope);
		let s = this.#scopes.get(k);
		if (s !== undefined && epoch < s.epoch)
			throw fencedError(DRIVER_NAME, operation, epoch, s.epoch);
		if (s === undefined || s.epoch !== epoch) {
			// First write of this epoch in this process: take the scope over (refused if superseded).
			await this.raise(scope, epoch);
			s = this.#scopes.get(k) as ScopeState;
		}
		for (;;) {
			// A raise in this process may have replaced the state while this call waited: the
			// replaced state hands out nothing more (its last stamp is the new state's floor).
			const current = this.#scopes.get(k) as ScopeState;
			if (current !== s) {
				if (current.epoch !== epoch)
					throw fencedError(DRIVER_NAME, operation, epoch, current.epoch);
				s = current;
			}
			if (s.supersededBy !== undefined)
				throw fencedError(DRIVER_NAME, operation, epoch, s.supersededBy);
			const stamp = max(this.#floor(), s.last + 1n);
			if (stamp < s.ceiling) {
				s.last = stamp;
				if (s.ceiling - stamp < STAMP_RESERVATION_MICROS / 2n)
					void this.#extend(scope, s).catch(() => {});
				return stamp;
			}
			await this.#extend(scope, s).catch((error: unknown) => {
				// The write waiting for this stamp was never sent: whatever became of the extension
				// (it only moves this epoch's own ceiling), nothing of the write was written.
				if (TTLStorageError.is(error) && error.code === "TTLSTORAGE_OUTCOME_UNKNOWN")
					throw new TTLStorageError(
						"TTLSTORAGE_UNAVAILABLE",
						"the fence reservation could not be extended (its outcome is unknown); the write was not sent",
						{ driver: DRIVER_NAME, operation, cause: error },
					);
				throw error;
			});
		}
	}

	/**
	 * The stamps of several writes (a `putBatch`'s fenced items, in item order), all taken in one
	 * synchronous step when no raise or extension is needed, as they are on the call of the batch:
	 * a write called after it (of any kind) gets higher stamps than all of them (F2). Taking them
	 * one `await` apart let a later call take a stamp in between, below the batch's later items,
	 * and win over an item of one record although it was called after the batch (found by
	 * `@vvm/lincheck`). When one needs I/O, that is done first and every stamp is taken again.
	 */
	async nextAll(
		fences: ReadonlyArray<{ readonly scope: Bytes; readonly epoch: bigint }>,
		operation: string,
	): Promise<bigint[]> {
		for (;;) {
			const stamps: bigint[] = [];
			let blocked: { readonly scope: Bytes; readonly epoch: bigint } | undefined;
			for (const f of fences) {
				const stamp = this.#tryNext(f.scope, f.epoch, operation);
				if (stamp === undefined) {
					blocked = f;
					break;
				}
				stamps.push(stamp);
			}
			if (blocked === undefined) return stamps;
			// The raise or extension it needs; its own stamp is left unused (stamps may have gaps).
			await this.next(blocked.scope, blocked.epoch, operation);
		}
	}

	/**
	 * The next stamp of `epoch` when it can be taken without I/O; `undefined` when the scope must
	 * be raised for `epoch` or its reservation extended first. `TTLSTORAGE_FENCED` as {@link next}.
	 */
	#tryNext(scope: Bytes, epoch: bigint, operation: string): bigint | undefined {
		const s = this.#scopes.get(key(scope));
		if (s !== undefined && epoch < s.epoch)
			throw fencedError(DRIVER_NAME, operation, epoch, s.epoch);
		if (s === undefined || s.epoch !== epoch) return undefined;
		if (s.supersededBy !== undefined)
			throw fencedError(DRIVER_NAME, operation, epoch, s.supersededBy);
		const stamp = max(this.#floor(), s.last + 1n);
		if (stamp >= s.ceiling) return undefined;
		s.last = stamp;
		if (s.ceiling - stamp < STAMP_RESERVATION_MICROS / 2n)
			void this.#extend(scope, s).catch(() => {});
		return stamp;
	}

	/** Rejects with `TTLSTORAGE_FENCED` when this process knows `epoch` was superseded. */
	check(scope: Bytes, epoch: bigint, operation: string): void {
		const s = this.#scopes.get(key(scope));
		if (s === undefined) return;
		if (epoch < s.epoch) throw fencedError(DRIVER_NAME, operation, epoch, s.epoch);
		if (epoch === s.epoch && s.supersededBy !== undefined)
			throw fencedError(DRIVER_NAME, operation, epoch, s.supersededBy);
	}

	/** Moves the scope's ceiling up (one LWT; concurrent callers share it). */
	#extend(scope: Bytes, s: ScopeState): Promise<void> {
		s.extending ??= (async () => {
			try {
				for (;;) {
					const stored = await this.#store.readFenceRow(scope);
					// A missing record (deleted by hand) is taken back for this epoch.
					const row =
						stored === undefined ? { epoch: s.epoch, ceiling: s.ceiling } : decodeFenceRow(stored);
					if (row.epoch !== s.epoch) {
						s.supersededBy = row.epoch;
						return;
					}
					const ceiling = max(row.ceiling, this.#now()) + STAMP_RESERVATION_MICROS;
					if (
						await this.#store.swapFenceRow(
							scope,
							stored,
							encodeFenceRow({ epoch: s.epoch, ceiling }),
						)
					) {
						s.ceiling = max(s.ceiling, ceiling);
						return;
					}
				}
			} finally {
				s.extending = undefined;
			}
		})();
		return s.extending;
	}
}

const max = (a: bigint, b: bigint): bigint => (a > b ? a : b);
