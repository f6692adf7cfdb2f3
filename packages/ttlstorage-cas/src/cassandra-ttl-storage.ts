import type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "@vvm/ttlstorage";
import {
	closedError,
	compareBytes,
	validateBatch,
	validateDeleteArgs,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
} from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { types } from "cassandra-driver";
import type { StatementKind } from "./errors.ts";
import { DRIVER_NAME, mapCassandraError } from "./errors.ts";
import { validateCassandraIdentifier } from "./names.ts";
import { DEFAULT_TABLE } from "./schema.ts";
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
	 * Consistency of every statement (for a lightweight transaction: of its commit); default
	 * `types.consistencies.localQuorum`. Serial levels are refused here; see `serialConsistency`.
	 */
	readonly consistency?: number;
	/**
	 * Serial consistency of the Paxos round of conditional writes: `types.consistencies.localSerial`
	 * (default) or `serial` (all data centres).
	 */
	readonly serialConsistency?: number;
	/**
	 * Consistency of `get`, `read` and `queryTTL`; default `consistency`. `serial` or `localSerial`
	 * make reads linearizable with the conditional writes (they run a Paxos round: slower).
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

const SERIAL = new Set<number>([types.consistencies.serial, types.consistencies.localSerial]);
const ALL_LEVELS = new Set<number>(
	Object.values(types.consistencies).filter((v): v is number => typeof v === "number"),
);
const ITEM_OVERHEAD_BYTES = 32;

function checkLevel(name: string, value: number, serial: boolean | "any"): void {
	const ok =
		ALL_LEVELS.has(value) &&
		(serial === "any" || (serial ? SERIAL.has(value) : !SERIAL.has(value)));
	if (!ok) {
		throw new RangeError(
			`[@vvm/ttlstorage-cas] ${name} must be one of cassandra-driver's types.consistencies${serial === true ? " serial or localSerial" : serial === false ? " except serial and localSerial" : ""}, got ${String(value)}`,
		);
	}
}

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

type Params = ReadonlyArray<Buffer | number>;

class CassandraTTLStorageImpl implements TTLStorage {
	readonly #client: Client;
	readonly #cql: CassandraStatements;
	readonly #conditional: ExecOptions;
	readonly #write: ExecOptions;
	readonly #read: ExecOptions;
	readonly #pageSize: number;
	readonly #maxBatchBytes: number;
	#closed = false;

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
		const consistency = options.consistency ?? types.consistencies.localQuorum;
		const serialConsistency = options.serialConsistency ?? types.consistencies.localSerial;
		const readConsistency = options.readConsistency ?? consistency;
		checkLevel("consistency", consistency, false);
		checkLevel("serialConsistency", serialConsistency, true);
		checkLevel("readConsistency", readConsistency, "any");
		this.#pageSize = positiveInteger("pageSize", options.pageSize ?? 1000);
		this.#maxBatchBytes = positiveInteger("maxBatchBytes", options.maxBatchBytes ?? 4096);
		this.#client = options.client;
		this.#cql = cassandraStatements(options.keyspace, table);
		// A lightweight transaction is not idempotent: the driver must never retry it on its own
		// (a retry after an applied-but-timed-out round would report `false` for our own write).
		this.#conditional = { consistency, serialConsistency, isIdempotent: false };
		this.#write = { consistency, isIdempotent: false };
		this.#read = { consistency: readConsistency, isIdempotent: true };
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
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
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
	): Promise<boolean> {
		validateSwapArgs(pKey, cCols, oldValue, newValue, ttlSeconds);
		return this.#lwt("compareAndSwap", this.#cql.compareAndSwap, [
			serverTTL(ttlSeconds),
			buf(newValue),
			buf(pKey),
			buf(cCols),
			buf(oldValue),
		]);
	}

	async compareAndDelete(pKey: Bytes, cCols: Bytes, expectedValue: Bytes): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
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

	async put(pKey: Bytes, cCols: Bytes, value: Bytes, ttlSeconds = 0): Promise<void> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		await this.#execute(
			"put",
			"write",
			this.#cql.put,
			[serverTTL(ttlSeconds), buf(value), buf(pKey), buf(cCols)],
			this.#write,
		);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		for (const chunk of this.#chunks(items)) {
			if (chunk.length === 1) {
				const [it] = chunk as [BatchItem];
				await this.#execute(
					"putBatch",
					"write",
					this.#cql.put,
					[serverTTL(it.ttlSeconds ?? 0), buf(it.value), buf(it.pKey), buf(it.cCols)],
					this.#write,
				);
				continue;
			}
			const queries = chunk.map((it) => ({
				query: this.#cql.put,
				params: [serverTTL(it.ttlSeconds ?? 0), buf(it.value), buf(it.pKey), buf(it.cCols)],
			}));
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
