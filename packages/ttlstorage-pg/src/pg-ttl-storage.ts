import { setImmediate as nextTurn } from "node:timers";
import type { Clock, TimerHandle } from "@vvm/clock";
import { isTestClock, systemClock } from "@vvm/clock";
import type { Logger } from "@vvm/log";
import { libraryLogger } from "@vvm/log";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
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
	refuseUnknownOptions,
	TTLStorageError,
	validateBatch,
	validateConditionalBatch,
	validateDeleteArgs,
	validateFenceEpoch,
	validateFenceScope,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateWriteOptions,
} from "@vvm/ttlstorage";
import { byteaArray, int4Array, int8Array } from "./binary-arrays.ts";
import type { PgPhase } from "./errors.ts";
import { DRIVER_NAME, isConnectionError, isRetryableConflict, mapPgError } from "./errors.ts";
import type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult } from "./pool.ts";
import { guardConnection, guardConnections, isBroken } from "./pool.ts";
import { resolveNames } from "./schema.ts";
import type { ItemKind, LowerBound, PgStatements, Statement } from "./statements.ts";
import { PARTIAL_MARK, pgStatements } from "./statements.ts";

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
	 * one table must then use the same clock. Only a test clock is accepted (`isTestClock` of
	 * `@vvm/clock`: a `MockClock`); `systemClock` or any other clock is a `TypeError`, since each
	 * client's wall clock would then decide expiry.
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
	/**
	 * Group commit: write statements at the server at once, default 2. Writes that arrive while
	 * this many are in flight wait and then go together, as one statement (one transaction, one
	 * commit). 1 is the classic group commit; a large value sends nearly every write on its own.
	 */
	readonly writesInFlight?: number;
	/**
	 * Reads (`get` and pages of `read`) at the server at once, default 1. Reads called in one turn
	 * of the event loop, or while this many statements are reading, go together as one statement
	 * (the `get`s with the pages of one shape); a read called alone goes alone.
	 */
	readonly readsInFlight?: number;
	/** Items (records written) per group statement at most; default 1000 (a larger batch goes alone). */
	readonly maxGroupItems?: number;
	/** Where a failed background sweep is logged (at `error`); any pino-compatible logger. */
	readonly logger?: Logger;
}

/** The PostgreSQL driver: a {@link TTLStorage} (with `putBatchIf`) plus control over its sweep. */
export interface PgTTLStorage extends TTLStorage {
	/** {@link TTLStorage.putBatchIf}: this driver always has it (one statement of a group). */
	putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean>;
	/**
	 * Runs one sweep pass now: deletes records expired at this moment, in statements of
	 * `sweepBatchSize` rows, until one deletes fewer. Resolves to the number deleted.
	 */
	sweep(): Promise<number>;
}

const DEFAULT_SWEEP_INTERVAL_MS = 60_000;
/** Tries of a statement that the server aborted on a deadlock or serialization failure. */
const CONFLICT_TRIES = 3;
/**
 * Statements in a row one connection carries by handing on (`#spares`) before it goes back to
 * the pool, so the pool's checks on release (`maxUses`, `maxLifetimeSeconds`) still come round.
 */
const HAND_ON_LIMIT = 64;
/** node-postgres refused the statement before sending it (a client that broke, or was ended). */
const refusedBeforeSending = (error: unknown): boolean =>
	error instanceof Error && /not queryable/i.test(error.message);

function positiveInteger(name: string, value: unknown, zero = false): void {
	if (typeof value !== "number" || !Number.isSafeInteger(value) || value < (zero ? 0 : 1)) {
		throw new RangeError(
			`[@vvm/ttlstorage-pg] ${name} must be an integer ${zero ? ">= 0" : ">= 1"}, got ${String(value)}`,
		);
	}
}

/** Every option of {@link PgTTLStorageOptions}, checked against it by the compiler: any other key is refused. */
const OPTIONS: { readonly [K in keyof PgTTLStorageOptions]-?: true } = {
	pool: true,
	schema: true,
	table: true,
	clock: true,
	sweepIntervalMs: true,
	sweepBatchSize: true,
	pageSize: true,
	prepare: true,
	writesInFlight: true,
	readsInFlight: true,
	maxGroupItems: true,
	logger: true,
};

/**
 * Throws a `TypeError` or `RangeError` unless `options` are valid for {@link createPgTTLStorage}.
 * A key that is not an option (a misspelt `sweepIntervalMS` from a configuration file) is a
 * `TypeError` naming it and the known ones.
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
	refuseUnknownOptions("@vvm/ttlstorage-pg", options, OPTIONS);
	resolveNames(options);
	if (options.pool !== undefined && typeof options.pool?.connect !== "function")
		throw new TypeError("[@vvm/ttlstorage-pg] pool must be a node-postgres Pool");
	const clock = options.clock;
	if (
		clock !== undefined &&
		(typeof clock?.now !== "function" || typeof clock.setTimer !== "function")
	)
		throw new TypeError("[@vvm/ttlstorage-pg] clock must be a Clock (now, setTimer)");
	if (clock !== undefined && !isTestClock(clock))
		throw new TypeError(
			"[@vvm/ttlstorage-pg] clock is for tests only and must be a test clock (a MockClock, or one marked with @vvm/clock's TEST_CLOCK): without it expiry is decided by the database's clock, which is what production needs; with systemClock or another wall clock each client would decide expiry by its own clock, with no bound on the skew between hosts. Leave clock out",
		);
	if (options.sweepIntervalMs !== undefined)
		positiveInteger("sweepIntervalMs", options.sweepIntervalMs, true);
	if (options.sweepBatchSize !== undefined)
		positiveInteger("sweepBatchSize", options.sweepBatchSize);
	if (options.pageSize !== undefined) positiveInteger("pageSize", options.pageSize);
	if (options.writesInFlight !== undefined)
		positiveInteger("writesInFlight", options.writesInFlight);
	if (options.readsInFlight !== undefined) positiveInteger("readsInFlight", options.readsInFlight);
	if (options.maxGroupItems !== undefined) positiveInteger("maxGroupItems", options.maxGroupItems);
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

/** One record a write request writes, in the group statement's columns. */
interface WriteItem {
	readonly k: ItemKind;
	readonly p: Buffer;
	readonly c: Buffer;
	/** The value written; `null` for a delete. */
	readonly v: Buffer | null;
	/** The value a swap or delete expects. */
	readonly ex: Buffer | null;
	readonly ttl: number;
	/** The fence's epoch and the write's stamp (F2), or `null` unfenced. */
	readonly fe: bigint | null;
	readonly fs: number | null;
}

/** What a request's part of a group statement answered. */
interface WriteResult {
	/** Its fences passed and all its conditions held: everything was written (puts F2-ordered). */
	readonly ok: boolean;
}

/** One caller's write (an operation of the contract), waiting for or riding in a group. */
interface WriteRequest {
	readonly operation: string;
	readonly items: readonly WriteItem[];
	/** Its fences, one per scope (the lowest epoch), keyed by scope in hex. */
	readonly fences: ReadonlyMap<string, WriteFence>;
	readonly keys: readonly string[];
	/** Times a scope of it had no fence row yet (each time the row is created and it goes again). */
	tries: number;
	resolve(result: WriteResult): void;
	reject(error: unknown): void;
}

/**
 * How a chained request rides in the group of the request it follows (see `#link`): its items
 * at `skip` (each requiring exactly what an earlier request of the group writes there) are not
 * sent, and it writes only if those requests (`after`) wrote.
 */
interface Link {
	readonly skip: ReadonlySet<number>;
	readonly after: readonly WriteRequest[];
}

/** Requests sent as one statement: their keys never overlap, except where a request is linked. */
interface WriteGroup {
	readonly requests: WriteRequest[];
	readonly keys: Set<string>;
	items: number;
	/**
	 * It names a key that a group at the server or an earlier waiting group names: it waits for
	 * those, so only requests that wait anyway join it (see `#enqueue`).
	 */
	readonly dependent: boolean;
	/** Requests linked to earlier ones of the group (`#link`). */
	links?: Map<WriteRequest, Link>;
}

/**
 * A kind of read that many callers' reads share one statement of: the statement for one (`one`,
 * sent when the read goes alone) and for many (`many`, whose arguments `manyArgs` makes from
 * theirs; rows tagged `i`, the read's place from 1).
 */
interface ReadKind {
	readonly operation: "get" | "read";
	readonly one: Statement;
	readonly many: Statement;
	manyArgs(args: readonly Args[]): Args;
	/** A page kind's statement with gets in front (`PgStatements.mixed`); none for gets. */
	readonly withGets?: Statement;
}

/** One caller's `get` or page of a `read`, waiting for a statement. */
interface ReadRequest {
	readonly kind: ReadKind;
	readonly args: Args;
	resolve(rows: ReadonlyArray<Record<string, unknown>>): void;
	reject(error: unknown): void;
}

/** Most reads in one statement. */
const MAX_READS_PER_STATEMENT = 256;

/**
 * An error raised before a statement was sent (building its values): nothing was written, so it
 * is `TTLSTORAGE_FAILED` whatever its kind, and a group it failed goes again request by request.
 * (`mapPgError` would call an error it does not know in a write `OUTCOME_UNKNOWN`.)
 */
function unsent(error: unknown, operation: string): TTLStorageError {
	if (TTLStorageError.is(error)) return error;
	const detail = error instanceof Error ? error.message : String(error);
	return new TTLStorageError("TTLSTORAGE_FAILED", `${detail}; nothing was sent`, {
		driver: DRIVER_NAME,
		operation,
		cause: error,
	});
}

/**
 * A statement that failed (`#send`): where, what node-postgres raised, and whether it was sent
 * (`false`: building its values failed, nothing left this process).
 */
class StatementFailure {
	readonly error: unknown;
	readonly phase: PgPhase;
	readonly sent: boolean;
	constructor(error: unknown, phase: PgPhase, sent = true) {
		this.error = error;
		this.phase = phase;
		this.sent = sent;
	}
}

/** The error of `failure` for `operation`. */
const failureError = (failure: StatementFailure, operation: string): TTLStorageError =>
	failure.sent
		? mapPgError(failure.error, { operation, phase: failure.phase })
		: unsent(failure.error, operation);

/** The key of a record in a group (length-prefixed, so two keys never read alike). */
const keyOf = (p: Buffer, c: Buffer): string =>
	`${p.length}:${p.toString("latin1")}${c.toString("latin1")}`;

/** The error a group raises when a request of it would be written in part (nothing was). */
const isPartial = (error: unknown): boolean =>
	(error as { code?: unknown })?.code === "22P02" &&
	String((error as { message?: unknown }).message).includes(PARTIAL_MARK);

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
	readonly #writesInFlight: number;
	readonly #readsInFlight: number;
	readonly #maxGroupItems: number;
	/** Reads waiting for a statement, in arrival order; and the statements reading now. */
	#reads: ReadRequest[] = [];
	#readStatements = 0;
	/** The end-of-turn pump of reads called this turn (they go together, not the first alone). */
	#readsScheduled: NodeJS.Immediate | undefined;
	readonly #readKinds = new Map<string, ReadKind>();
	/** The kind of every `get` (made once: each read and each pump of reads asks for it). */
	readonly #getKind: ReadKind;
	/** Groups waiting to be sent, in arrival order. */
	readonly #queue: WriteGroup[] = [];
	/** Keys of the groups at the server: a group holding one of them waits. */
	readonly #keysInFlight = new Set<string>();
	#groupsInFlight = 0;
	/**
	 * The connection of a group statement (`writer`) or read statement (`reader`) that just
	 * answered, while it hands its place on (`#settle`, `#sendReads`): the next waiting statement
	 * of its lane is sent on it at once. From the pool it would wait for the pool's hand-over, a
	 * tick away, behind everything the answered callers then run.
	 */
	readonly #spares: Record<"writer" | "reader", PgPoolClient | undefined> = {
		writer: undefined,
		reader: undefined,
	};
	/** Statements in a row a connection carried by being handed on (see `HAND_ON_LIMIT`). */
	readonly #handedOn = new WeakMap<PgPoolClient, number>();
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
		this.#getKind = this.#readKind("get", false);
		this.#sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
		this.#sweepBatchSize = options.sweepBatchSize ?? 1000;
		this.#pageSize = options.pageSize ?? 1000;
		this.#prepare = options.prepare ?? true;
		this.#writesInFlight = options.writesInFlight ?? 2;
		this.#readsInFlight = options.readsInFlight ?? 1;
		this.#maxGroupItems = options.maxGroupItems ?? 1000;
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
	 * Whether the storage is open was checked when the operation was called (`#io`): a statement
	 * of an operation taken before `close()` (a read that waited, a fence row a first write needs)
	 * still runs, and close() waits for it.
	 */
	async #query(
		operation: string,
		phase: Exclude<PgPhase, "connect">,
		stmt: Statement,
		args: Args,
	): Promise<PgQueryResult> {
		const { result, client } = await this.#statement(operation, phase, stmt, args);
		client.release();
		return result;
	}

	/**
	 * {@link #query} on `spare` when given (the connection a statement just answered on), else on
	 * a connection of the pool, sent before this returns when `spare` is given; resolves to the
	 * result and the connection, which the caller releases.
	 */
	async #statement(
		operation: string,
		phase: Exclude<PgPhase, "connect">,
		stmt: Statement,
		args: Args,
		spare?: PgPoolClient,
	): Promise<{ result: PgQueryResult; client: PgPoolClient }> {
		try {
			return await this.#send(stmt, args, phase, spare, isRetryableConflict);
		} catch (failure) {
			throw failureError(failure as StatementFailure, operation);
		}
	}

	/**
	 * `stmt` on `spare` when given (sent before this returns), else on a connection of the pool;
	 * resolves to the result and the connection, which the caller releases. A statement the server
	 * aborted in a way `again` accepts wrote nothing and is sent again, `CONFLICT_TRIES` in all, on
	 * connections of the pool; one node-postgres refused on `spare` before sending it goes on one,
	 * as the same try. Throws a {@link StatementFailure}.
	 */
	async #send(
		stmt: Statement,
		args: Args,
		phase: Exclude<PgPhase, "connect">,
		spare: PgPoolClient | undefined,
		again: (error: unknown) => boolean,
	): Promise<{ result: PgQueryResult; client: PgPoolClient }> {
		let config: PgQueryConfig;
		try {
			config = {
				text: stmt.text,
				values: this.#values(stmt, args),
				...(this.#prepare ? { name: stmt.name } : {}),
			};
		} catch (error) {
			throw new StatementFailure(error, phase, false);
		}
		let handed = spare;
		for (let attempt = 1; ; attempt++) {
			let client = handed;
			if (client === undefined)
				try {
					client = await this.#pool.connect();
				} catch (error) {
					throw new StatementFailure(error, "connect");
				}
			guardConnection(client);
			try {
				return { result: await client.query(config), client };
			} catch (error) {
				this.#release(client, isConnectionError(error) ? toError(error) : undefined);
				if (client === handed) {
					handed = undefined;
					if (refusedBeforeSending(error)) {
						attempt--;
						continue;
					}
				}
				if (attempt < CONFLICT_TRIES && again(error)) continue;
				throw new StatementFailure(error, phase);
			}
		}
	}

	// --- grouped reads --------------------------------------------------------------------------

	/**
	 * A read's rows: sent at the end of this turn of the event loop (`setImmediate`) with the
	 * reads called meanwhile, or once fewer than `readsInFlight` statements are reading, with the
	 * reads waiting then, as one statement. Each read is answered from that statement's snapshot,
	 * taken after every read in it was called: linearizable as a read of its own. A failed
	 * statement fails the reads in it (nothing was written).
	 */
	#read(kind: ReadKind, args: Args): Promise<ReadonlyArray<Record<string, unknown>>> {
		return this.#io(
			kind.operation,
			() =>
				new Promise((resolve, reject) => {
					this.#reads.push({ kind, args, resolve, reject });
					if (this.#readsScheduled === undefined)
						this.#readsScheduled = nextTurn(() => {
							this.#readsScheduled = undefined;
							this.#pumpReads();
						});
				}),
		);
	}

	/**
	 * Sends waiting reads while statements are free: the oldest one's kind with all of its kind,
	 * and the waiting gets with the first waiting kind of page (a cold workspace's page of numbers
	 * and its log probe then share a round trip, not one each).
	 */
	#pumpReads(): void {
		while (this.#reads.length > 0 && this.#readStatements < this.#readsInFlight) {
			const getKind = this.#getKind;
			const pageKind = this.#reads.find((r) => r.kind !== getKind)?.kind;
			const gets: ReadRequest[] = [];
			const pages: ReadRequest[] = [];
			const rest: ReadRequest[] = [];
			for (const r of this.#reads) {
				const room = gets.length + pages.length < MAX_READS_PER_STATEMENT;
				if (room && r.kind === getKind) gets.push(r);
				else if (room && r.kind === pageKind) pages.push(r);
				else rest.push(r);
			}
			this.#reads = rest;
			this.#readStatements++;
			let done = false;
			const handOn = (): void => {
				if (done) return;
				done = true;
				this.#readStatements--;
				this.#pumpReads();
			};
			void this.#sendReads(gets, pageKind, pages, handOn).finally(handOn);
		}
	}

	/**
	 * The statement of the gets and the pages of one read statement, its arguments, and the reads
	 * it answers in the order its rows number them (`i` from 1).
	 */
	#readStatement(
		gets: readonly ReadRequest[],
		pageKind: ReadKind | undefined,
		pages: readonly ReadRequest[],
	): { statement: Statement; args: Args; batch: readonly ReadRequest[] } {
		const getKind = this.#getKind;
		const argsOf = (batch: readonly ReadRequest[]) => batch.map((r) => r.args);
		if (gets.length > 0 && pages.length > 0) {
			if (pageKind?.withGets === undefined)
				throw new Error("[@vvm/ttlstorage-pg] pages to read with gets have no statement for both");
			const { ps, cs } = getKind.manyArgs(argsOf(gets));
			return {
				statement: pageKind.withGets,
				args: { gps: ps, gcs: cs, gn: gets.length, ...pageKind.manyArgs(argsOf(pages)) },
				batch: [...gets, ...pages],
			};
		}
		const [kind, batch] = pages.length > 0 ? [pageKind, pages] : [getKind, gets];
		if (kind === undefined) throw new Error("[@vvm/ttlstorage-pg] pages to read have no kind");
		const only = batch.length === 1 ? (batch[0] as ReadRequest) : undefined;
		return only === undefined
			? { statement: kind.many, args: kind.manyArgs(argsOf(batch)), batch }
			: { statement: kind.one, args: only.args, batch };
	}

	/**
	 * One read statement of the gets and the pages (of one kind) in it. Once it answered, `handOn`
	 * sends the next waiting reads on its connection before the readers run (as a write group's
	 * `handOn`, see `#settle`). A failure fails each read in it, named by its own operation.
	 */
	async #sendReads(
		gets: readonly ReadRequest[],
		pageKind: ReadKind | undefined,
		pages: readonly ReadRequest[],
		handOn: () => void,
	): Promise<void> {
		// Until the statement is made, the reads to fail if that throws (in any order).
		let batch: readonly ReadRequest[] = gets.length === 0 ? pages : gets.concat(pages);
		try {
			const read = this.#readStatement(gets, pageKind, pages);
			batch = read.batch;
			const only = batch.length === 1 ? (batch[0] as ReadRequest) : undefined;
			const { result, client } = await this.#send(
				read.statement,
				read.args,
				"read",
				this.#takeSpare("reader"),
				isRetryableConflict,
			);
			this.#spares.reader = this.#spare(client);
			handOn();
			this.#release(this.#takeSpare("reader"));
			if (only !== undefined) {
				only.resolve(result.rows);
				return;
			}
			const rows: Array<Record<string, unknown>>[] = batch.map(() => []);
			for (const row of result.rows) rows[(row.i as number) - 1]?.push(row);
			batch.forEach((r, i) => {
				r.resolve(rows[i] as Array<Record<string, unknown>>);
			});
		} catch (failure) {
			if (!(failure instanceof StatementFailure)) {
				for (const r of batch) r.reject(failure);
				return;
			}
			for (const r of batch) r.reject(failureError(failure, r.kind.operation));
		}
	}

	/** The kind of a `get`, or of a page of `read` with these bounds. */
	#readKind(lower: LowerBound | "get", upper: boolean): ReadKind {
		const key = `${lower}/${upper}`;
		let kind = this.#readKinds.get(key);
		if (kind !== undefined) return kind;
		const column = (all: readonly Args[], name: string) =>
			byteaArray(all.map((a) => a[name] as Buffer));
		kind =
			lower === "get"
				? {
						operation: "get",
						one: this.#sql.get,
						many: this.#sql.gets,
						manyArgs: (all) => ({ ps: column(all, "p"), cs: column(all, "c") }),
					}
				: {
						operation: "read",
						one: this.#sql.read(lower, upper),
						many: this.#sql.reads(lower, upper),
						manyArgs: (all) => ({
							ps: column(all, "p"),
							...(lower === "none" ? {} : { los: column(all, "lo") }),
							...(upper ? { his: column(all, "hi") } : {}),
							limit: (all[0] as Args).limit,
						}),
						withGets: this.#sql.mixed(lower, upper),
					};
		this.#readKinds.set(key, kind);
		return kind;
	}

	// --- group commit ---------------------------------------------------------------------------

	/**
	 * Sends a write with the others that arrive meanwhile: resolves once the group statement that
	 * carried it committed, with its own answer. A request of a scope without a fence row gets one
	 * at epoch 0 and goes again; a superseded fence rejects it with `TTLSTORAGE_FENCED`.
	 */
	#submit(
		operation: string,
		items: readonly WriteItem[],
		fences: ReadonlyMap<string, WriteFence>,
	): Promise<WriteResult> {
		return this.#io(
			operation,
			() =>
				new Promise<WriteResult>((resolve, reject) => {
					const keys = items.map((it) => keyOf(it.p, it.c));
					this.#enqueue({ operation, items, fences, keys, tries: 0, resolve, reject });
				}),
		);
	}

	/**
	 * Puts a request in a waiting group. One that names no key at the server or waiting (it is
	 * independent) joins the last independent group: it is sent as soon as a statement is free,
	 * never held behind a chain of writes. One that names such a key (dependent: a later write of
	 * it) rides as a link in the last waiting group naming one of its keys when it can (`#link`),
	 * else joins the last dependent group if no group from there on names one of its keys, else
	 * starts a new group at the end; either way it takes effect after every earlier write of its
	 * keys. A group never names a key twice (but for the links, which are not sent), nor grows
	 * past `maxGroupItems`.
	 */
	#enqueue(request: WriteRequest): void {
		const queue = this.#queue;
		const dependent = request.keys.some((k) => this.#keysInFlight.has(k) || this.#queued(k));
		let g: WriteGroup | undefined;
		for (let i = queue.length - 1; i >= 0; i--) {
			const c = queue[i] as WriteGroup;
			if (dependent && request.keys.some((k) => c.keys.has(k))) {
				// The last group naming one of its keys: it rides there if it only follows writes of it.
				if (this.#linkInto(c, request)) {
					this.#pump();
					return;
				}
				break;
			}
			if (c.dependent !== dependent) continue;
			if (c.items + request.items.length <= this.#maxGroupItems || c.requests.length === 0) g = c;
			break;
		}
		if (g === undefined) {
			g = { requests: [], keys: new Set(), items: 0, dependent };
			queue.push(g);
		}
		this.#join(g, request);
		this.#pump();
	}

	#join(g: WriteGroup, request: WriteRequest): void {
		g.requests.push(request);
		g.items += request.items.length;
		for (const k of request.keys) g.keys.add(k);
	}

	/**
	 * Links `request` into waiting group `g`, which names some of its keys, when each such key is
	 * a *link*: the request swaps it from `x` to the same `x` (it only requires it, as a
	 * pipelined PLog write requires its predecessor's entry), and a request of `g` inserts or
	 * swaps that key to `x`, with the same TTL and fence epoch. Once that request wrote, the
	 * link's condition holds and its write would change nothing but the F2 stamp; so the link
	 * items are left out of the statement and the request writes only if the requests it
	 * follows wrote (and its own fences and conditions, on keys no other request of `g` names,
	 * hold). When one of those did not write, it is sent again (`#requeueFirst`), its link items
	 * then checked on their own. Returns the link (`#linkInto` puts it in `g`), or `undefined`: not
	 * when it would have no item left, would grow `g` past `maxGroupItems`, or would hold up an
	 * independent group (a key of it at the server or waiting elsewhere).
	 */
	#link(g: WriteGroup, request: WriteRequest): Link | undefined {
		if (g.items + request.items.length > this.#maxGroupItems) return undefined;
		const skip = new Set<number>();
		const after = new Set<WriteRequest>();
		for (let j = 0; j < request.items.length; j++) {
			const key = request.keys[j] as string;
			if (!g.keys.has(key)) {
				if (!g.dependent && (this.#keysInFlight.has(key) || this.#queued(key))) return undefined;
				continue;
			}
			const it = request.items[j] as WriteItem;
			if (it.k !== 2 || it.v === null || it.ex === null || !it.v.equals(it.ex)) return undefined;
			const writer = this.#writerOf(g, key);
			if (writer === undefined) return undefined;
			const w = writer.request.items[writer.index] as WriteItem;
			if ((w.k !== 1 && w.k !== 2) || w.v === null || !w.v.equals(it.ex)) return undefined;
			if (w.ttl !== it.ttl || w.fe !== it.fe) return undefined;
			skip.add(j);
			after.add(writer.request);
		}
		if (skip.size === 0 || skip.size === request.items.length) return undefined;
		return { skip, after: [...after] };
	}

	/** Puts `request` in `g` as a link when it can be one (`#link`); returns whether it did. */
	#linkInto(g: WriteGroup, request: WriteRequest): boolean {
		const link = this.#link(g, request);
		if (link === undefined) return false;
		g.links ??= new Map();
		g.links.set(request, link);
		this.#join(g, request);
		return true;
	}

	/** The request of `g` that writes `key`, and the index of that item. */
	#writerOf(g: WriteGroup, key: string): { request: WriteRequest; index: number } | undefined {
		for (const request of g.requests) {
			const skip = g.links?.get(request)?.skip;
			const index = request.keys.indexOf(key);
			if (index !== -1 && skip?.has(index) !== true) return { request, index };
		}
		return undefined;
	}

	/** Whether a waiting group names key `k`. */
	#queued(k: string): boolean {
		for (const g of this.#queue) if (g.keys.has(k)) return true;
		return false;
	}

	/**
	 * Sends waiting groups while fewer than `writesInFlight` are at the server, in arrival order
	 * except that a group with a key still being written (or waiting in an earlier group) waits:
	 * writes of one key keep their order; writes of other keys were concurrent with it anyway.
	 */
	#pump(): void {
		let waiting: Set<string> | undefined;
		for (let i = 0; i < this.#queue.length && this.#groupsInFlight < this.#writesInFlight; ) {
			const g = this.#queue[i] as WriteGroup;
			let blocked = false;
			for (const k of g.keys)
				if (this.#keysInFlight.has(k) || waiting?.has(k)) {
					blocked = true;
					break;
				}
			if (blocked) {
				waiting ??= new Set();
				for (const k of g.keys) waiting.add(k);
				i++;
				continue;
			}
			this.#queue.splice(i, 1);
			this.#groupsInFlight++;
			for (const k of g.keys) this.#keysInFlight.add(k);
			let done = false;
			// Once: the requests that go again are queued at the head, then g's place and keys are
			// free and the next waiting groups go.
			const handOn = (again: readonly WriteRequest[]): void => {
				if (done) return;
				done = true;
				this.#requeueFirst(again);
				this.#groupsInFlight--;
				for (const k of g.keys) this.#keysInFlight.delete(k);
				this.#pump();
			};
			void this.#settle(g, handOn).then(handOn, () => handOn([]));
		}
	}

	/**
	 * One group: one statement, one commit; resolves to the requests that go again, in its order.
	 * Each request is answered from its own row. When the statement failed, the server rolled it
	 * back: a `TTLSTORAGE_FAILED` error (something in one request, not the server's state) sends
	 * each request again on its own, so one bad write fails only its caller; every other error
	 * (the server unavailable, a lost answer: `OUTCOME_UNKNOWN` for every write of the group) is
	 * every request's.
	 *
	 * `handOn`, when given, is called as soon as what goes again is known, before the callers of
	 * the answered requests run (answering only queues them): the next group then goes out on this
	 * statement's connection at once, and the server works on it while they run.
	 */
	async #settle(
		g: WriteGroup,
		handOn?: (again: readonly WriteRequest[]) => void,
	): Promise<WriteRequest[]> {
		let rows: ReadonlyArray<Record<string, unknown>>;
		let writer: PgPoolClient;
		try {
			({ rows, client: writer } = await this.#sendGroup(g));
		} catch (failure) {
			const f =
				failure instanceof StatementFailure
					? failure
					: new StatementFailure(failure, "write", false);
			const { error, phase } = f;
			const first = g.requests[0] as WriteRequest;
			const mapped = failureError(f, first.operation);
			const alone = isPartial(error) || mapped.code === "TTLSTORAGE_FAILED";
			if (alone && phase === "write" && g.requests.length > 1) {
				// One by one, in order and without links. A request that goes again keeps its place
				// before every later one naming one of its keys (a link's predecessor among them):
				// those go again behind it instead of being decided first.
				const again: WriteRequest[] = [];
				const held = new Set<string>();
				for (const request of g.requests) {
					const resent = request.keys.some((k) => held.has(k))
						? [request]
						: await this.#settle({
								requests: [request],
								keys: g.keys,
								items: request.items.length,
								dependent: true,
							});
					for (const r of resent) {
						again.push(r);
						for (const k of r.keys) held.add(k);
					}
				}
				return again;
			}
			for (const request of g.requests)
				request.reject(
					isPartial(error)
						? new TTLStorageError(
								"TTLSTORAGE_UNAVAILABLE",
								"another transaction kept taking a key this conditional write found absent; nothing was written",
								{ driver: DRIVER_NAME, operation: request.operation, cause: error },
							)
						: request === first
							? mapped
							: failureError(f, request.operation),
				);
			return [];
		}
		const again: Array<{ request: WriteRequest; scopes: Buffer[] }> = [];
		const held: WriteRequest[] = [];
		const answered = new Set<number>();
		for (const row of rows) {
			const r = Number(row.r);
			const request = g.requests[r];
			if (request === undefined || answered.has(r)) continue;
			answered.add(r);
			if (row.held === true) {
				// Linked, its own part fine, but a request it follows did not write: it goes again.
				held.push(request);
				continue;
			}
			if (row.fenced_ok === true) {
				request.resolve({ ok: row.ok === true });
				continue;
			}
			const stored = new Map<string, bigint>();
			for (const entry of Array.isArray(row.fences) ? (row.fences as unknown[]) : []) {
				const [scope, epoch] = String(entry).split(":");
				stored.set(scope ?? "", BigInt(epoch ?? "0"));
			}
			const missing: Buffer[] = [];
			let fenced: TTLStorageError | undefined;
			for (const [key, fence] of request.fences) {
				const current = stored.get(key);
				if (current === undefined) missing.push(buf(fence.scope));
				else if (current > fence.epoch) {
					fenced = fencedError(DRIVER_NAME, request.operation, fence.epoch, current);
					break;
				}
			}
			if (fenced !== undefined) request.reject(fenced);
			else if (missing.length === 0 || request.tries >= 2)
				request.reject(
					new TTLStorageError(
						"TTLSTORAGE_FAILED",
						`the fence check failed without a superseded epoch (${missing.length} scope rows missing after ${request.tries + 1} tries)`,
						{ driver: DRIVER_NAME, operation: request.operation },
					),
				);
			else {
				request.tries++;
				again.push({ request, scopes: missing });
			}
		}
		g.requests.forEach((request, r) => {
			if (!answered.has(r))
				request.reject(
					new TTLStorageError("TTLSTORAGE_FAILED", "the group statement returned no row for it", {
						driver: DRIVER_NAME,
						operation: request.operation,
					}),
				);
		});
		const resend = new Set<WriteRequest>(held);
		if (handOn !== undefined && again.length === 0) {
			this.#spares.writer = this.#spare(writer);
			handOn(g.requests.filter((request) => resend.has(request)));
			// Not taken (the next group waits for a key, or none waits): back to the pool.
			this.#release(this.#takeSpare("writer"));
			return [];
		}
		this.#release(writer);
		// First writes of a scope: its fence row at epoch 0, then the write goes again.
		for (const { request, scopes } of again) {
			try {
				await this.#query(request.operation, "write", this.#sql.createFences, { scopes });
				resend.add(request);
			} catch (error) {
				request.reject(error);
			}
		}
		// In the group's order: a request linked to another that goes again follows it.
		return g.requests.filter((request) => resend.has(request));
	}

	/**
	 * Puts requests of a group that go again at the head of the queue, in their order, not at its
	 * end: writes of their keys queued meanwhile were called later, and must not overtake them (a
	 * successor conditioned on one of them, as a pipelined PLog write on its predecessor's entry,
	 * would find it absent). Their keys were distinct but for links, so they make one group, or
	 * more where a request cannot be linked again (it then starts the next one). Their keys are
	 * held until the group that carried them finishes; `#pump` then sends these groups first, and
	 * every later group naming one of their keys waits behind them.
	 */
	#requeueFirst(requests: readonly WriteRequest[]): void {
		const groups: WriteGroup[] = [];
		for (const request of requests) {
			const g = groups.at(-1);
			if (g !== undefined && !request.keys.some((k) => g.keys.has(k))) {
				this.#join(g, request);
				continue;
			}
			if (g !== undefined && this.#linkInto(g, request)) continue;
			const next: WriteGroup = { requests: [], keys: new Set(), items: 0, dependent: true };
			this.#join(next, request);
			groups.push(next);
		}
		this.#queue.unshift(...groups);
	}

	/**
	 * The group statement of `requests` (`#send`) on the spare writer or a connection of the pool;
	 * resolves to its rows and that connection, which the caller releases. Sent again when the
	 * server aborted it (a deadlock, a serialization failure, a request it found written in part:
	 * nothing written). Throws a {@link StatementFailure}.
	 */
	async #sendGroup(
		g: WriteGroup,
	): Promise<{ rows: ReadonlyArray<Record<string, unknown>>; client: PgPoolClient }> {
		const { requests, links } = g;
		const r: number[] = [];
		const k: number[] = [];
		const p: Buffer[] = [];
		const c: Buffer[] = [];
		const v: Array<Buffer | null> = [];
		const ex: Array<Buffer | null> = [];
		const ttl: number[] = [];
		const fe: Array<bigint | null> = [];
		const fs: Array<number | null> = [];
		const fr: number[] = [];
		const fsc: Buffer[] = [];
		const fep: bigint[] = [];
		// Links: each linked request and every request it follows, directly or through others.
		const lr: number[] = [];
		const la: number[] = [];
		const index = new Map<WriteRequest, number>();
		const follows = new Map<WriteRequest, Set<number>>();
		requests.forEach((request, i) => {
			index.set(request, i);
			const link = links?.get(request);
			if (link !== undefined) {
				const all = new Set<number>();
				for (const a of link.after) {
					all.add(index.get(a) as number);
					for (const b of follows.get(a) ?? []) all.add(b);
				}
				follows.set(request, all);
				for (const a of all) {
					lr.push(i);
					la.push(a);
				}
			}
			for (const [j, it] of request.items.entries()) {
				if (link?.skip.has(j) === true) continue;
				r.push(i);
				k.push(it.k);
				p.push(it.p);
				c.push(it.c);
				v.push(it.v);
				ex.push(it.ex);
				ttl.push(it.ttl);
				fe.push(it.fe);
				fs.push(it.fs);
			}
			for (const f of request.fences.values()) {
				fr.push(i);
				fsc.push(buf(f.scope));
				fep.push(f.epoch);
			}
		});
		// Puts without links (level 2's writes, the sequencer's) take the leaner statement, which
		// needs neither the kinds nor the expected values nor the links.
		const putsOnly = lr.length === 0 && k.every((kind) => kind === 0);
		// Binary arrays (see binary-arrays.ts): no hex text to build here or to parse there.
		const a: Args = {
			r: int4Array(r),
			p: byteaArray(p),
			c: byteaArray(c),
			v: byteaArray(v),
			ttl: int8Array(ttl),
			fe: int8Array(fe),
			fs: int8Array(fs),
			fr: int4Array(fr),
			fsc: byteaArray(fsc),
			fep: int8Array(fep),
			...(putsOnly
				? {}
				: { k: int4Array(k), ex: byteaArray(ex), lr: int4Array(lr), la: int4Array(la) }),
		};
		const { result, client } = await this.#send(
			putsOnly ? this.#sql.puts : this.#sql.group,
			a,
			"write",
			this.#takeSpare("writer"),
			(error) => isRetryableConflict(error) || isPartial(error),
		);
		return { rows: result.rows, client };
	}

	#takeSpare(lane: "writer" | "reader"): PgPoolClient | undefined {
		const client = this.#spares[lane];
		this.#spares[lane] = undefined;
		return client;
	}

	/**
	 * `client`, which just answered, if it may be handed on to the next waiting statement; else it
	 * goes back to the pool now: when it broke meanwhile (the pool drops it), when someone waits
	 * for a connection of the pool (their turn first), or after `HAND_ON_LIMIT` statements in a row.
	 */
	#spare(client: PgPoolClient): PgPoolClient | undefined {
		const inRow = (this.#handedOn.get(client) ?? 0) + 1;
		if (isBroken(client) || (this.#pool.waitingCount ?? 0) > 0 || inRow > HAND_ON_LIMIT) {
			this.#release(client);
			return undefined;
		}
		this.#handedOn.set(client, inRow);
		return client;
	}

	/** Back to the pool (destroyed with `error`, or when it broke), its run handed on ended. */
	#release(client: PgPoolClient | undefined, error?: Error): void {
		if (client === undefined) return;
		this.#handedOn.delete(client);
		client.release(error ?? (isBroken(client) ? true : undefined));
	}

	/** A single write's item. */
	#item(
		k: ItemKind,
		pKey: Bytes,
		cCols: Bytes,
		value: Bytes | null,
		expected: Bytes | null,
		ttl: number,
		fence: WriteFence | undefined,
	): WriteItem {
		return {
			k,
			p: buf(pKey),
			c: buf(cCols),
			v: value === null ? null : buf(value),
			ex: expected === null ? null : buf(expected),
			ttl,
			fe: fence === undefined ? null : fence.epoch,
			fs: fence === undefined ? null : nextStamp(),
		};
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
		const fence = options?.fence;
		const item = this.#item(1, pKey, cCols, value, null, ttlSeconds, fence);
		return (await this.#submit(operation, [item], fencesOf([fence]))).ok;
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
		const fence = options?.fence;
		const item = this.#item(2, pKey, cCols, newValue, oldValue, ttlSeconds, fence);
		return (await this.#submit("compareAndSwap", [item], fencesOf([fence]))).ok;
	}

	async compareAndDelete(
		pKey: Bytes,
		cCols: Bytes,
		expectedValue: Bytes,
		options?: WriteOptions,
	): Promise<boolean> {
		validateDeleteArgs(pKey, cCols, expectedValue);
		validateWriteOptions(options);
		const fence = options?.fence;
		const item = this.#item(3, pKey, cCols, null, expectedValue, 0, fence);
		return (await this.#submit("compareAndDelete", [item], fencesOf([fence]))).ok;
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		const rows = await this.#read(this.#getKind, { p: buf(pKey), c: buf(cCols) });
		const value = rows[0]?.value;
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
		const item = this.#item(0, pKey, cCols, value, null, ttlSeconds, fence);
		await this.#submit("put", [item], fencesOf([fence]));
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		this.#open("putBatch");
		if (items.length === 0) return;
		// For a key named twice the later item wins, as in a loop of puts; keys go in index order,
		// so two batches lock rows in one order.
		const unique = new Map<string, BatchItem>();
		for (const item of items) {
			const key = keyOf(buf(item.pKey), buf(item.cCols));
			unique.delete(key);
			unique.set(key, item);
		}
		const rows = [...unique.values()]
			.sort((a, b) => compareBytes(a.pKey, b.pKey) || compareBytes(a.cCols, b.cCols))
			.map((it) => this.#item(0, it.pKey, it.cCols, it.value, null, it.ttlSeconds ?? 0, it.fence));
		await this.#submit("putBatch", rows, fencesOf(items.map((it) => it.fence)));
	}

	async putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean> {
		validateConditionalBatch(items);
		const operation = "putBatchIf";
		this.#open(operation);
		if (items.length === 0) return true;
		const rows = items.map((it) =>
			it.expected === undefined
				? this.#item(0, it.pKey, it.cCols, it.value, null, it.ttlSeconds ?? 0, it.fence)
				: this.#item(
						it.expected === null ? 1 : 2,
						it.pKey,
						it.cCols,
						it.value,
						it.expected,
						it.ttlSeconds ?? 0,
						it.fence,
					),
		);
		return (await this.#submit(operation, rows, fencesOf(items.map((it) => it.fence)))).ok;
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
					const rows = await self.#read(self.#readKind(lower, to !== undefined), args);
					let last: Bytes | undefined;
					for (const row of rows) {
						const cCols = row.c_cols;
						const value = row.value;
						if (cCols instanceof Uint8Array && value instanceof Uint8Array) {
							last = own(cCols);
							yield { cCols: last, value: own(value) };
						}
					}
					if (rows.length < page || last === undefined) return;
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
 * Creates the PostgreSQL TTL storage over a caller-owned node-postgres `Pool`. Reads (`get`,
 * pages of `read`) called in one turn of the event loop, or while `readsInFlight` read statements
 * are at the server, go together as one statement (the gets with the pages of one shape); a read
 * called alone is a statement of its own. Writes go by **group commit**: those that arrive while `writesInFlight`
 * statements are at the server go together as one statement (one transaction, one commit), each
 * request all or nothing, with its own answer: its fences and conditions are checked on locked
 * rows in that statement, and a false condition, a superseded fence or a refused request never
 * fails another's (a lost answer is `OUTCOME_UNKNOWN` for all of the group). A caller is answered
 * once its group committed; writes of one key keep call order.
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
