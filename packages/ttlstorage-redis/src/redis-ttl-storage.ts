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
import type { RedisArg, RedisClient } from "./client.ts";
import { checkRedisClient } from "./client.ts";
import type { RedisPhase } from "./errors.ts";
import { DRIVER_NAME, mapRedisError } from "./errors.ts";
import { DEFAULT_KEY_PREFIX, validateRedisKeyPrefix } from "./names.ts";
import type { Script } from "./scripts.ts";
import { GET, QUERY_TTL, RAISE, READ, SWEEP, WRITE } from "./scripts.ts";

/** Options of {@link createRedisTTLStorage}. */
export interface RedisTTLStorageOptions {
	/**
	 * An ioredis `Redis` client (5.4 or later, 6), owned by the caller, created with
	 * {@link REDIS_CLIENT_OPTIONS} (checked: a client that could send a write twice or late is
	 * refused with a `TypeError`). `close()` never quits it.
	 */
	readonly client: RedisClient;
	/** Prefix of every key of this storage; default `"vvm:"` (see `validateRedisKeyPrefix`). */
	readonly keyPrefix?: string;
	/**
	 * After every write, `WAIT replicas timeoutMs`: the write is acknowledged only once that many
	 * replicas have it; with fewer it rejects with `TTLSTORAGE_OUTCOME_UNKNOWN` (applied on the
	 * primary, maybe lost in a failover). Default: no `WAIT`.
	 */
	readonly waitForReplicas?: { readonly replicas: number; readonly timeoutMs: number };
	/**
	 * **Tests only.** Without it (production) every expiry is decided by the server's clock
	 * (`TIME` inside each script). With it, scripts compare expiry with `clock.now()`, sent as an
	 * argument, and the sweep runs on the clock's timers: what the conformance suites' `MockClock`
	 * needs. Every storage over one key prefix must then use the same clock. Only a test clock is
	 * accepted (`isTestClock` of `@vvm/clock`: a `MockClock`); `systemClock` or any other clock is a
	 * `TypeError`, since each client's wall clock would then decide expiry.
	 */
	readonly clock?: Clock;
	/** How often expired records are deleted, in ms; default 60 000; 0 = never (another process sweeps). */
	readonly sweepIntervalMs?: number;
	/** Records deleted per sweep script (a pass repeats it while it fills up); default 500. */
	readonly sweepBatchSize?: number;
	/** Records per page of `read` (one script each); default 500. */
	readonly pageSize?: number;
	/**
	 * Where a failed background sweep is logged (at `error`, with its code); any pino-compatible
	 * logger. Default: silent. The sweep keeps running at its interval.
	 */
	readonly logger?: Logger;
}

/** The Redis driver: a {@link TTLStorage} with fences and `putBatchIf`, plus control over its sweep. */
export interface RedisTTLStorage extends TTLStorage {
	/** See {@link TTLStorage.raiseFence}: one script on the scope's fence. */
	raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint>;
	/** See {@link TTLStorage.putBatchIf}: one script, all or nothing. */
	putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean>;
	/**
	 * Runs one sweep pass now: deletes the records expired at this moment, `sweepBatchSize` per
	 * script, until one deletes fewer. Resolves to the number deleted.
	 */
	sweep(): Promise<number>;
}

const DEFAULT_SWEEP_INTERVAL_MS = 60_000;

/**
 * Items of one `putBatch` or `putBatchIf` at most; a larger batch is a `RangeError` before any
 * I/O. The batch is one script whose keys and arguments (11 per item, plus a fence key per scope)
 * go to the client as the arguments of one call: JavaScript's argument spread overflows the stack
 * at about 120 000, and the script holds the server for all of its items. 5 000 items is at most
 * about 60 000 arguments; the command processor's largest batch (1 000 CUDs, its event and
 * entries) fits with room to spare. Split larger batches (each part then is atomic on its own).
 */
export const MAX_REDIS_BATCH_ITEMS = 5_000;

function checkBatchSize(operation: string, items: readonly unknown[]): void {
	if (items.length > MAX_REDIS_BATCH_ITEMS)
		throw new RangeError(
			`[@vvm/ttlstorage-redis] ${operation} has ${items.length} items; the limit is ${MAX_REDIS_BATCH_ITEMS} (one script each: split the batch)`,
		);
}

function positiveInteger(name: string, value: unknown, zero = false): void {
	if (typeof value !== "number" || !Number.isSafeInteger(value) || value < (zero ? 0 : 1)) {
		throw new RangeError(
			`[@vvm/ttlstorage-redis] ${name} must be an integer ${zero ? ">= 0" : ">= 1"}, got ${String(value)}`,
		);
	}
}

/** Every option of {@link RedisTTLStorageOptions}, checked against it by the compiler: any other key is refused. */
const OPTIONS: { readonly [K in keyof RedisTTLStorageOptions]-?: true } = {
	client: true,
	keyPrefix: true,
	waitForReplicas: true,
	clock: true,
	sweepIntervalMs: true,
	sweepBatchSize: true,
	pageSize: true,
	logger: true,
};

/**
 * Throws a `TypeError` or `RangeError` unless `options` are valid for
 * {@link createRedisTTLStorage}. A key that is not an option (a misspelt `waitForReplica` from a
 * configuration file) is a `TypeError` naming it and the known ones. No I/O: a host checks its configuration with it before it
 * connects (`client` is checked only when present).
 *
 * @example
 * ```ts
 * validateRedisTTLStorageOptions({ keyPrefix: "app1:", sweepIntervalMs: 30_000 });
 * ```
 */
export function validateRedisTTLStorageOptions(options: Partial<RedisTTLStorageOptions>): void {
	if (typeof options !== "object" || options === null)
		throw new TypeError("[@vvm/ttlstorage-redis] options must be an object");
	refuseUnknownOptions("@vvm/ttlstorage-redis", options, OPTIONS);
	if (options.keyPrefix !== undefined) validateRedisKeyPrefix(options.keyPrefix);
	if (options.client !== undefined) checkRedisClient(options.client);
	const clock = options.clock;
	if (
		clock !== undefined &&
		(typeof clock?.now !== "function" || typeof clock.setTimer !== "function")
	)
		throw new TypeError("[@vvm/ttlstorage-redis] clock must be a Clock (now, setTimer)");
	if (clock !== undefined && !isTestClock(clock))
		throw new TypeError(
			"[@vvm/ttlstorage-redis] clock is for tests only and must be a test clock (a MockClock, or one marked with @vvm/clock's TEST_CLOCK): without it expiry is decided by the Redis server's clock (TIME), which is what production needs; with systemClock or another wall clock each client would decide expiry by its own clock, with no bound on the skew between hosts. Leave clock out",
		);
	if (options.sweepIntervalMs !== undefined)
		positiveInteger("sweepIntervalMs", options.sweepIntervalMs, true);
	if (options.sweepBatchSize !== undefined)
		positiveInteger("sweepBatchSize", options.sweepBatchSize);
	if (options.pageSize !== undefined) positiveInteger("pageSize", options.pageSize);
	const logger = options.logger;
	if (logger !== undefined && typeof (logger as Partial<Logger> | null)?.error !== "function")
		throw new TypeError(
			"[@vvm/ttlstorage-redis] logger must be a pino-compatible logger (error, warn, info, debug)",
		);
	const wait = options.waitForReplicas;
	if (wait !== undefined) {
		if (typeof wait !== "object" || wait === null)
			throw new TypeError(
				"[@vvm/ttlstorage-redis] waitForReplicas must be { replicas, timeoutMs }",
			);
		positiveInteger("waitForReplicas.replicas", wait.replicas);
		positiveInteger("waitForReplicas.timeoutMs", wait.timeoutMs);
	}
}

/** A Buffer view of the bytes (no copy). */
const buf = (b: Bytes): Buffer => Buffer.from(b.buffer, b.byteOffset, b.byteLength);
/** An owned copy: results never alias ioredis' buffers. */
const own = (b: Uint8Array): Bytes => new Uint8Array(b);

let lastStamp = 0;
/**
 * The stamp of the next fenced write of this process: microseconds of wall time, always above the
 * previous one, so of two writes under one epoch the later call has the higher stamp (F2), and
 * stamps keep growing across restarts of a process that keeps its epoch. Below 2^53: exact in Lua.
 */
function nextStamp(): string {
	lastStamp = Math.max(lastStamp + 1, Date.now() * 1000);
	return String(lastStamp);
}

const LOW_32 = 0xffff_ffffn;
/** An epoch as two decimal halves (high and low 32 bits): Lua numbers are doubles. */
const halves = (epoch: bigint): [string, string] => [
	(epoch >> 32n).toString(),
	(epoch & LOW_32).toString(),
];
const epochOf = (h: unknown, l: unknown): bigint =>
	(BigInt(String(h ?? "0")) << 32n) | BigInt(String(l ?? "0"));

/** One item of the write script, before its keys are numbered. */
interface WriteItem {
	readonly op: "P" | "I" | "C" | "D";
	readonly pKey: Bytes;
	readonly cCols: Bytes;
	readonly value?: Bytes;
	readonly ttlSeconds?: number;
	readonly fence?: WriteFence;
	readonly expected?: Bytes;
}

const EMPTY = Buffer.alloc(0);

class RedisTTLStorageImpl implements RedisTTLStorage {
	readonly #client: RedisClient;
	readonly #prefix: Buffer;
	readonly #expiryIndex: Buffer;
	readonly #testClock: Clock | undefined;
	readonly #timers: Clock;
	readonly #wait: { readonly replicas: number; readonly timeoutMs: number } | undefined;
	readonly #sweepIntervalMs: number;
	readonly #sweepBatchSize: number;
	readonly #pageSize: number;
	readonly #inFlight = new Set<Promise<unknown>>();
	readonly #log: Logger;
	#timer: TimerHandle | undefined;
	#closed = false;
	#closing: Promise<void> | undefined;
	/** Every write and its fence checks are one Lua script: all or nothing, strict epochs. */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: true,
		fencing: "epoch",
	});

	constructor(options: RedisTTLStorageOptions) {
		validateRedisTTLStorageOptions(options);
		if (options.client === undefined)
			throw new TypeError("[@vvm/ttlstorage-redis] client must be an ioredis Redis client");
		this.#client = options.client;
		this.#prefix = Buffer.from(options.keyPrefix ?? DEFAULT_KEY_PREFIX, "latin1");
		this.#expiryIndex = Buffer.concat([this.#prefix, Buffer.from("x")]);
		this.#testClock = options.clock;
		this.#timers = options.clock ?? systemClock;
		this.#wait = options.waitForReplicas;
		this.#sweepIntervalMs = options.sweepIntervalMs ?? DEFAULT_SWEEP_INTERVAL_MS;
		this.#sweepBatchSize = options.sweepBatchSize ?? 500;
		this.#pageSize = options.pageSize ?? 500;
		this.#log = libraryLogger(options.logger, { pkg: "@vvm/ttlstorage-redis" });
		this.#arm();
	}

	// --- keys -------------------------------------------------------------------------------------

	#partitionKey(pKey: Bytes): Buffer {
		const len = Buffer.alloc(2);
		len.writeUInt16BE(pKey.length);
		return Buffer.concat([this.#prefix, Buffer.from("p"), len, buf(pKey)]);
	}

	#recordKey(partition: Buffer, cCols: Bytes): Buffer {
		return Buffer.concat([partition, Buffer.from("|"), buf(cCols)]);
	}

	#fenceKey(scope: Bytes): Buffer {
		return Buffer.concat([this.#prefix, Buffer.from("f"), buf(scope)]);
	}

	#now(): string {
		return this.#testClock === undefined ? "" : String(Math.floor(this.#testClock.now()));
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

	/**
	 * One script: `EVALSHA`, and `EVAL` with its text after a `NOSCRIPT` reply. That second send is
	 * the only one the driver makes, and it is safe: `NOSCRIPT` is the server's answer that it
	 * does not know the script, so nothing of it ran (a restart or `SCRIPT FLUSH` emptied the
	 * cache); a lost answer of the `EVALSHA` is never followed by an `EVAL`. Nothing is sent unless
	 * the connection is ready (a command sent otherwise would fail or wait in no queue).
	 */
	async #script(
		operation: string,
		phase: RedisPhase,
		s: Script,
		keys: readonly RedisArg[],
		args: readonly RedisArg[],
	): Promise<unknown> {
		this.#open(operation);
		const status = this.#client.status;
		if (status !== "ready")
			throw new TTLStorageError(
				"TTLSTORAGE_UNAVAILABLE",
				`the connection is not ready (ioredis status "${status}"); nothing was sent`,
				{ driver: DRIVER_NAME, operation },
			);
		try {
			try {
				return await this.#send(operation, "EVALSHA", [s.sha, keys.length, ...keys, ...args]);
			} catch (error) {
				if (!isNoScript(error)) throw error;
			}
			if (this.#client.status !== "ready")
				throw new TTLStorageError(
					"TTLSTORAGE_UNAVAILABLE",
					`the server did not know the ${s.name} script and the connection closed since (ioredis status "${this.#client.status}"); nothing ran`,
					{ driver: DRIVER_NAME, operation },
				);
			return await this.#send(operation, "EVAL", [s.text, keys.length, ...keys, ...args]);
		} catch (error) {
			throw mapRedisError(error, { operation, phase });
		}
	}

	/**
	 * Hands one command to the client. ioredis reports every failure of a command it took through
	 * the promise it returns; an error thrown here, synchronously, comes before the command was
	 * taken: building the call (the argument spread of a call too large for the stack, a
	 * `RangeError`) or the client refusing its arguments. Nothing was sent, so it is
	 * `TTLSTORAGE_FAILED` with nothing written, never `OUTCOME_UNKNOWN` (and not `UNAVAILABLE`:
	 * sending the same command again would fail the same way).
	 */
	#send(operation: string, command: string, argv: readonly RedisArg[]): Promise<unknown> {
		try {
			return this.#client.callBuffer(command, ...argv);
		} catch (error) {
			const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
			throw new TTLStorageError(
				"TTLSTORAGE_FAILED",
				`the ${command} could not be handed to the client (${detail}); nothing was sent or written`,
				{ driver: DRIVER_NAME, operation, cause: error },
			);
		}
	}

	/** `WAIT` after a write, when configured: fewer replicas than asked is an unknown outcome. */
	async #replicated(operation: string): Promise<void> {
		const wait = this.#wait;
		if (wait === undefined) return;
		let acked: unknown;
		try {
			acked = await this.#client.callBuffer("WAIT", wait.replicas, wait.timeoutMs);
		} catch (error) {
			const mapped = mapRedisError(error, { operation, phase: "write" });
			throw new TTLStorageError(
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				`the write was applied on the primary, then WAIT failed (${mapped.message})`,
				{ driver: DRIVER_NAME, operation, cause: error },
			);
		}
		if (typeof acked !== "number" || acked < wait.replicas)
			throw new TTLStorageError(
				"TTLSTORAGE_OUTCOME_UNKNOWN",
				`the write was applied on the primary but ${String(acked)} of ${wait.replicas} replicas acknowledged it within ${wait.timeoutMs} ms: a failover may lose it; re-read before deciding`,
				{ driver: DRIVER_NAME, operation },
			);
	}

	/** The write script over `items`: `true` written, `false` a condition failed. */
	#write(operation: string, items: readonly WriteItem[]): Promise<boolean> {
		const fenceKeys: Buffer[] = [];
		const fenceIndex = new Map<string, number>();
		const itemKeys: Buffer[] = [];
		const itemArgs: RedisArg[] = [];
		for (const it of items) {
			let f = 0;
			let h = "";
			let l = "";
			let stamp = "";
			if (it.fence !== undefined) {
				const key = this.#fenceKey(it.fence.scope);
				const id = key.toString("latin1");
				f = fenceIndex.get(id) ?? 0;
				if (f === 0) {
					f = fenceKeys.push(key);
					fenceIndex.set(id, f);
				}
				[h, l] = halves(it.fence.epoch);
				stamp = nextStamp();
			}
			const partition = this.#partitionKey(it.pKey);
			itemKeys.push(partition, this.#recordKey(partition, it.cCols));
			itemArgs.push(
				it.op,
				buf(it.cCols),
				it.value === undefined ? EMPTY : buf(it.value),
				(it.ttlSeconds ?? 0) * 1000,
				f,
				h,
				l,
				stamp,
				it.expected === undefined ? EMPTY : buf(it.expected),
			);
		}
		const keys = [this.#expiryIndex, ...fenceKeys, ...itemKeys];
		const args = [this.#now(), fenceKeys.length, items.length, ...itemArgs];
		return this.#io(operation, async () => {
			const reply = await this.#script(operation, "write", WRITE, keys, args);
			const [status, h, l] = Array.isArray(reply) ? reply : [];
			if (status === 1) {
				await this.#replicated(operation);
				return true;
			}
			if (status === 0) return false;
			if (status === -1) {
				const current = epochOf(h, l);
				const refused = items
					.map((it) => it.fence?.epoch)
					.filter((e): e is bigint => e !== undefined && e < current);
				throw fencedError(DRIVER_NAME, operation, refused[0] ?? current, current);
			}
			throw unexpected(operation, reply);
		});
	}

	// --- sweep ------------------------------------------------------------------------------------

	#arm(): void {
		if (this.#sweepIntervalMs === 0 || this.#closed) return;
		this.#timer = this.#timers.setTimer(
			this.#sweepIntervalMs,
			() => {
				this.#timer = undefined;
				// A failed pass is retried at the next interval; the error reaches no caller, so it is
				// logged (one line per failed pass: at most one per interval).
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
			const reply = await this.#script(
				"sweep",
				"write",
				SWEEP,
				[this.#expiryIndex],
				[this.#now(), this.#sweepBatchSize, this.#prefix.length],
			);
			const [scanned, deleted] = Array.isArray(reply) ? reply : [];
			if (typeof scanned !== "number" || typeof deleted !== "number")
				throw unexpected("sweep", reply);
			total += deleted;
			if (scanned < this.#sweepBatchSize) return total;
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
		const [h, l] = epoch === undefined ? ["", ""] : halves(epoch);
		return this.#io(operation, async () => {
			const reply = await this.#script(
				operation,
				"write",
				RAISE,
				[this.#fenceKey(scope)],
				[this.#now(), h, l],
			);
			const [status, sh, sl] = Array.isArray(reply) ? reply : [];
			const stored = epochOf(sh, sl);
			if (status === 1) {
				await this.#replicated(operation);
				return stored;
			}
			if (status === -1) throw fencedError(DRIVER_NAME, operation, epoch ?? 0n, stored);
			if (status === -2)
				throw new TTLStorageError(
					"TTLSTORAGE_FAILED",
					`the scope's epoch is ${stored}, the largest there is: it cannot be raised by one`,
					{ driver: DRIVER_NAME, operation },
				);
			throw unexpected(operation, reply);
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
		const fence = options?.fence;
		return this.#write("insertIfNotExists", [
			{ op: "I", pKey, cCols, value, ttlSeconds, ...(fence === undefined ? {} : { fence }) },
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
		const fence = options?.fence;
		return this.#write("compareAndSwap", [
			{
				op: "C",
				pKey,
				cCols,
				value: newValue,
				ttlSeconds,
				expected: oldValue,
				...(fence === undefined ? {} : { fence }),
			},
		]);
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
		return this.#write("compareAndDelete", [
			{ op: "D", pKey, cCols, expected: expectedValue, ...(fence === undefined ? {} : { fence }) },
		]);
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		const partition = this.#partitionKey(pKey);
		const reply = await this.#io("get", () =>
			this.#script("get", "read", GET, [this.#recordKey(partition, cCols)], [this.#now()]),
		);
		if (reply === null || reply === undefined) return undefined;
		if (reply instanceof Uint8Array) return own(reply);
		throw unexpected("get", reply);
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
		await this.#write("put", [
			{ op: "P", pKey, cCols, value, ttlSeconds, ...(fence === undefined ? {} : { fence }) },
		]);
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		checkBatchSize("putBatch", items);
		this.#open("putBatch");
		if (items.length === 0) return;
		await this.#write(
			"putBatch",
			items.map((it) => ({ ...it, op: "P" as const })),
		);
	}

	async putBatchIf(items: readonly ConditionalBatchItem[]): Promise<boolean> {
		validateConditionalBatch(items);
		checkBatchSize("putBatchIf", items);
		this.#open("putBatchIf");
		if (items.length === 0) return true;
		return this.#write(
			"putBatchIf",
			items.map((it): WriteItem => {
				const { expected, ...rest } = it;
				if (expected === undefined) return { ...rest, op: "P" };
				if (expected === null) return { ...rest, op: "I" };
				return { ...rest, op: "C", expected };
			}),
		);
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, new Uint8Array());
		validateRange(range.from, range.to);
		const { from, to } = range;
		const empty = from !== undefined && to !== undefined && compareBytes(from, to) >= 0;
		const self = this;
		const page = this.#pageSize;
		const partition = this.#partitionKey(pKey);
		const max = to === undefined ? "+" : Buffer.concat([Buffer.from("("), buf(to)]);
		return {
			async *[Symbol.asyncIterator]() {
				self.#open("read");
				if (empty) return;
				let min: RedisArg = from === undefined ? "-" : Buffer.concat([Buffer.from("["), buf(from)]);
				for (;;) {
					const reply = await self.#io("read", () =>
						self.#script("read", "read", READ, [partition], [self.#now(), min, max, page]),
					);
					const [scanned, last, records] = Array.isArray(reply) ? reply : [];
					if (
						typeof scanned !== "number" ||
						!(last instanceof Uint8Array) ||
						!Array.isArray(records)
					)
						throw unexpected("read", reply);
					for (let i = 0; i + 1 < records.length; i += 2) {
						const cCols = records[i];
						const value = records[i + 1];
						if (cCols instanceof Uint8Array && value instanceof Uint8Array)
							yield { cCols: own(cCols), value: own(value) };
					}
					if (scanned < page) return;
					min = Buffer.concat([Buffer.from("("), last]);
				}
			},
		};
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		const partition = this.#partitionKey(pKey);
		const reply = await this.#io("queryTTL", () =>
			this.#script(
				"queryTTL",
				"read",
				QUERY_TTL,
				[this.#recordKey(partition, cCols)],
				[this.#now()],
			),
		);
		if (reply === null || reply === undefined) return undefined;
		if (typeof reply === "number") return reply;
		throw unexpected("queryTTL", reply);
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

function isNoScript(error: unknown): boolean {
	const message = (error as { message?: unknown } | null)?.message;
	return typeof message === "string" && message.startsWith("NOSCRIPT");
}

function unexpected(operation: string, reply: unknown): TTLStorageError {
	return new TTLStorageError(
		"TTLSTORAGE_FAILED",
		`unexpected reply from the server: ${JSON.stringify(reply)?.slice(0, 200)}`,
		{ driver: DRIVER_NAME, operation },
	);
}

/**
 * Creates the Redis TTL storage over a caller-owned ioredis client. Every operation is one Lua
 * script, which Redis runs atomically (no other command runs between its reads and its writes):
 * the conditional writes, `putBatch` and `putBatchIf` (all or nothing), the fence checks of a
 * write together with it, and every read (its expiry check with it).
 *
 * **Expiry is decided by the server's clock** (`TIME` in each script): a record written with TTL
 * `T` expires at the server's time of its write + `T`; client clocks play no part. A periodic
 * sweep deletes expired records through an expiry index, re-checking each one.
 *
 * **Fenced writes** (`supports.fencing: "epoch"`): `raiseFence` stores the scope's epoch; every
 * fenced write checks it in its own script and, below it, rejects with `TTLSTORAGE_FENCED` and
 * writes nothing. Within one epoch, writes of one record keep call order by a stamp (F2).
 *
 * @example
 * ```ts
 * import { Redis } from "ioredis";
 * const client = new Redis("redis://127.0.0.1:6379", { ...REDIS_CLIENT_OPTIONS, lazyConnect: true });
 * await client.connect();
 * const storage = createRedisTTLStorage({ client });
 * const leader = await storage.insertIfNotExists(pKey, cCols, value, 20);
 * ```
 */
export function createRedisTTLStorage(options: RedisTTLStorageOptions): RedisTTLStorage {
	return new RedisTTLStorageImpl(options);
}
