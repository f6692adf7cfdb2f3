import type { Clock, TimerHandle } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import type {
	BatchItem,
	Bytes,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteFence,
	WriteOptions,
} from "@vvm/ttlstorage";
import {
	closedError,
	compareBytes,
	fencedError,
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
import type { PgPhase } from "./errors.ts";
import { DRIVER_NAME, isConnectionError, isRetryableConflict, mapPgError } from "./errors.ts";
import type { PgPool, PgPoolClient, PgQueryResult } from "./pool.ts";
import { guardConnection, guardConnections } from "./pool.ts";
import { resolveNames } from "./schema.ts";
import type { LowerBound, PgStatements, Statement } from "./statements.ts";
import { pgStatements } from "./statements.ts";

/** Options of {@link createPgTTLStorage}. */
export interface PgTTLStorageOptions {
	/**
	 * A node-postgres `Pool` (`pg` 8), owned by the caller: the storage takes a connection per
	 * statement and gives it back, and never ends the pool (`close()` only stops this storage).
	 * Give the pool an `error` listener: node-postgres emits one when an idle connection breaks.
	 */
	readonly pool: PgPool;
	/** Schema holding the tables; default `"public"`. Create them with `ensurePgSchema`. */
	readonly schema?: string;
	/** Records table; default `"vvm_ttl"` (fences in `<table>_fences`). */
	readonly table?: string;
	/**
	 * **Tests only.** Without it (production) every expiry is decided by the database's clock.
	 * With it, statements compare expiry with `clock.now()`, sent as a parameter, and the sweep runs
	 * on the clock's timers: what the conformance suites' `MockClock` needs. Every storage over
	 * one table must then use the same clock.
	 */
	readonly clock?: Clock;
	/** How often expired records are deleted, in ms; default 60 000; 0 = never (another process sweeps). */
	readonly sweepIntervalMs?: number;
	/** Records deleted per sweep statement (a pass repeats it while it fills up); default 1000. */
	readonly sweepBatchSize?: number;
	/** Rows per page of `read`; default 1000. */
	readonly pageSize?: number;
	/**
	 * Send statements as named prepared statements (parsed once per connection); default `true`.
	 * Set `false` behind a pooler in transaction mode (PgBouncer before 1.21).
	 */
	readonly prepare?: boolean;
	/** Where a failed background sweep is logged (at `error`); any pino-compatible logger. */
	readonly logger?: Logger;
}

/** The PostgreSQL driver: a {@link TTLStorage} plus control over its sweep. */
export interface PgTTLStorage extends TTLStorage {
	/**
	 * Runs one sweep pass now: deletes records expired at this moment, in statements of
	 * `sweepBatchSize` rows, until one deletes fewer. Resolves to the number deleted.
	 */
	sweep(): Promise<number>;
}

const DEFAULT_SWEEP_INTERVAL_MS = 60_000;
/** Tries of a statement that the server aborted on a deadlock or serialization failure. */
const CONFLICT_TRIES = 3;

function positiveInteger(name: string, value: unknown, zero = false): void {
	if (typeof value !== "number" || !Number.isSafeInteger(value) || value < (zero ? 0 : 1)) {
		throw new RangeError(
			`[@vvm/ttlstorage-pg] ${name} must be an integer ${zero ? ">= 0" : ">= 1"}, got ${String(value)}`,
		);
	}
}

/**
 * Throws a `TypeError` or `RangeError` unless `options` are valid for {@link createPgTTLStorage}.
 * No I/O: a host checks its configuration with it before it builds the pool (`pool` is checked
 * only when present).
 *
 * @example
 * ```ts
 * validatePgTTLStorageOptions({ schema: "vvm", table: "leases", sweepIntervalMs: 30_000 });
 * ```
 */
export function validatePgTTLStorageOptions(options: Partial<PgTTLStorageOptions>): void {
	if (typeof options !== "object" || options === null)
		throw new TypeError("[@vvm/ttlstorage-pg] options must be an object");
	resolveNames(options);
	if (options.pool !== undefined && typeof options.pool?.connect !== "function")
		throw new TypeError("[@vvm/ttlstorage-pg] pool must be a node-postgres Pool");
	const clock = options.clock;
	if (
		clock !== undefined &&
		(typeof clock?.now !== "function" || typeof clock.setTimer !== "function")
	)
		throw new TypeError("[@vvm/ttlstorage-pg] clock must be a Clock (now, setTimer)");
	if (options.sweepIntervalMs !== undefined)
		positiveInteger("sweepIntervalMs", options.sweepIntervalMs, true);
	if (options.sweepBatchSize !== undefined)
		positiveInteger("sweepBatchSize", options.sweepBatchSize);
	if (options.pageSize !== undefined) positiveInteger("pageSize", options.pageSize);
	if (options.prepare !== undefined && typeof options.prepare !== "boolean")
		throw new TypeError("[@vvm/ttlstorage-pg] prepare must be a boolean");
}

/** A Buffer view of the bytes (no copy): node-postgres sends Buffers as binary `bytea`. */
const buf = (b: Bytes): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** An owned copy: results never alias node-postgres' buffers. */
const own = (b: Uint8Array): Bytes => new Uint8Array(b);

let lastStamp = 0;
/**
 * The stamp of the next fenced write of this process: microseconds of wall time, always above the
 * previous one, so of two writes under one epoch the later call has the higher stamp (F2). Wall
 * time keeps stamps growing across restarts of a process that keeps its epoch.
 */
function nextStamp(): number {
	lastStamp = Math.max(lastStamp + 1, Date.now() * 1000);
	return lastStamp;
}

const hex = (b: Bytes): string => buf(b).toString("hex");

/** The fences of some writes, one per scope (the lowest epoch decides), keyed by scope in hex. */
function fencesOf(fences: Iterable<WriteFence | undefined>): Map<string, WriteFence> {
	const out = new Map<string, WriteFence>();
	for (const f of fences) {
		if (f === undefined) continue;
		const key = hex(f.scope);
		const seen = out.get(key);
		if (seen === undefined || f.epoch < seen.epoch) out.set(key, f);
	}
	return out;
}

type Args = Record<string, unknown>;

class PgTTLStorageImpl implements PgTTLStorage {
	readonly #pool: PgPool;
	readonly #sql: PgStatements;
	/** The injected test clock; `undefined`: the database's clock decides expiry. */
	readonly #testClock: Clock | undefined;
	readonly #timers: Clock;
	readonly #sweepIntervalMs: number;
	readonly #sweepBatchSize: number;
	readonly #pageSize: number;
	readonly #prepare: boolean;
	readonly #log: Logger;
	readonly #inFlight = new Set<Promise<unknown>>();
	#timer: TimerHandle | undefined;
	#closed = false;
	#closing: Promise<void> | undefined;
	/** Batches and fenced writes are single statements; fences are row locks checked in them. */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: true,
		fencing: "epoch",
	});

	constructor(options: PgTTLStorageOptions) {
		validatePgTTLStorageOptions(options);
		if (options.pool === undefined)
			throw new TypeError("[@vvm/ttlstorage-pg] pool must be a node-postgres Pool");
		const { schema, table } = resolveNames(options);
		this.#pool = options.pool;
		this.#testClock = options.clock;
		this.#timers = options.clock ?? systemClock;
		this.#sql = pgStatements(schema, table, options.clock !== undefined);
		this.#sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
		this.#sweepBatchSize = options.sweepBatchSize ?? 1000;
		this.#pageSize = options.pageSize ?? 1000;
		this.#prepare = options.prepare ?? true;
		this.#log = libraryLogger(options.logger, { pkg: "@vvm/ttlstorage-pg" });
		guardConnections(options.pool);
		this.#arm();
	}

	// --- plumbing -------------------------------------------------------------------------------

	#open(operation: string): void {
		if (this.#closed) throw closedError(DRIVER_NAME, operation);
	}

	/** Runs storage I/O: rejects once closed, and lets close() wait for it. */
	async #io<T>(operation: string, fn: () => Promise<T>): Promise<T> {
		this.#open(operation);
		const run = fn();
		this.#inFlight.add(run);
		try {
			return await run;
		} finally {
			this.#inFlight.delete(run);
		}
	}

	/** The values of `stmt` from named arguments (and the test clock's now). */
	#values(stmt: Statement, args: Args): unknown[] {
		return stmt.params.map((name) => {
			if (name === "now") return (this.#testClock as Clock).now();
			if (!(name in args)) throw new Error(`[@vvm/ttlstorage-pg] no value for :${name}`);
			return args[name];
		});
	}

	/**
	 * One statement on a connection of the pool. A statement the server aborted on a deadlock or a
	 * serialization failure wrote nothing and is sent again (3 tries in all); every other error is
	 * mapped to a `TTLStorageError`, and a connection that broke is closed, not given back.
	 */
	async #query(
		operation: string,
		phase: Exclude<PgPhase, "connect">,
		stmt: Statement,
		args: Args,
	): Promise<PgQueryResult> {
		this.#open(operation);
		const config = {
			text: stmt.text,
			values: this.#values(stmt, args),
			...(this.#prepare ? { name: stmt.name } : {}),
		};
		for (let attempt = 1; ; attempt++) {
			let client: PgPoolClient;
			try {
				client = await this.#pool.connect();
			} catch (error) {
				throw mapPgError(error, { operation, phase: "connect" });
			}
			guardConnection(client);
			try {
				const result = await client.query(config);
				client.release();
				return result;
			} catch (error) {
				client.release(isConnectionError(error) ? toError(error) : undefined);
				if (attempt < CONFLICT_TRIES && isRetryableConflict(error)) continue;
				throw mapPgError(error, { operation, phase });
			}
		}
	}

	#write(operation: string, stmt: Statement, args: Args): Promise<PgQueryResult> {
		return this.#io(operation, () => this.#query(operation, "write", stmt, args));
	}

	/**
	 * A fenced statement: it writes only when every fence's scope row exists and holds an epoch at
	 * or below the fence's, share-locked until it commits. Resolves to the number of rows written;
	 * rejects with `TTLSTORAGE_FENCED` (nothing written) when a scope was raised above. A scope
	 * without a fence row gets one at epoch 0 first (then the statement runs again).
	 */
	#fenced(
		operation: string,
		stmt: Statement,
		args: Args,
		fences: ReadonlyMap<string, WriteFence>,
	): Promise<number> {
		const list = [...fences.values()];
		const scopes = list.map((f) => buf(f.scope));
		const epochs = list.map((f) => f.epoch.toString());
		return this.#io(operation, async () => {
			for (let attempt = 1; ; attempt++) {
				const result = await this.#query(operation, "write", stmt, { ...args, scopes, epochs });
				const row = result.rows[0];
				if (row?.ok === true) return Number(row.n);
				const stored = new Map<string, bigint>();
				for (const entry of Array.isArray(row?.fences) ? (row.fences as unknown[]) : []) {
					const [scope, epoch] = String(entry).split(":");
					stored.set(scope ?? "", BigInt(epoch ?? "0"));
				}
				const missing: Buffer[] = [];
				for (const [key, fence] of fences) {
					const current = stored.get(key);
					if (current === undefined) missing.push(buf(fence.scope));
					else if (current > fence.epoch)
						throw fencedError(DRIVER_NAME, operation, fence.epoch, current);
				}
				if (missing.length === 0 || attempt >= 3) {
					throw new TTLStorageError(
						"TTLSTORAGE_FAILED",
						`the fence check failed without a superseded epoch (${missing.length} scope rows missing after ${attempt} tries)`,
						{ driver: DRIVER_NAME, operation },
					);
				}
				await this.#query(operation, "write", this.#sql.createFences, { scopes: missing });
			}
		});
	}

	// --- sweep ------------------------------------------------------------------------------------

	#arm(): void {
		if (this.#sweepIntervalMs === 0 || this.#closed) return;
		this.#timer = this.#timers.setTimer(
			this.#sweepIntervalMs,
			() => {
				this.#timer = undefined;
				const pass = this.#sweepPass().then(
					() => undefined,
					(error: unknown) => {
						if (this.#closed) return;
						const code = TTLStorageError.is(error) ? error.code : undefined;
						this.#log.error({ err: error, code }, "sweep of expired records failed");
					},
				);
				this.#inFlight.add(pass);
				void pass.finally(() => {
					this.#inFlight.delete(pass);
					this.#arm();
				});
			},
			{ unref: true },
		);
	}

	async #sweepPass(): Promise<number> {
		let total = 0;
		for (;;) {
			if (this.#closed) return total;
			const result = await this.#query("sweep", "write", this.#sql.sweep, {
				limit: this.#sweepBatchSize,
			});
			const deleted = result.rowCount ?? 0;
			total += deleted;
			if (deleted < this.#sweepBatchSize) return total;
		}
	}

	sweep(): Promise<number> {
		return this.#io("sweep", () => this.#sweepPass());
	}

	// --- fencing --------------------------------------------------------------------------------

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		const operation = "raiseFence";
		return this.#io(operation, async () => {
			const stmt = epoch === undefined ? this.#sql.raiseNext : this.#sql.raiseTo;
			const result = await this.#query(operation, "write", stmt, {
				scope: buf(scope),
				epoch: epoch?.toString(),
			});
			const raised = result.rows[0]?.epoch;
			if (typeof raised === "string") return BigInt(raised);
			const current = await this.#query(operation, "read", this.#sql.fenceEpoch, {
				scope: buf(scope),
			});
			const stored = current.rows[0]?.epoch;
			throw fencedError(
				DRIVER_NAME,
				operation,
				epoch ?? 0n,
				typeof stored === "string" ? BigInt(stored) : (epoch ?? 0n) + 1n,
			);
		});
	}

	// --- the contract ---------------------------------------------------------------------------

	async insertIfNotExists(
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes,
		ttlSeconds: number,
		options?: WriteOptions,
	): Promise<boolean> {
		validateInsertArgs(pKey, cCols, value, ttlSeconds);
		validateWriteOptions(options);
		const operation = "insertIfNotExists";
		const args = { p: buf(pKey), c: buf(cCols), v: buf(value), ttl: ttlSeconds };
		const fence = options?.fence;
		if (fence === undefined)
			return ((await this.#write(operation, this.#sql.insertIfNotExists, args)).rowCount ?? 0) > 0;
		const stamped = { ...args, fe: fence.epoch.toString(), fs: nextStamp() };
		const fences = fencesOf([fence]);
		return (await this.#fenced(operation, this.#sql.fenced.insertIfNotExists, stamped, fences)) > 0;
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
		const operation = "compareAndSwap";
		const args = {
			p: buf(pKey),
			c: buf(cCols),
			ov: buf(oldValue),
			nv: buf(newValue),
			ttl: ttlSeconds,
		};
		const fence = options?.fence;
		if (fence === undefined)
			return ((await this.#write(operation, this.#sql.compareAndSwap, args)).rowCount ?? 0) > 0;
		const stamped = { ...args, fe: fence.epoch.toString(), fs: nextStamp() };
		return (
			(await this.#fenced(operation, this.#sql.fenced.compareAndSwap, stamped, fencesOf([fence]))) >
			0
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
		const operation = "compareAndDelete";
		const args = { p: buf(pKey), c: buf(cCols), v: buf(expectedValue) };
		const fence = options?.fence;
		if (fence === undefined)
			return ((await this.#write(operation, this.#sql.compareAndDelete, args)).rowCount ?? 0) > 0;
		const stamped = { ...args, fe: fence.epoch.toString(), fs: nextStamp() };
		return (
			(await this.#fenced(
				operation,
				this.#sql.fenced.compareAndDelete,
				stamped,
				fencesOf([fence]),
			)) > 0
		);
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		const result = await this.#io("get", () =>
			this.#query("get", "read", this.#sql.get, { p: buf(pKey), c: buf(cCols) }),
		);
		const value = result.rows[0]?.value;
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
		const fence = options?.fence;
		if (fence === undefined) {
			await this.#write("put", this.#sql.put, {
				p: buf(pKey),
				c: buf(cCols),
				v: buf(value),
				ttl: ttlSeconds,
			});
			return;
		}
		await this.#writeBatch("put", [{ pKey, cCols, value, ttlSeconds, fence }]);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		if (items.length === 0) return;
		await this.#writeBatch("putBatch", items);
	}

	/**
	 * Validated items as one statement (one transaction): for a key named twice the later item
	 * wins, as in a loop of puts; keys go in index order, so two batches lock rows in one order.
	 */
	async #writeBatch(operation: string, items: readonly BatchItem[]): Promise<void> {
		const unique = new Map<string, { item: BatchItem; stamp: number | undefined }>();
		for (const item of items) {
			const key = `${hex(item.pKey)}/${hex(item.cCols)}`;
			unique.delete(key);
			unique.set(key, { item, stamp: item.fence === undefined ? undefined : nextStamp() });
		}
		const rows = [...unique.values()].sort(
			(a, b) => compareBytes(a.item.pKey, b.item.pKey) || compareBytes(a.item.cCols, b.item.cCols),
		);
		const args = {
			p: rows.map((r) => buf(r.item.pKey)),
			c: rows.map((r) => buf(r.item.cCols)),
			v: rows.map((r) => buf(r.item.value)),
			ttl: rows.map((r) => r.item.ttlSeconds ?? 0),
			fe: rows.map((r) => r.item.fence?.epoch.toString() ?? null),
			fs: rows.map((r) => r.stamp ?? null),
		};
		const fences = fencesOf(items.map((it) => it.fence));
		if (fences.size === 0) await this.#write(operation, this.#sql.putBatch, args);
		else await this.#fenced(operation, this.#sql.fenced.putBatch, args, fences);
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, new Uint8Array());
		validateRange(range.from, range.to);
		const { from, to } = range;
		const empty = from !== undefined && to !== undefined && compareBytes(from, to) >= 0;
		const self = this;
		const page = this.#pageSize;
		return {
			async *[Symbol.asyncIterator]() {
				self.#open("read");
				if (empty) return;
				let lower: LowerBound = from === undefined ? "none" : "from";
				let lo: Bytes | undefined = from;
				for (;;) {
					const args: Args = { p: buf(pKey), limit: page };
					if (lo !== undefined) args.lo = buf(lo);
					if (to !== undefined) args.hi = buf(to);
					const stmt = self.#sql.read(lower, to !== undefined);
					const result = await self.#io("read", () => self.#query("read", "read", stmt, args));
					let last: Bytes | undefined;
					for (const row of result.rows) {
						const cCols = row.c_cols;
						const value = row.value;
						if (cCols instanceof Uint8Array && value instanceof Uint8Array) {
							last = own(cCols);
							yield { cCols: last, value: own(value) };
						}
					}
					if (result.rows.length < page || last === undefined) return;
					lower = "after";
					lo = last;
				}
			},
		};
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		const result = await this.#io("queryTTL", () =>
			this.#query("queryTTL", "read", this.#sql.queryTTL, { p: buf(pKey), c: buf(cCols) }),
		);
		const remaining = result.rows[0]?.remaining;
		return typeof remaining === "number" ? remaining : undefined;
	}

	close(): Promise<void> {
		if (this.#closing !== undefined) return this.#closing;
		this.#closed = true;
		this.#timer?.cancel();
		this.#timer = undefined;
		this.#closing = Promise.allSettled([...this.#inFlight]).then(() => undefined);
		return this.#closing;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

const toError = (e: unknown): Error => (e instanceof Error ? e : new Error(String(e)));

/**
 * Creates the PostgreSQL TTL storage over a caller-owned node-postgres `Pool`. Every operation is
 * one statement (one transaction): conditional writes are `INSERT … ON CONFLICT … DO UPDATE …
 * WHERE <expired>`, `UPDATE … WHERE value = $old` and `DELETE … WHERE value = $expected`, atomic
 * per row; `putBatch` is one `INSERT … SELECT FROM unnest(…) ON CONFLICT`, all or nothing.
 *
 * **Expiry is decided by the database's clock**: a record written with TTL `T` expires at the
 * server's `statement_timestamp()` of its write + `T` (ms in `expire_at`), and every read and
 * condition compares with the `statement_timestamp()` of its own statement. Client clocks play no
 * part. A periodic sweep deletes expired records in bounded statements, re-checking each one.
 *
 * **Fenced writes** (`supports.fencing: "epoch"`): `raiseFence` updates the scope's row in
 * `<table>_fences` (a row lock); every fenced statement share-locks the rows of its scopes and
 * writes only when their epochs are at or below its own, else it rejects with
 * `TTLSTORAGE_FENCED` and writes nothing. So once `raiseFence` resolved, no write of a lower
 * epoch lands. Within one epoch, writes of one record keep call order by a stamp (F2).
 *
 * Create the tables first with {@link ensurePgSchema}.
 *
 * @example
 * ```ts
 * import pg from "pg";
 * const pool = new pg.Pool({ host: "127.0.0.1", user: "vvm", database: "vvm" });
 * pool.on("error", () => {}); // an idle connection broke; the next query opens another
 * await ensurePgSchema(pool);
 * const storage = createPgTTLStorage({ pool });
 * const leader = await storage.insertIfNotExists(pKey, cCols, value, 20);
 * ```
 */
export function createPgTTLStorage(options: PgTTLStorageOptions): PgTTLStorage {
	return new PgTTLStorageImpl(options);
}
