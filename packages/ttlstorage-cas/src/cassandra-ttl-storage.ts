import type {
	BatchItem,
	Bytes,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteOptions,
} from "@vvm/ttlstorage";
import {
	closedError,
	compareBytes,
	FENCE_CCOLS,
	refuseUnknownOptions,
	TTLStorageError,
	validateBatch,
	validateDeleteArgs,
	validateFenceEpoch,
	validateFenceScope,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateWriteOptions,
} from "@vvm/ttlstorage";
import type { Client, policies } from "cassandra-driver";
import { types } from "cassandra-driver";
import { resolveConsistency } from "./consistency.ts";
import type { StatementKind } from "./errors.ts";
import { DRIVER_NAME, mapCassandraError } from "./errors.ts";
import { validateCassandraIdentifier } from "./names.ts";
import { CONDITIONAL_RETRY } from "./retry.ts";
import { DEFAULT_TABLE } from "./schema.ts";
import { FenceStamps } from "./stamps.ts";
import type { CassandraStatements } from "./statements.ts";
import {
	cassandraStatements,
	parseApplied,
	remainingFromServer,
	serverTTL,
	storedFenceStamp,
} from "./statements.ts";

/** Options of {@link createCassandraTTLStorage}. */
export interface CassandraTTLStorageOptions {
	/**
	 * A `cassandra-driver` `Client`, owned by the caller: the storage never connects or shuts it
	 * down (`close()` only stops this storage).
	 */
	readonly client: Client;
	/** Keyspace holding the table (`^[a-z][a-z0-9_]{0,47}$`); create it with `ensureCassandraSchema`. */
	readonly keyspace: string;
	/** Table name; default `"ttl_values"`. */
	readonly table?: string;
	/**
	 * Consistency of plain writes and of the commit of a conditional write: `quorum` (default),
	 * `localQuorum`, `eachQuorum` or `all` from `types.consistencies`; anything weaker is a
	 * `RangeError` (see the README, "Consistency").
	 */
	readonly consistency?: number;
	/**
	 * Serial consistency of the Paxos round of conditional writes: `types.consistencies.serial`
	 * (default: linearizable across data centres) or `localSerial` (within the client's data
	 * centre only: safe when every contender for a key uses the same data centre).
	 */
	readonly serialConsistency?: number;
	/**
	 * Consistency of `get`, `read` and `queryTTL`; default `consistency`. The levels allowed for
	 * `consistency`, or `serial` / `localSerial`, which make reads linearizable with the
	 * conditional writes (they run a Paxos round: slower).
	 */
	readonly readConsistency?: number;
	/** Rows per page of `read`; default 1000. */
	readonly pageSize?: number;
	/**
	 * Validated (a positive integer) and otherwise unused since every `putBatch` item is a
	 * lightweight transaction of its own (issue 32); it sized the logged batches of fenced items.
	 * @deprecated no effect.
	 */
	readonly maxBatchBytes?: number;
	/**
	 * The largest difference, in milliseconds, between this process's clock and any Cassandra
	 * node's; default 0 (one machine, one clock). Used only by `raiseFence`, which waits until
	 * the clock has passed the previous epoch's stamps (so that lightweight transactions land
	 * above cells that earlier versions of this driver wrote `USING TIMESTAMP`); no write depends
	 * on it. An integer 0–1000.
	 */
	readonly maxClockSkewMs?: number;
}

/** Every option of {@link CassandraTTLStorageOptions}, checked against it by the compiler: any other key is refused. */
const OPTIONS: { readonly [K in keyof CassandraTTLStorageOptions]-?: true } = {
	client: true,
	keyspace: true,
	table: true,
	consistency: true,
	serialConsistency: true,
	readConsistency: true,
	pageSize: true,
	maxBatchBytes: true,
	maxClockSkewMs: true,
};

/**
 * Refuses a key that is not an option, before any I/O (found by review: a misspelt
 * `readConsistancy` was ignored, so reads ran at QUORUM instead of the SERIAL the caller asked for).
 * `clock`, which other drivers take for tests, gets its own message: it would have no effect here.
 */
function refuseUnknownCasOptions(options: object): void {
	if (Object.hasOwn(options, "clock")) {
		throw new TypeError(
			"[@vvm/ttlstorage-cas] clock has no effect on this driver: every expiry is decided by the Cassandra server's clock (USING TTL), never by a client clock, so a test clock cannot move it. Leave clock out",
		);
	}
	refuseUnknownOptions("@vvm/ttlstorage-cas", options, OPTIONS);
}

/** Items of one `putBatch` written at once (each a lightweight transaction). */
const LWT_PUT_CONCURRENCY = 16;
/**
 * Rounds of a put (unfenced or fenced) or of a fenced conditional write before it gives up with
 * `TTLSTORAGE_UNAVAILABLE` (nothing written): a round fails only when other writers changed the
 * record twice meanwhile.
 */
const LWT_ROUNDS = 32;
/** The fence stamp of an unfenced write: below every stamp of a fenced one. */
const UNFENCED = 0n;

function positiveInteger(name: string, value: number): number {
	if (!Number.isInteger(value) || value < 1) {
		throw new RangeError(
			`[@vvm/ttlstorage-cas] ${name} must be a positive integer, got ${String(value)}`,
		);
	}
	return value;
}

/** A Buffer view of the bytes (no copy), as `cassandra-driver` encodes blobs from Buffers. */
const buf = (b: Bytes): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** An owned copy: results never alias the driver's frame buffers. */
const own = (b: Uint8Array): Bytes => new Uint8Array(b);

interface ExecOptions {
	readonly consistency: number;
	readonly serialConsistency?: number;
	readonly isIdempotent: boolean;
	/** Replaces the client's retry policy for this statement (writes: {@link CONDITIONAL_RETRY}). */
	readonly retry?: policies.retry.RetryPolicy;
	readonly fetchSize?: number;
	readonly pageState?: string;
}

type Params = ReadonlyArray<Buffer | number | types.Long>;

const long = (n: bigint): types.Long => types.Long.fromString(n.toString());

class CassandraTTLStorageImpl implements TTLStorage {
	readonly #client: Client;
	readonly #cql: CassandraStatements;
	readonly #conditional: ExecOptions;
	readonly #read: ExecOptions;
	readonly #pageSize: number;
	readonly #stamps: FenceStamps;
	#closed = false;
	/**
	 * `putBatch` writes each item by its own lightweight transaction; a fenced write is
	 * conditional on the record's stored stamp being below its own ("ordered").
	 */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: false,
		fencing: "ordered",
	});

	constructor(options: CassandraTTLStorageOptions) {
		if (typeof options !== "object" || options === null) {
			throw new TypeError("[@vvm/ttlstorage-cas] options must be an object");
		}
		refuseUnknownCasOptions(options);
		const table = options.table ?? DEFAULT_TABLE;
		validateCassandraIdentifier("keyspace", options.keyspace);
		validateCassandraIdentifier("table", table);
		if (typeof options.client?.execute !== "function") {
			throw new TypeError("[@vvm/ttlstorage-cas] client must be a cassandra-driver Client");
		}
		const { consistency, serialConsistency, readConsistency } = resolveConsistency(options);
		this.#pageSize = positiveInteger("pageSize", options.pageSize ?? 1000);
		positiveInteger("maxBatchBytes", options.maxBatchBytes ?? 4096);
		const skewMs = options.maxClockSkewMs ?? 0;
		if (!Number.isInteger(skewMs) || skewMs < 0 || skewMs > 1000) {
			throw new RangeError(
				`[@vvm/ttlstorage-cas] maxClockSkewMs must be an integer from 0 to 1000, got ${String(skewMs)}`,
			);
		}
		this.#client = options.client;
		this.#cql = cassandraStatements(options.keyspace, table);
		// A write is never re-sent by cassandra-driver after an answer that leaves its outcome open
		// (an applied-but-timed-out LWT resent would report `false` for our own write, or apply
		// twice): not idempotent (no speculative execution, no retry of timeouts and socket
		// errors), and a retry policy of ours per statement, whatever the client's (src/retry.ts).
		this.#conditional = {
			consistency,
			serialConsistency,
			isIdempotent: false,
			retry: CONDITIONAL_RETRY,
		};
		this.#read = { consistency: readConsistency, isIdempotent: true };
		this.#stamps = new FenceStamps(
			{
				readFenceRow: (scope) => this.get(scope, FENCE_CCOLS),
				swapFenceRow: (scope, stored, next) =>
					stored === undefined
						? this.insertIfNotExists(scope, FENCE_CCOLS, next, 0)
						: this.compareAndSwap(scope, FENCE_CCOLS, stored, next, 0),
			},
			() => BigInt(Date.now()) * 1000n,
			undefined,
			BigInt(skewMs) * 1000n,
		);
	}

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		this.#open("raiseFence");
		return this.#stamps.raise(scope, epoch);
	}

	/**
	 * The stamp a write stores in `fence_stamp`: 0 unfenced; fenced, the next of its epoch
	 * (`TTLSTORAGE_FENCED` when this process knows the epoch was superseded).
	 */
	async #stampOf(options: WriteOptions | undefined, operation: string): Promise<bigint> {
		const fence = options?.fence;
		if (fence === undefined) return UNFENCED;
		return this.#stamps.next(fence.scope, fence.epoch, operation);
	}

	#open(operation: string): void {
		if (this.#closed) throw closedError(DRIVER_NAME, operation);
	}

	async #execute(
		operation: string,
		kind: StatementKind,
		cql: string,
		params: Params,
		options: ExecOptions,
	): Promise<types.ResultSet> {
		this.#open(operation);
		try {
			return await this.#client.execute(cql, params as unknown[], { ...options, prepare: true });
		} catch (error) {
			throw mapCassandraError(error, { operation, kind });
		}
	}

	async #lwt(operation: string, cql: string, params: Params): Promise<boolean> {
		const rs = await this.#execute(operation, "conditional", cql, params, this.#conditional);
		return parseApplied(rs.rows, operation);
	}

	/**
	 * A fenced write with stamp `stamp`, as lightweight transactions: `stamped` is the write's
	 * statement conditional on `fence_stamp < stamp` (besides its own condition), `unstamped` the
	 * same conditional on `fence_stamp = null` (a missing record, or one written before the column
	 * existed: CQL has no `OR`, and `<` is false against a missing cell). `true` when applied;
	 * `false` when a round found its condition false while the record held a stamp (then the value
	 * did not match, or a write of a higher stamp, i.e. a newer epoch or a later call of this one,
	 * is stored: the write is superseded). Every round that is not applied wrote nothing, so the
	 * answer is that of the round that decided it, within the call.
	 */
	async #fencedLwt(
		operation: string,
		stamp: bigint,
		stamped: { cql: string; params: Params },
		unstamped: { cql: string; params: Params },
	): Promise<boolean> {
		for (let round = 0; round < LWT_ROUNDS; round++) {
			const first = await this.#execute(
				operation,
				"conditional",
				stamped.cql,
				stamped.params,
				this.#conditional,
			);
			if (parseApplied(first.rows, operation)) return true;
			if (storedFenceStamp(first.rows, operation) !== undefined) return false;
			const second = await this.#execute(
				operation,
				"conditional",
				unstamped.cql,
				unstamped.params,
				this.#conditional,
			);
			if (parseApplied(second.rows, operation)) return true;
			const found = storedFenceStamp(second.rows, operation);
			// No stamp: the condition on the value failed. A stamp at or above ours: superseded.
			if (found === undefined || found >= stamp) return false;
			// A lower stamp was written between the two rounds: the first statement decides again.
		}
		throw new TTLStorageError(
			"TTLSTORAGE_UNAVAILABLE",
			`other writers changed the record in each of ${LWT_ROUNDS} rounds; nothing was written`,
			{ driver: DRIVER_NAME, operation },
		);
	}

	async insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		this.#open("insertIfNotExists");
		// A missing record takes any write: the stamp is only stored, for the writes after it.
		const stamp = await this.#stampOf(options, "insertIfNotExists");
		return this.#lwt("insertIfNotExists", this.#cql.insertIfNotExists, [
			serverTTL(ttlSeconds),
			buf(value),
			long(stamp),
			buf(pKey),
			buf(cCols),
		]);
	}

	async compareAndSwap(
		pKey: Bytes,
		cCols: Bytes,
		oldValue: Bytes,
		newValue: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateSwapArgs(pKey, cCols, oldValue, newValue, ttlSeconds);
		validateWriteOptions(options);
		this.#open("compareAndSwap");
		const stamp = await this.#stampOf(options, "compareAndSwap");
		const params: Params = [
			serverTTL(ttlSeconds),
			buf(newValue),
			long(stamp),
			buf(pKey),
			buf(cCols),
			buf(oldValue),
		];
		if (stamp === UNFENCED) return this.#lwt("compareAndSwap", this.#cql.compareAndSwap, params);
		return this.#fencedLwt(
			"compareAndSwap",
			stamp,
			{ cql: this.#cql.compareAndSwapFenced, params: [...params, long(stamp)] },
			{ cql: this.#cql.compareAndSwapUnstamped, params },
		);
	}

	async compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
		validateWriteOptions(options);
		this.#open("compareAndDelete");
		const stamp = await this.#stampOf(options, "compareAndDelete");
		const params: Params = [buf(pKey), buf(cCols), buf(expectedValue)];
		if (stamp === UNFENCED)
			return this.#lwt("compareAndDelete", this.#cql.compareAndDelete, params);
		return this.#fencedLwt(
			"compareAndDelete",
			stamp,
			{ cql: this.#cql.compareAndDeleteFenced, params: [...params, long(stamp)] },
			{ cql: this.#cql.compareAndDeleteUnstamped, params },
		);
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		const rs = await this.#execute(
			"get",
			"read",
			this.#cql.get,
			[buf(pKey), buf(cCols)],
			this.#read,
		);
		const value: unknown = rs.rows[0]?.get("value");
		return value instanceof Uint8Array ? own(value) : undefined;
	}

	async put(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds = 0,
		options?: WriteOptions,
	): Promise<void> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		this.#open("put");
		const item: BatchItem = { pKey, cCols, value, ttlSeconds };
		if (options?.fence === undefined) return this.#lwtPut("put", item);
		const { scope, epoch } = options.fence;
		await this.#fencedPut("put", item, await this.#stamps.next(scope, epoch, "put"));
	}

	/**
	 * A fenced put, as lightweight transactions conditional on the stored stamp: applied over a
	 * record last written under a lower stamp, unfenced, or missing; superseded (`false`, nothing
	 * written, no error) when a higher stamp is stored: a newer epoch's write (F1) or a later call
	 * of this epoch (F2).
	 */
	#fencedPut(operation: string, it: BatchItem, stamp: bigint): Promise<boolean> {
		const params: Params = [
			serverTTL(it.ttlSeconds ?? 0),
			buf(it.value),
			long(stamp),
			buf(it.pKey),
			buf(it.cCols),
		];
		return this.#fencedLwt(
			operation,
			stamp,
			{ cql: this.#cql.putFenced, params: [...params, long(stamp)] },
			{ cql: this.#cql.putUnstamped, params },
		);
	}

	/**
	 * An unfenced put, as lightweight transactions: `IF value != v` (applied unless the record
	 * holds `v` already), else `IF value = v` (renews the TTL). Every write of the record is then a
	 * Paxos round, and Paxos gives rounds strictly growing timestamps in their serial order, so
	 * last-write-wins agrees with real time against the conditional writes too. A round that
	 * applies nothing wrote nothing: a failure of a later round keeps its own meaning.
	 */
	async #lwtPut(operation: string, it: BatchItem): Promise<void> {
		const ttl = serverTTL(it.ttlSeconds ?? 0);
		const value = buf(it.value);
		// An unfenced write stores stamp 0: any fenced write after it may replace it.
		const params: Params = [ttl, value, long(UNFENCED), buf(it.pKey), buf(it.cCols), value];
		for (let round = 0; round < LWT_ROUNDS; round++) {
			if (await this.#lwt(operation, this.#cql.putIfChanged, params)) return;
			if (await this.#lwt(operation, this.#cql.compareAndSwap, params)) return;
		}
		throw new TTLStorageError(
			"TTLSTORAGE_UNAVAILABLE",
			`other writers changed the record in each of ${LWT_ROUNDS} rounds; nothing was written`,
			{ driver: DRIVER_NAME, operation },
		);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		// Stamps in item order, all at the call, before anything is sent: a later item of a record
		// wins, and so does a write called after this batch (F2).
		const fenced = items.filter((it) => it.fence !== undefined);
		const taken = await this.#stamps.nextAll(
			fenced.map((it) => it.fence as NonNullable<BatchItem["fence"]>),
			"putBatch",
		);
		const stamps = new Map<BatchItem, bigint>(fenced.map((it, i) => [it, taken[i] as bigint]));
		let wrote = false;
		try {
			await this.#lwtPuts(items, stamps, () => (wrote = true));
		} catch (error) {
			// Part of the batch is written: "nothing was written" would be false.
			if (
				wrote &&
				TTLStorageError.is(error) &&
				(error.code === "TTLSTORAGE_UNAVAILABLE" || error.code === "TTLSTORAGE_THROTTLED")
			)
				throw new TTLStorageError(
					"TTLSTORAGE_OUTCOME_UNKNOWN",
					`written in part, then: ${error.message}`,
					{ driver: DRIVER_NAME, operation: "putBatch", cause: error },
				);
			throw error;
		}
	}

	/**
	 * Items as lightweight-transaction puts (unfenced, or fenced with their stamps): the items of
	 * one partition one after the other (Paxos serialises a partition's rounds anyway; concurrent
	 * rounds there only contend, and on a 3-node cluster under load they timed out), up to
	 * {@link LWT_PUT_CONCURRENCY} partitions at a time; a record's later item only after its
	 * earlier one returned.
	 */
	async #lwtPuts(
		items: readonly BatchItem[],
		stamps: ReadonlyMap<BatchItem, bigint>,
		wrote: () => void,
	): Promise<void> {
		for (const wave of wavesByRecord(items)) {
			const lanes = new Map<string, BatchItem[]>();
			for (const it of wave) {
				const key = Buffer.from(it.pKey).toString("hex");
				const lane = lanes.get(key);
				if (lane === undefined) lanes.set(key, [it]);
				else lane.push(it);
			}
			const queue = [...lanes.values()];
			let next = 0;
			let failed: unknown;
			const worker = async (): Promise<void> => {
				while (failed === undefined && next < queue.length) {
					const lane = queue[next++] as BatchItem[];
					for (const it of lane) {
						if (failed !== undefined) return;
						try {
							const stamp = stamps.get(it);
							if (stamp === undefined) {
								await this.#lwtPut("putBatch", it);
								wrote();
							} else if (await this.#fencedPut("putBatch", it, stamp)) wrote();
						} catch (error) {
							// An unknown outcome outranks "nothing written" of another item.
							if (
								failed === undefined ||
								(TTLStorageError.is(error) && error.code === "TTLSTORAGE_OUTCOME_UNKNOWN")
							)
								failed = error;
						}
					}
				}
			};
			await Promise.all(
				Array.from({ length: Math.min(LWT_PUT_CONCURRENCY, queue.length) }, worker),
			);
			if (failed !== undefined) throw failed;
		}
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, new Uint8Array());
		validateRange(range.from, range.to);
		const { from, to } = range;
		const cql =
			from === undefined
				? to === undefined
					? this.#cql.read.all
					: this.#cql.read.to
				: to === undefined
					? this.#cql.read.from
					: this.#cql.read.fromTo;
		const params: Buffer[] = [buf(pKey)];
		if (from !== undefined) params.push(buf(from));
		if (to !== undefined) params.push(buf(to));
		const empty = from !== undefined && to !== undefined && compareBytes(from, to) >= 0;
		const self = this;
		return {
			async *[Symbol.asyncIterator]() {
				self.#open("read");
				if (empty) return;
				let pageState: string | undefined;
				do {
					const rs = await self.#execute("read", "read", cql, params, {
						...self.#read,
						fetchSize: self.#pageSize,
						...(pageState === undefined ? {} : { pageState }),
					});
					for (const row of rs.rows) {
						const cCols: unknown = row.get("c_col");
						const value: unknown = row.get("value");
						// A row without a live value cell (left by a foreign INSERT) is not a record.
						if (cCols instanceof Uint8Array && value instanceof Uint8Array) {
							yield { cCols: own(cCols), value: own(value) };
						}
					}
					pageState = typeof rs.pageState === "string" ? rs.pageState : undefined;
				} while (pageState !== undefined);
			},
		};
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		const rs = await this.#execute(
			"queryTTL",
			"read",
			this.#cql.queryTTL,
			[buf(pKey), buf(cCols)],
			this.#read,
		);
		const row = rs.rows[0];
		if (row === undefined || !(row.get("value") instanceof Uint8Array)) return undefined;
		return remainingFromServer(row.get("remaining"));
	}

	async close(): Promise<void> {
		this.#closed = true;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/** Waves of items with distinct records: the n-th item of each record goes into wave n. */
function wavesByRecord(items: readonly BatchItem[]): BatchItem[][] {
	const seen = new Map<string, number>();
	const waves: BatchItem[][] = [];
	for (const it of items) {
		const k = `${Buffer.from(it.pKey).toString("hex")}/${Buffer.from(it.cCols).toString("hex")}`;
		const n = seen.get(k) ?? 0;
		seen.set(k, n + 1);
		const wave = waves[n];
		if (wave === undefined) waves.push([it]);
		else wave.push(it);
	}
	return waves;
}

/**
 * Creates the Apache Cassandra (and ScyllaDB) TTL storage over a caller-owned `cassandra-driver`
 * `Client`. Conditional writes are lightweight transactions (Paxos), the TTL is enforced by the
 * server (`USING TTL ?`), every statement is prepared, and a timeout on a conditional write
 * rejects with `TTLSTORAGE_OUTCOME_UNKNOWN`, never `false`.
 *
 * **Departure from the contract:** a record expires up to one second *late*. The contract says a
 * record is expired when `now >= expireAt`; Cassandra drops an expiring cell on a whole second of
 * its own clock, so `USING TTL T` could end up to a second early. The driver writes `T + 1`: the
 * record lives between `T` and `T + 1` seconds by the server's clock, never less than `T`, and
 * until it is gone every read and condition still sees it (`queryTTL` reports at least 1). This
 * is deliberate: for elections a lease must never end early. The injected clock of the contract
 * is not used. Filtering with a client-side expiry is not possible atomically: CQL conditions
 * have no `OR` for `IF value = null OR expire_at <= now`.
 *
 * **Every write is a lightweight transaction**, so Paxos orders all writes of a record, on any
 * cluster, whatever the clocks, and `put` and `putBatch` are linearizable with the conditional
 * writes. An unfenced `put` (and each unfenced `putBatch` item) is `IF value != v`, else
 * `IF value = v`.
 *
 * **Fenced writes** (`supports.fencing: "ordered"`): each stores a stamp in the record's
 * `fence_stamp` column, from a range its epoch reserved in the scope's fence record (a lightweight
 * transaction every second of writing; the next epoch starts above it), and is conditional on the
 * stored stamp being lower (or missing): a write of an older epoch, or an earlier call of the same
 * epoch that lands late, never replaces a newer one (a superseded put resolves, a superseded
 * conditional write answers `false`). Unfenced writes store stamp 0.
 *
 * The table must exist: call {@link ensureCassandraSchema} once at start-up.
 *
 * @see voedger pkg/istorage/cas
 * @example
 * ```ts
 * import { Client } from "cassandra-driver";
 * const client = new Client({ contactPoints: ["127.0.0.1:9042"], localDataCenter: "datacenter1" });
 * await ensureCassandraSchema(client, { keyspace: "sysvvm" });
 * const storage = createCassandraTTLStorage({ client, keyspace: "sysvvm" });
 * const leader = await storage.insertIfNotExists(pKey, cCols, value, 20);
 * ```
 */
export function createCassandraTTLStorage(options: CassandraTTLStorageOptions): TTLStorage {
	return new CassandraTTLStorageImpl(options);
}
