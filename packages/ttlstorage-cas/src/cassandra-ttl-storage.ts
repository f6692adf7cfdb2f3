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
import type { Client } from "cassandra-driver";
import { types } from "cassandra-driver";
import { resolveConsistency } from "./consistency.ts";
import type { StatementKind } from "./errors.ts";
import { DRIVER_NAME, mapCassandraError } from "./errors.ts";
import { validateCassandraIdentifier } from "./names.ts";
import { DEFAULT_TABLE } from "./schema.ts";
import { FenceStamps } from "./stamps.ts";
import type { CassandraStatements } from "./statements.ts";
import { cassandraStatements, parseApplied, remainingFromServer, serverTTL } from "./statements.ts";

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
	 * Largest estimated payload of one logged batch of `putBatch`, in bytes; default 4096, under
	 * Cassandra's default `batch_size_warn_threshold` of 5 KiB (the fail threshold is 50 KiB). A
	 * larger `putBatch` is split into several batches; an item larger than this is written alone.
	 */
	readonly maxBatchBytes?: number;
}

const ITEM_OVERHEAD_BYTES = 32;

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
	readonly fetchSize?: number;
	readonly pageState?: string;
}

type Params = ReadonlyArray<Buffer | number | types.Long>;

const long = (n: bigint): types.Long => types.Long.fromString(n.toString());

class CassandraTTLStorageImpl implements TTLStorage {
	readonly #client: Client;
	readonly #cql: CassandraStatements;
	readonly #conditional: ExecOptions;
	readonly #write: ExecOptions;
	readonly #read: ExecOptions;
	readonly #pageSize: number;
	readonly #maxBatchBytes: number;
	readonly #stamps: FenceStamps;
	#closed = false;
	/** Logged batches are not isolated and are split by size; fenced writes carry ordered timestamps. */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: false,
		fencing: "ordered",
	});

	constructor(options: CassandraTTLStorageOptions) {
		if (typeof options !== "object" || options === null) {
			throw new TypeError("[@vvm/ttlstorage-cas] options must be an object");
		}
		const table = options.table ?? DEFAULT_TABLE;
		validateCassandraIdentifier("keyspace", options.keyspace);
		validateCassandraIdentifier("table", table);
		if (typeof options.client?.execute !== "function") {
			throw new TypeError("[@vvm/ttlstorage-cas] client must be a cassandra-driver Client");
		}
		const { consistency, serialConsistency, readConsistency } = resolveConsistency(options);
		this.#pageSize = positiveInteger("pageSize", options.pageSize ?? 1000);
		this.#maxBatchBytes = positiveInteger("maxBatchBytes", options.maxBatchBytes ?? 4096);
		this.#client = options.client;
		this.#cql = cassandraStatements(options.keyspace, table);
		// A lightweight transaction is not idempotent: the driver must never retry it on its own
		// (a retry after an applied-but-timed-out round would report `false` for our own write).
		this.#conditional = { consistency, serialConsistency, isIdempotent: false };
		this.#write = { consistency, isIdempotent: false };
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
		);
	}

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		this.#open("raiseFence");
		return this.#stamps.raise(scope, epoch);
	}

	/** A conditional write is decided by its condition; only a known-superseded epoch is refused here. */
	#checkFence(options: WriteOptions | undefined, operation: string): void {
		validateWriteOptions(options);
		const fence = options?.fence;
		if (fence !== undefined) this.#stamps.check(fence.scope, fence.epoch, operation);
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

	async insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		this.#checkFence(options, "insertIfNotExists");
		return this.#lwt("insertIfNotExists", this.#cql.insertIfNotExists, [
			serverTTL(ttlSeconds),
			buf(value),
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
		this.#checkFence(options, "compareAndSwap");
		return this.#lwt("compareAndSwap", this.#cql.compareAndSwap, [
			serverTTL(ttlSeconds),
			buf(newValue),
			buf(pKey),
			buf(cCols),
			buf(oldValue),
		]);
	}

	async compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
		this.#checkFence(options, "compareAndDelete");
		return this.#lwt("compareAndDelete", this.#cql.compareAndDelete, [
			buf(pKey),
			buf(cCols),
			buf(expectedValue),
		]);
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
		const { query, params } = await this.#putStatement(
			{
				pKey,
				cCols,
				value,
				ttlSeconds,
				...(options?.fence === undefined ? {} : { fence: options.fence }),
			},
			"put",
		);
		await this.#execute("put", "write", query, params, this.#write);
	}

	/** The statement of one put: with `USING TIMESTAMP` from the fence's stamps when fenced. */
	async #putStatement(
		it: BatchItem,
		operation: string,
	): Promise<{ query: string; params: Params }> {
		const ttl = serverTTL(it.ttlSeconds ?? 0);
		if (it.fence === undefined)
			return { query: this.#cql.put, params: [ttl, buf(it.value), buf(it.pKey), buf(it.cCols)] };
		const stamp = await this.#stamps.next(it.fence.scope, it.fence.epoch, operation);
		return {
			query: this.#cql.putAt,
			params: [ttl, long(stamp), buf(it.value), buf(it.pKey), buf(it.cCols)],
		};
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		// Stamps in item order, before anything is sent: a later item of a record wins (F2).
		const statements = new Map<BatchItem, { query: string; params: Params }>();
		for (const it of items) statements.set(it, await this.#putStatement(it, "putBatch"));
		for (const chunk of this.#chunks(items)) {
			if (chunk.length === 1) {
				const { query, params } = statements.get(chunk[0] as BatchItem) as {
					query: string;
					params: Params;
				};
				await this.#execute("putBatch", "write", query, params, this.#write);
				continue;
			}
			const queries = chunk.map((it) => statements.get(it) as { query: string; params: Params });
			this.#open("putBatch");
			try {
				await this.#client.batch(queries, { ...this.#write, prepare: true, logged: true });
			} catch (error) {
				throw mapCassandraError(error, { operation: "putBatch", kind: "write" });
			}
		}
	}

	/** Splits items into logged batches of at most `maxBatchBytes` estimated payload. */
	*#chunks(items: readonly BatchItem[]): Generator<BatchItem[]> {
		let chunk: BatchItem[] = [];
		let bytes = 0;
		for (const item of items) {
			const size = item.pKey.length + item.cCols.length + item.value.length + ITEM_OVERHEAD_BYTES;
			if (chunk.length > 0 && bytes + size > this.#maxBatchBytes) {
				yield chunk;
				chunk = [];
				bytes = 0;
			}
			chunk.push(item);
			bytes += size;
		}
		if (chunk.length > 0) yield chunk;
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
 * **Fenced writes** (`supports.fencing: "ordered"`): a fenced put carries `USING TIMESTAMP` from a
 * range its epoch reserved in the scope's fence record (a lightweight transaction every few
 * seconds of writing); the next epoch starts above it, so last-write-wins orders every record by
 * epoch, whenever a write lands. Conditional writes (LWT) are decided by their condition: do not
 * follow a fenced put of a record with a conditional write of the same record (Paxos stamps it
 * with the coordinator's clock, which may lie below the put's reserved timestamp).
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
