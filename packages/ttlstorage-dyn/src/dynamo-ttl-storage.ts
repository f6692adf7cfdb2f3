import type { DynamoDBClient, WriteRequest } from "@aws-sdk/client-dynamodb";
import {
	BatchWriteItemCommand,
	DeleteItemCommand,
	GetItemCommand,
	PutItemCommand,
	QueryCommand,
} from "@aws-sdk/client-dynamodb";
import type { Clock } from "@vvm/clock";
import { systemClock } from "@vvm/clock";
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
import { isConditionFailed, toStorageError } from "./error-mapping.ts";
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
	 * system clock. Tests pass a `MockClock`.
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
	 * Real-time limit of one request (SDK retries of a read included), in ms; on expiry a write
	 * (conditional or not, fenced or not) rejects with `TTLSTORAGE_OUTCOME_UNKNOWN`, a read with
	 * `TTLSTORAGE_UNAVAILABLE`. Default 5000; `0` leaves it to the client's own configuration.
	 */
	readonly requestTimeoutMs?: number;
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
		const client = options.client;
		if (client === null || typeof client !== "object" || typeof client.send !== "function") {
			throw new TypeError("[@vvm/ttlstorage-dyn] client must be a DynamoDBClient");
		}
		validateDynamoTableName(options.tableName);
		this.#client = client;
		this.#table = options.tableName;
		this.#clock = options.clock ?? systemClock;
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

	/** `client.send` with the request timeout; `T` is the command's output shape we read. */
	#send<T = unknown>(command: AnyCommand): Promise<T> {
		const options =
			this.#requestTimeoutMs > 0
				? { abortSignal: AbortSignal.timeout(this.#requestTimeoutMs) }
				: {};
		// `send` is overloaded per command class; one untyped call site keeps the rest readable.
		const send = this.#client.send as (c: AnyCommand, o: object) => Promise<unknown>;
		return send.call(this.#client, command, options) as Promise<T>;
	}

	/**
	 * One write request, sent through {@link guardWrite}: the SDK may send it again only after an
	 * attempt that provably wrote nothing (a 4xx answer, a connection never opened), never after
	 * one that may have been applied, whatever the client's `maxAttempts` or `retryStrategy`.
	 * Resolves to the output, or to {@link CONDITION_FAILED} when `conditional` and DynamoDB
	 * answered that the condition was false (then nothing was written: every earlier attempt
	 * provably wrote nothing either). Every other failure rejects with the contract's error: a
	 * lost answer is `TTLSTORAGE_OUTCOME_UNKNOWN`, never "nothing written".
	 */
	async #sendWrite<T = unknown>(
		operation: string,
		command: WriteCommand,
		conditional: boolean,
	): Promise<T | typeof CONDITION_FAILED> {
		const attempts = guardWrite(command);
		try {
			return await this.#send<T>(command);
		} catch (error) {
			if (conditional && attempts.maybeApplied === undefined && isConditionFailed(error)) {
				return CONDITION_FAILED;
			}
			throw toStorageError(error, operation, "write", attempts);
		}
	}

	/** One conditional write: `false` when DynamoDB answered that its condition was false. */
	#conditional(operation: string, command: PutItemCommand | DeleteItemCommand): Promise<boolean> {
		return this.#io(operation, async () => {
			const out = await this.#sendWrite(operation, command, true);
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
		const now = this.#clock.now();
		const expireAt = expireAtMs(now, ttlSeconds);
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		return this.#conditional(
			"insertIfNotExists",
			new PutItemCommand({
				TableName: this.#table,
				Item: itemOf(pKey, cCols, value, expireAt, this.#grace, order),
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
		const now = this.#clock.now();
		const expireAt = expireAtMs(now, ttlSeconds);
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		const fenced = DynamoTTLStorageImpl.#fencedCondition(order, now);
		return this.#conditional(
			"compareAndSwap",
			new PutItemCommand({
				TableName: this.#table,
				// A full replace: a swap to ttl 0 also drops the native TTL attribute.
				Item: itemOf(pKey, cCols, newValue, expireAt, this.#grace, order),
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
		const now = this.#clock.now();
		const fenced = DynamoTTLStorageImpl.#fencedCondition(
			DynamoTTLStorageImpl.#order(options?.fence),
			now,
		);
		return this.#conditional(
			"compareAndDelete",
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
	static #fencedCondition(
		order: FenceOrder | undefined,
		now: number,
	): { condition: string; names: Record<string, string>; values: Item } {
		if (order === undefined) return { condition: "", names: {}, values: {} };
		const { values } = DynamoTTLStorageImpl.#orderTerms(order, now);
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
		const now = this.#clock.now();
		const expireAt = expireAtMs(now, ttlSeconds);
		const order = DynamoTTLStorageImpl.#order(options?.fence);
		const item = itemOf(pKey, cCols, value, expireAt, this.#grace, order);
		await this.#io("put", () => this.#putOrdered("put", item, order, now));
	}

	/**
	 * One PutItem, conditional on the stored (epoch, stamp) when fenced: a newer one stored means
	 * this write is superseded and has no effect (F1), which is no error. Other errors reject with
	 * the contract's error.
	 */
	async #putOrdered(
		operation: string,
		item: Item,
		order: FenceOrder | undefined,
		now: number,
	): Promise<void> {
		const command = new PutItemCommand({
			TableName: this.#table,
			Item: item,
			...this.#ordered(order, now),
		});
		await this.#sendWrite(operation, command, order !== undefined);
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
		const unique = new Map<string, { item: Item; order: FenceOrder | undefined }>();
		for (const it of items) {
			const order = DynamoTTLStorageImpl.#order(it.fence);
			const item = itemOf(
				it.pKey,
				it.cCols,
				it.value,
				expireAtMs(now, it.ttlSeconds ?? 0),
				this.#grace,
				order,
			);
			const id = recordId(it.pKey, it.cCols);
			unique.delete(id); // keep call order: a re-written key moves to the end
			unique.set(id, { item, order });
		}
		const plain: WriteRequest[] = [];
		const fenced: Array<{ item: Item; order: FenceOrder }> = [];
		for (const u of unique.values()) {
			if (u.order === undefined) plain.push({ PutRequest: { Item: u.item } });
			else fenced.push({ item: u.item, order: u.order });
		}
		await this.#io("putBatch", async () => {
			const deadline = performance.now() + this.#batchDeadlineMs;
			const progress = { wrote: false };
			try {
				for (let i = 0; i < plain.length; i += BATCH_LIMIT) {
					await this.#writeChunk(plain.slice(i, i + BATCH_LIMIT), deadline, progress);
				}
				if (fenced.length > 0) await this.#writeFenced(fenced, now, progress);
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
			`${error.code} after some items of the batch were written; re-read before deciding`,
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
		items: ReadonlyArray<{ item: Item; order: FenceOrder }>,
		now: number,
		progress: { wrote: boolean },
	): Promise<void> {
		let next = 0;
		let failure: { error: unknown } | undefined;
		const worker = async (): Promise<void> => {
			while (failure === undefined && next < items.length) {
				const { item, order } = items[next++] as { item: Item; order: FenceOrder };
				try {
					await this.#putOrdered("putBatch", item, order, now);
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
				new BatchWriteItemCommand({ RequestItems: { [this.#table]: pending } }),
				false,
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
