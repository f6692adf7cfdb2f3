import type { DynamoDBClient, WriteRequest } from "@aws-sdk/client-dynamodb";
import {
	BatchWriteItemCommand,
	DeleteItemCommand,
	GetItemCommand,
	PutItemCommand,
	QueryCommand,
} from "@aws-sdk/client-dynamodb";
import type { Clock } from "@vvm/clock";
import { isTestClock, systemClock } from "@vvm/clock";
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
	expireAtMs,
	isExpired,
	raiseFenceRecord,
	refuseUnknownOptions,
	remainingSeconds,
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
import type { WriteAttempts } from "./error-mapping.ts";
import {
	isConditionFailed,
	isRetryableRefusal,
	isThrottlingError,
	toStorageError,
} from "./error-mapping.ts";
import type { FenceOrder, Item } from "./item.ts";
import {
	ATTR,
	itemCCols,
	itemExpiry,
	itemOf,
	itemValue,
	keyOf,
	nextStamp,
	ORDER_CONDITION,
	recordId,
	sortKey,
} from "./item.ts";
import { validateDynamoTableName } from "./names.ts";
import { guardWrite } from "./write-guard.ts";

const DRIVER_NAME = "dyn";

type AnyCommand =
	| BatchWriteItemCommand
	| DeleteItemCommand
	| GetItemCommand
	| PutItemCommand
	| QueryCommand;
type WriteCommand = BatchWriteItemCommand | DeleteItemCommand | PutItemCommand;
/** What {@link DynamoTTLStorageImpl.#sendWrite} returns for a write whose condition was false. */
const CONDITION_FAILED: unique symbol = Symbol("condition failed");
const BATCH_LIMIT = 25;
/** Conditional PutItems of one fenced batch in flight at once (the SDK's sockets are 50). */
const FENCED_IN_FLIGHT = 16;
const EMPTY = new Uint8Array(0);

/** Options of {@link createDynamoTTLStorage}. */
export interface DynamoTTLStorageOptions {
	/** A ready client; the storage never destroys it. */
	readonly client: DynamoDBClient;
	/** The table, created with {@link ensureDynamoTTLTable}. */
	readonly tableName: string;
	/**
	 * Clock whose `now()` every condition and read compares with the stored expiry; default the
	 * system clock (DynamoDB has no clock a condition can read). **Tests only**: a test clock
	 * (`isTestClock` of `@vvm/clock`: a `MockClock`), or `systemClock` itself (the default); any
	 * other value is a `TypeError` before any I/O.
	 */
	readonly clock?: Clock;
	/**
	 * Seconds added to the expiry in the native TTL attribute, so DynamoDB never reaps an item that
	 * a client with a slightly slow clock still sees as live. Default 3600.
	 */
	readonly reapGraceSeconds?: number;
	/** How long `putBatch` retries `UnprocessedItems` before rejecting, in ms. Default 10 000. */
	readonly batchDeadlineMs?: number;
	/**
	 * Real-time limit of one operation's request, retries included, in ms (a monotonic deadline).
	 * On expiry a read rejects with `TTLSTORAGE_UNAVAILABLE`; a write with
	 * `TTLSTORAGE_OUTCOME_UNKNOWN` if an attempt was sent and may have been applied, else with the
	 * code of the refusals (`TTLSTORAGE_THROTTLED`, `TTLSTORAGE_UNAVAILABLE`: nothing written).
	 * Default 5000; `0` leaves it to the client's own configuration.
	 */
	readonly requestTimeoutMs?: number;
}

/** Every option of {@link DynamoTTLStorageOptions}, checked against it by the compiler: any other key is refused. */
const OPTIONS: { readonly [K in keyof DynamoTTLStorageOptions]-?: true } = {
	client: true,
	tableName: true,
	clock: true,
	reapGraceSeconds: true,
	batchDeadlineMs: true,
	requestTimeoutMs: true,
};

/** The v2 retry strategy interface of the AWS SDK (`StandardRetryStrategy`, `ConfiguredRetryStrategy`). */
interface RetryToken {
	getRetryCount(): number;
	getRetryDelay(): number;
}
interface RetryStrategyV2 {
	acquireInitialRetryToken(scope: string): Promise<RetryToken>;
	refreshRetryTokenForRetry(
		token: RetryToken,
		info: { error: unknown; errorType: string },
	): Promise<RetryToken>;
	recordSuccess(token: RetryToken): void;
}
function isRetryStrategyV2(s: unknown): s is RetryStrategyV2 {
	const r = s as Partial<RetryStrategyV2> | null | undefined;
	return (
		typeof r?.acquireInitialRetryToken === "function" &&
		typeof r.refreshRetryTokenForRetry === "function" &&
		typeof r.recordSuccess === "function"
	);
}

/** Resolves to `value`, or to `undefined` once the monotonic `deadline` (ms) has passed. */
function beforeDeadline<T>(value: Promise<T>, deadline: number): Promise<T | undefined> {
	if (deadline === Number.POSITIVE_INFINITY) return value;
	let timer: ReturnType<typeof setTimeout> | undefined;
	return Promise.race([
		value,
		new Promise<undefined>((resolve) => {
			timer = setTimeout(() => resolve(undefined), Math.max(0, deadline - performance.now()));
		}),
	]).finally(() => clearTimeout(timer));
}

function checkNonNegativeInteger(name: string, n: unknown): void {
	if (typeof n !== "number" || !Number.isInteger(n) || n < 0) {
		throw new RangeError(
			`[@vvm/ttlstorage-dyn] ${name} must be a non-negative integer, got ${String(n)}`,
		);
	}
}

const realSleep = (ms: number): Promise<void> =>
	new Promise((resolve) => {
		setTimeout(resolve, ms);
	});

class DynamoTTLStorageImpl implements TTLStorage {
	readonly #client: DynamoDBClient;
	readonly #table: string;
	/**
	 * Wall time on purpose: an item's expiry is written by one host and compared in conditions
	 * with the wall clock of whichever host writes next, so every host's clock counts; two leaders
	 * cannot overlap only while the hosts' clocks stay within the skew bound of the elections.
	 */
	readonly #clock: Clock;
	readonly #grace: number;
	readonly #batchDeadlineMs: number;
	readonly #requestTimeoutMs: number;
	readonly #inFlight = new Set<Promise<unknown>>();
	#closed = false;
	#closing: Promise<void> | undefined;
	/** BatchWriteItem is not atomic; fenced writes are conditional on the stored (epoch, stamp). */
	readonly supports: TTLStorageSupports = Object.freeze({
		atomicBatches: false,
		fencing: "ordered",
	});

	constructor(options: DynamoTTLStorageOptions) {
		if (typeof options !== "object" || options === null) {
			throw new TypeError("[@vvm/ttlstorage-dyn] options must be an object");
		}
		refuseUnknownOptions("@vvm/ttlstorage-dyn", options, OPTIONS);
		const clock = options.clock;
		if (clock !== undefined && clock !== systemClock && !isTestClock(clock)) {
			throw new TypeError(
				"[@vvm/ttlstorage-dyn] clock is for tests only and must be a test clock (a MockClock, or one marked with @vvm/clock's TEST_CLOCK) or systemClock, the default: every condition and read compares the stored expiry with it, and with any other clock each client would decide expiry by a clock of its own. Leave clock out",
			);
		}
		const client = options.client;
		if (client === null || typeof client !== "object" || typeof client.send !== "function") {
			throw new TypeError("[@vvm/ttlstorage-dyn] client must be a DynamoDBClient");
		}
		validateDynamoTableName(options.tableName);
		this.#client = client;
		this.#table = options.tableName;
		this.#clock = clock ?? systemClock;
		this.#grace = options.reapGraceSeconds ?? 3600;
		this.#batchDeadlineMs = options.batchDeadlineMs ?? 10_000;
		this.#requestTimeoutMs = options.requestTimeoutMs ?? 5_000;
		checkNonNegativeInteger("reapGraceSeconds", this.#grace);
		checkNonNegativeInteger("batchDeadlineMs", this.#batchDeadlineMs);
		checkNonNegativeInteger("requestTimeoutMs", this.#requestTimeoutMs);
	}

	// --- plumbing -------------------------------------------------------------------------------

	/** Runs storage I/O: rejects once closed, and lets close() wait for it. */
	async #io<T>(operation: string, fn: () => Promise<T>): Promise<T> {
		if (this.#closed) throw closedError(DRIVER_NAME, operation);
		const run = fn();
		this.#inFlight.add(run);
		try {
			return await run;
		} finally {
			this.#inFlight.delete(run);
		}
	}

	/** The monotonic deadline (`performance.now()` ms) of a request starting now. */
	#deadline(): number {
		return this.#requestTimeoutMs > 0
			? performance.now() + this.#requestTimeoutMs
			: Number.POSITIVE_INFINITY;
	}

	/** The abort signal of a request that must end by `deadline`. */
	static #signal(deadline: number): AbortSignal | undefined {
		return deadline === Number.POSITIVE_INFINITY
			? undefined
			: AbortSignal.timeout(Math.max(0, Math.ceil(deadline - performance.now())));
	}

	/** `client.send` with the request timeout; `T` is the command's output shape we read. */
	#send<T = unknown>(
		command: AnyCommand,
		signal = DynamoTTLStorageImpl.#signal(this.#deadline()),
	): Promise<T> {
		const options = signal === undefined ? {} : { abortSignal: signal };
		// `send` is overloaded per command class; one untyped call site keeps the rest readable.
		const send = this.#client.send as (c: AnyCommand, o: object) => Promise<unknown>;
		return send.call(this.#client, command, options) as Promise<T>;
	}

	/**
	 * One write request, sent through {@link guardWrite}: the SDK may send it again only after an
	 * attempt that provably wrote nothing (a 4xx answer, a connection never opened), never after
	 * one that may have been applied, whatever the client's `maxAttempts` or `retryStrategy`.
	 *
	 * `build(now)` makes the command for the clock's `now`. A write whose condition compares the
	 * stored expiry with `now` (`freshNow`) is never re-sent by the SDK, which would send the
	 * request built at the first attempt, with that attempt's now, however late (found by review:
	 * a renewal throttled once and re-sent after the lease expired renewed it, although a `get` in
	 * between had seen it expire). The driver re-sends it itself after a refusal (throttling, a
	 * connection never opened), rebuilt with a fresh now, paced by the client's retry strategy
	 * (`maxAttempts` included) and within `requestTimeoutMs`: a refused attempt wrote nothing.
	 *
	 * Resolves to the output, or to {@link CONDITION_FAILED} when `conditional` and DynamoDB
	 * answered that the condition was false (then nothing was written: every earlier attempt
	 * provably wrote nothing either). Every other failure rejects with the contract's error: a
	 * lost answer is `TTLSTORAGE_OUTCOME_UNKNOWN`, never "nothing written"; refusals until the
	 * deadline are `TTLSTORAGE_THROTTLED` or `TTLSTORAGE_UNAVAILABLE`, never unknown.
	 */
	async #sendWrite<T = unknown>(
		operation: string,
		build: (now: number) => WriteCommand,
		options: { readonly conditional: boolean; readonly freshNow: boolean },
	): Promise<T | typeof CONDITION_FAILED> {
		const attempts: WriteAttempts = { maybeApplied: undefined, refused: undefined };
		const deadline = this.#deadline();
		const fail = (error: unknown) => toStorageError(error, operation, "write", attempts);
		// DynamoDB answered that the condition was false (the guard keeps the refusal; a client
		// whose `send` skips the middleware stack throws it as is).
		const conditionFailed = (error: unknown, refusal: unknown): boolean =>
			options.conditional &&
			attempts.maybeApplied === undefined &&
			(isConditionFailed(error) || isConditionFailed(refusal));
		if (!options.freshNow) {
			const command = build(this.#clock.now());
			const signal = DynamoTTLStorageImpl.#signal(deadline);
			guardWrite(command, attempts, { resendAfterRefusal: true, signal });
			try {
				return await this.#send<T>(command, signal);
			} catch (error) {
				if (conditionFailed(error, attempts.refused?.error)) return CONDITION_FAILED;
				throw fail(error);
			}
		}
		const retry = await this.#retryPlan();
		for (;;) {
			const before = attempts.refused;
			const command = build(this.#clock.now());
			const signal = DynamoTTLStorageImpl.#signal(deadline);
			guardWrite(command, attempts, { resendAfterRefusal: false, signal });
			try {
				const out = await this.#send<T>(command, signal);
				retry.succeeded();
				return out;
			} catch (error) {
				// This command's refusal (not an earlier command's: it may have been aborted unsent).
				const refusal = attempts.refused === before ? undefined : attempts.refused?.error;
				if (conditionFailed(error, refusal)) return CONDITION_FAILED;
				if (
					attempts.maybeApplied !== undefined ||
					refusal === undefined ||
					!isRetryableRefusal(refusal) ||
					this.#closed
				) {
					throw fail(error);
				}
				if (!(await retry.wait(refusal, deadline))) throw fail(error);
			}
		}
	}

	/**
	 * How {@link #sendWrite} paces its own re-sends: with the client's retry strategy (its
	 * `maxAttempts`, its backoff) when it is a v2 strategy, as the SDK would; otherwise the SDK's
	 * default backoff up to the client's `maxAttempts`. `wait` resolves `false` when the strategy
	 * gives up or the deadline comes first.
	 */
	async #retryPlan(): Promise<{
		wait(refusal: unknown, deadline: number): Promise<boolean>;
		succeeded(): void;
	}> {
		const config = (this.#client as unknown as { config?: Record<string, unknown> }).config ?? {};
		const provide = async (name: string): Promise<unknown> => {
			const value = config[name];
			return typeof value === "function" ? await (value as () => unknown)() : value;
		};
		const errorType = (refusal: unknown) =>
			isThrottlingError(refusal) ? "THROTTLING" : "TRANSIENT";
		const strategy = await provide("retryStrategy").catch(() => undefined);
		if (isRetryStrategyV2(strategy)) {
			let token: RetryToken | undefined = await strategy.acquireInitialRetryToken("");
			return {
				wait: async (refusal, deadline) => {
					const current = token;
					if (current === undefined) return false;
					// The standard strategy waits inside `refreshRetryTokenForRetry`; others return a delay.
					const next = await beforeDeadline(
						strategy
							.refreshRetryTokenForRetry(current, { error: refusal, errorType: errorType(refusal) })
							.catch(() => undefined),
						deadline,
					);
					token = next;
					if (next === undefined) return false;
					const delay = next.getRetryDelay();
					if (performance.now() + delay >= deadline) return false;
					if (delay > 0) await realSleep(delay);
					return true;
				},
				succeeded: () => {
					if (token !== undefined) strategy.recordSuccess(token);
				},
			};
		}
		const maxAttempts = Number(await provide("maxAttempts").catch(() => 3)) || 3;
		let attempt = 1;
		return {
			wait: async (refusal, deadline) => {
				if (attempt >= maxAttempts) return false;
				const base = errorType(refusal) === "THROTTLING" ? 500 : 100;
				const delay = Math.floor(Math.random() * Math.min(20_000, base * 2 ** attempt));
				attempt++;
				if (performance.now() + delay >= deadline) return false;
				await realSleep(delay);
				return true;
			},
			succeeded: () => {},
		};
	}

	/** One conditional write: `false` when DynamoDB answered that its condition was false. */
	#conditional(
		operation: string,
		build: (now: number) => PutItemCommand | DeleteItemCommand,
	): Promise<boolean> {
		return this.#io(operation, async () => {
			const out = await this.#sendWrite(operation, build, { conditional: true, freshNow: true });
			return out !== CONDITION_FAILED;
		});
	}

	async #getItem(operation: string, pKey: Bytes, cCols: Bytes): Promise<Item | undefined> {
		return this.#io(operation, async () => {
			try {
				const out = await this.#send<{ Item?: Item }>(
					new GetItemCommand({
						TableName: this.#table,
						Key: keyOf(pKey, cCols),
						ConsistentRead: true,
						ProjectionExpression: "#v, #exp",
						ExpressionAttributeNames: { "#v": ATTR.v, "#exp": ATTR.exp },
					}),
				);
				return out.Item;
			} catch (error) {
				throw toStorageError(error, operation, "read");
			}
		});
	}

	// --- fencing --------------------------------------------------------------------------------

	/** The (epoch, stamp) a write under `fence` stores; `undefined` for an unfenced write. */
	static #order(fence: WriteFence | undefined): FenceOrder | undefined {
		return fence === undefined ? undefined : { epoch: fence.epoch, stamp: nextStamp() };
	}

	/** Names and values of {@link ORDER_CONDITION}. */
	static #orderTerms(
		order: FenceOrder,
		now: number,
	): { names: Record<string, string>; values: Item } {
		return {
			names: { "#fe": ATTR.fe, "#fs": ATTR.fs, "#exp": ATTR.exp },
			values: {
				":fe": { N: order.epoch.toString() },
				":fs": { N: String(order.stamp) },
				":zero": { N: "0" },
				":now": { N: String(now) },
			} as Item,
		};
	}

	async raiseFence(scope: Bytes, epoch?: bigint): Promise<bigint> {
		validateFenceScope(scope);
		if (epoch !== undefined) validateFenceEpoch(epoch);
		return raiseFenceRecord(this, DRIVER_NAME, scope, epoch);
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
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		return this.#conditional(
			"insertIfNotExists",
			(now) =>
				new PutItemCommand({
					TableName: this.#table,
					Item: itemOf(pKey, cCols, value, expireAtMs(now, ttlSeconds), this.#grace, order),
					// Absent, or present but expired by our clock (DynamoDB may take days to reap it).
					ConditionExpression: "attribute_not_exists(#pk) OR (#exp > :zero AND #exp <= :now)",
					ExpressionAttributeNames: { "#pk": ATTR.pk, "#exp": ATTR.exp },
					ExpressionAttributeValues: { ":zero": { N: "0" }, ":now": { N: String(now) } },
				}),
		);
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
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		const fenced = DynamoTTLStorageImpl.#fencedCondition(order);
		return this.#conditional(
			"compareAndSwap",
			(now) =>
				new PutItemCommand({
					TableName: this.#table,
					// A full replace: a swap to ttl 0 also drops the native TTL attribute.
					Item: itemOf(pKey, cCols, newValue, expireAtMs(now, ttlSeconds), this.#grace, order),
					ConditionExpression: `#v = :old AND (#exp = :zero OR #exp > :now)${fenced.condition}`,
					ExpressionAttributeNames: { "#v": ATTR.v, "#exp": ATTR.exp, ...fenced.names },
					ExpressionAttributeValues: {
						":old": { B: oldValue },
						":zero": { N: "0" },
						":now": { N: String(now) },
						...fenced.values,
					},
				}),
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
		const fenced = DynamoTTLStorageImpl.#fencedCondition(
			DynamoTTLStorageImpl.#order(options?.fence),
		);
		return this.#conditional(
			"compareAndDelete",
			(now) =>
				new DeleteItemCommand({
					TableName: this.#table,
					Key: keyOf(pKey, cCols),
					ConditionExpression: `#v = :old AND (#exp = :zero OR #exp > :now)${fenced.condition}`,
					ExpressionAttributeNames: { "#v": ATTR.v, "#exp": ATTR.exp, ...fenced.names },
					ExpressionAttributeValues: {
						":old": { B: expectedValue },
						":zero": { N: "0" },
						":now": { N: String(now) },
						...fenced.values,
					},
				}),
		);
	}

	/** For a swap or delete of a live record: it must not be newer than the fenced write. */
	static #fencedCondition(order: FenceOrder | undefined): {
		condition: string;
		names: Record<string, string>;
		values: Item;
	} {
		if (order === undefined) return { condition: "", names: {}, values: {} };
		const { values } = DynamoTTLStorageImpl.#orderTerms(order, 0);
		return {
			condition: " AND (attribute_not_exists(#fe) OR #fe < :fe OR (#fe = :fe AND #fs <= :fs))",
			names: { "#fe": ATTR.fe, "#fs": ATTR.fs },
			values: { ":fe": values[":fe"], ":fs": values[":fs"] } as Item,
		};
	}

	async get(pKey: Bytes, cCols: Bytes): Promise<Bytes | undefined> {
		validateKey(pKey, cCols);
		const item = await this.#getItem("get", pKey, cCols);
		if (item === undefined || isExpired(itemExpiry(item), this.#clock.now())) return undefined;
		return itemValue(item);
	}

	async queryTTL(pKey: Bytes, cCols: Bytes): Promise<number | undefined> {
		validateKey(pKey, cCols);
		const item = await this.#getItem("queryTTL", pKey, cCols);
		return item === undefined ? undefined : remainingSeconds(itemExpiry(item), this.#clock.now());
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
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		const item = (now: number) =>
			itemOf(pKey, cCols, value, expireAtMs(now, ttlSeconds), this.#grace, order);
		await this.#io("put", () => this.#putOrdered("put", item, order));
	}

	/**
	 * One PutItem of `item(now)`, conditional on the stored (epoch, stamp) when fenced: a newer one
	 * stored means this write is superseded and has no effect (F1), which is no error. A fenced
	 * put's condition also takes an expired record (`:now`), so it is rebuilt for each attempt.
	 * Other errors reject with the contract's error.
	 */
	async #putOrdered(
		operation: string,
		item: (now: number) => Item,
		order: FenceOrder | undefined,
	): Promise<void> {
		const fenced = order !== undefined;
		await this.#sendWrite(
			operation,
			(now) =>
				new PutItemCommand({
					TableName: this.#table,
					Item: item(now),
					...this.#ordered(order, now),
				}),
			{ conditional: fenced, freshNow: fenced },
		);
	}

	/** The condition of a fenced unconditional write; nothing for an unfenced one. */
	#ordered(order: FenceOrder | undefined, now: number) {
		if (order === undefined) return {};
		const { names, values } = DynamoTTLStorageImpl.#orderTerms(order, now);
		return {
			ConditionExpression: ORDER_CONDITION,
			ExpressionAttributeNames: names,
			ExpressionAttributeValues: values,
		};
	}

	async putBatch(items: readonly BatchItem[]): Promise<void> {
		validateBatch(items);
		const now = this.#clock.now();
		// One request must not name a key twice; the last item for a key wins, as in a loop of puts.
		const unique = new Map<
			string,
			{ item: (now: number) => Item; order: FenceOrder | undefined }
		>();
		for (const it of items) {
			const order = DynamoTTLStorageImpl.#order(it.fence);
			const item = (at: number) =>
				itemOf(it.pKey, it.cCols, it.value, expireAtMs(at, it.ttlSeconds ?? 0), this.#grace, order);
			const id = recordId(it.pKey, it.cCols);
			unique.delete(id); // keep call order: a re-written key moves to the end
			unique.set(id, { item, order });
		}
		const plain: WriteRequest[] = [];
		// Fenced items are conditional on `:now` too: built for each attempt's now.
		const fenced: Array<{ item: (now: number) => Item; order: FenceOrder }> = [];
		for (const u of unique.values()) {
			if (u.order === undefined) plain.push({ PutRequest: { Item: u.item(now) } });
			else fenced.push({ item: u.item, order: u.order });
		}
		await this.#io("putBatch", async () => {
			const deadline = performance.now() + this.#batchDeadlineMs;
			const progress = { wrote: false };
			try {
				for (let i = 0; i < plain.length; i += BATCH_LIMIT) {
					await this.#writeChunk(plain.slice(i, i + BATCH_LIMIT), deadline, progress);
				}
				if (fenced.length > 0) await this.#writeFenced(fenced, progress);
			} catch (error) {
				throw DynamoTTLStorageImpl.#afterPartialWrite(error, progress.wrote);
			}
		});
	}

	/**
	 * A batch failure once some of its items were written: "nothing was written"
	 * (`TTLSTORAGE_UNAVAILABLE`, `TTLSTORAGE_THROTTLED`) would be false, so it is
	 * `TTLSTORAGE_OUTCOME_UNKNOWN` (part of the batch may be stored).
	 */
	static #afterPartialWrite(error: unknown, wrote: boolean): unknown {
		if (!wrote || !TTLStorageError.is(error)) return error;
		if (error.code !== "TTLSTORAGE_UNAVAILABLE" && error.code !== "TTLSTORAGE_THROTTLED") {
			return error;
		}
		return new TTLStorageError(
			"TTLSTORAGE_OUTCOME_UNKNOWN",
			`${error.code} after some items of the batch were written; the rest may still be applied later (see OUTCOME_UNKNOWN in the README)`,
			{ cause: error, driver: DRIVER_NAME, operation: "putBatch" },
		);
	}

	/**
	 * Fenced items as conditional PutItems, up to {@link FENCED_IN_FLIGHT} at once: each is
	 * conditional on the stored (epoch, stamp), and one whose condition fails is superseded (no
	 * effect, F1). Not TransactWriteItems: the batch need not be atomic (`atomicBatches: false`),
	 * and a transaction costs twice the write units and, on DynamoDB Local, several times the time
	 * of the same puts in parallel. The first other error rejects the batch once the puts already
	 * sent have settled (some may have landed, as with BatchWriteItem).
	 */
	async #writeFenced(
		items: ReadonlyArray<{ item: (now: number) => Item; order: FenceOrder }>,
		progress: { wrote: boolean },
	): Promise<void> {
		let next = 0;
		let failure: { error: unknown } | undefined;
		const worker = async (): Promise<void> => {
			while (failure === undefined && next < items.length) {
				const { item, order } = items[next++] as (typeof items)[number];
				try {
					await this.#putOrdered("putBatch", item, order);
					progress.wrote = true;
				} catch (error) {
					failure ??= { error };
				}
			}
		};
		await Promise.all(
			Array.from({ length: Math.min(FENCED_IN_FLIGHT, items.length) }, () => worker()),
		);
		if (failure !== undefined) throw failure.error;
	}

	/**
	 * One BatchWriteItem, retrying `UnprocessedItems` (DynamoDB says they were not written) with
	 * jittered exponential backoff. The request itself is never re-sent after an attempt that may
	 * have been applied (a plain put's resend could undo a later write).
	 */
	async #writeChunk(
		chunk: WriteRequest[],
		deadline: number,
		progress: { wrote: boolean },
	): Promise<void> {
		let pending = chunk;
		for (let attempt = 0; ; attempt++) {
			const out = (await this.#sendWrite<{ UnprocessedItems?: Record<string, WriteRequest[]> }>(
				"putBatch",
				() => new BatchWriteItemCommand({ RequestItems: { [this.#table]: pending } }),
				{ conditional: false, freshNow: false },
			)) as { UnprocessedItems?: Record<string, WriteRequest[]> };
			const unprocessed = out.UnprocessedItems?.[this.#table] ?? [];
			if (unprocessed.length < pending.length) progress.wrote = true;
			pending = unprocessed;
			if (pending.length === 0) return;
			// Backoff in real time: it paces the server, whatever clock expiry is compared with.
			const delay = Math.min(2_000, 25 * 2 ** attempt) * (0.5 + Math.random() / 2);
			if (this.#closed || performance.now() + delay > deadline) {
				throw new TTLStorageError(
					this.#closed ? "TTLSTORAGE_CLOSED" : "TTLSTORAGE_UNAVAILABLE",
					`${pending.length} items still unprocessed after ${attempt + 1} BatchWriteItem attempts`,
					{ driver: DRIVER_NAME, operation: "putBatch" },
				);
			}
			await realSleep(delay);
		}
	}

	read(pKey: Bytes, range: ReadRange = {}): AsyncIterable<StoredRecord> {
		validateKey(pKey, EMPTY);
		validateRange(range.from, range.to);
		const { from, to } = range;
		const names = { "#pk": ATTR.pk, "#ck": ATTR.ck, "#v": ATTR.v, "#exp": ATTR.exp };
		const values: Item = { ":pk": { B: pKey }, ":zero": { N: "0" } };
		let keyCondition = "#pk = :pk";
		if (from !== undefined) values[":from"] = { B: sortKey(from) };
		if (to !== undefined) values[":to"] = { B: sortKey(to) };
		// Key conditions allow one comparison on the sort key: `to` alone is exclusive with `<`;
		// with both bounds BETWEEN includes `to`, which is dropped below.
		if (from !== undefined && to !== undefined) keyCondition += " AND #ck BETWEEN :from AND :to";
		else if (from !== undefined) keyCondition += " AND #ck >= :from";
		else if (to !== undefined) keyCondition += " AND #ck < :to";
		const empty = from !== undefined && to !== undefined && compareBytes(from, to) >= 0;
		const self = this;
		return {
			async *[Symbol.asyncIterator](): AsyncGenerator<StoredRecord> {
				let startKey: Item | undefined;
				do {
					const page = await self.#io("read", async () => {
						const now = self.#clock.now();
						if (empty) return { items: [], next: undefined, now };
						try {
							const out = await self.#send<{ Items?: Item[]; LastEvaluatedKey?: Item }>(
								new QueryCommand({
									TableName: self.#table,
									KeyConditionExpression: keyCondition,
									// Saves bandwidth; the clock check below is what decides.
									FilterExpression: "#exp = :zero OR #exp > :now",
									ProjectionExpression: "#ck, #v, #exp",
									ExpressionAttributeNames: names,
									ExpressionAttributeValues: { ...values, ":now": { N: String(now) } },
									ConsistentRead: true,
									...(startKey === undefined ? {} : { ExclusiveStartKey: startKey }),
								}),
							);
							return { items: out.Items ?? [], next: out.LastEvaluatedKey, now };
						} catch (error) {
							throw toStorageError(error, "read", "read");
						}
					});
					for (const item of page.items) {
						if (isExpired(itemExpiry(item), page.now)) continue;
						const cCols = itemCCols(item);
						if (to !== undefined && compareBytes(cCols, to) >= 0) continue;
						yield { cCols, value: itemValue(item) };
					}
					startKey = page.next;
				} while (startKey !== undefined);
			},
		};
	}

	// --- lifecycle ------------------------------------------------------------------------------

	close(): Promise<void> {
		if (this.#closing !== undefined) return this.#closing;
		this.#closed = true;
		this.#closing = Promise.allSettled([...this.#inFlight]).then(() => undefined);
		return this.#closing;
	}

	[Symbol.asyncDispose](): Promise<void> {
		return this.close();
	}
}

/**
 * Creates the DynamoDB TTL storage. Every conditional operation is one conditional write whose
 * `ConditionExpression` also compares the stored expiry (`exp`, ms) with the clock's now, so an
 * expired item counts as absent at once, however late DynamoDB reaps it. Reads are strongly
 * consistent and filter expired items. Create the table first with {@link ensureDynamoTTLTable}.
 *
 * Fenced writes (`supports.fencing: "ordered"`) store the writer's epoch and a stamp that grows
 * per process, and are conditional on the stored pair being older: a deposed writer's late put is
 * refused (and resolves: it is superseded), whenever it arrives. A fenced `putBatch`'s fenced items
 * go out as conditional PutItems, 16 at a time, instead of BatchWriteItem.
 *
 * No write is sent twice: each write command carries a guard that lets the client's retry
 * strategy send it again only after an attempt DynamoDB refused (4xx) or a connection never
 * opened, so the client needs no special retry configuration; reads are retried as configured. A
 * write whose condition compares the clock's now is re-sent by the driver instead, rebuilt with a
 * fresh now, paced by the client's retry strategy within `requestTimeoutMs`. A
 * write whose answer was lost (timeout, reset, 5xx) rejects with `TTLSTORAGE_OUTCOME_UNKNOWN`;
 * `TTLSTORAGE_UNAVAILABLE` means the request provably never reached DynamoDB.
 *
 * @example
 * ```ts
 * import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
 * import { createDynamoTTLStorage, DYNAMO_CLIENT_OPTIONS, ensureDynamoTTLTable } from "@vvm/ttlstorage-dyn";
 * const client = new DynamoDBClient({ region: "eu-west-1", ...DYNAMO_CLIENT_OPTIONS });
 * await ensureDynamoTTLTable(client, "sysvvm");
 * const storage = createDynamoTTLStorage({ client, tableName: "sysvvm" });
 * await storage.insertIfNotExists(pKey, cCols, value, 20);
 * ```
 */
export function createDynamoTTLStorage(options: DynamoTTLStorageOptions): TTLStorage {
	return new DynamoTTLStorageImpl(options);
}
