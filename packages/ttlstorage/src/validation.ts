import { bytesEqual } from "./bytes.ts";
import type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	WriteFence,
	WriteOptions,
} from "./ttl-storage.ts";

const latin1 = (b: Bytes): string =>
	Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("latin1");

/** Longest key (`pKey` + `cCols`) in bytes. */
export const MAX_KEY_BYTES = 1024;
/** Longest value in bytes. */
export const MAX_VALUE_BYTES = 65_536;
/** Longest TTL in seconds (365 days). */
export const MAX_TTL_SECONDS = 31_536_000;

function checkBytes(name: string, v: unknown): asserts v is Bytes {
	if (!(v instanceof Uint8Array))
		throw new TypeError(`[@vvm/ttlstorage] ${name} must be a Uint8Array`);
}

/** Throws unless `pKey` is non-empty and `pKey` + `cCols` fit in {@link MAX_KEY_BYTES}. */
export function validateKey(pKey: Bytes, cCols: Bytes): void {
	checkBytes("pKey", pKey);
	checkBytes("cCols", cCols);
	if (pKey.length === 0) throw new RangeError("[@vvm/ttlstorage] pKey must not be empty");
	if (pKey.length + cCols.length > MAX_KEY_BYTES) {
		throw new RangeError(
			`[@vvm/ttlstorage] key is ${pKey.length + cCols.length} bytes (pKey + cCols); the limit is ${MAX_KEY_BYTES}`,
		);
	}
}

/** Throws unless `value` is bytes of at most {@link MAX_VALUE_BYTES}. */
export function validateValue(value: Bytes, name = "value"): void {
	checkBytes(name, value);
	if (value.length > MAX_VALUE_BYTES) {
		throw new RangeError(
			`[@vvm/ttlstorage] ${name} is ${value.length} bytes; the limit is ${MAX_VALUE_BYTES}`,
		);
	}
}

/** Throws unless `ttlSeconds` is an integer in `0..MAX_TTL_SECONDS` (0 = no TTL). */
export function validateTTL(ttlSeconds: number): void {
	if (!Number.isInteger(ttlSeconds) || ttlSeconds < 0 || ttlSeconds > MAX_TTL_SECONDS) {
		throw new RangeError(
			`[@vvm/ttlstorage] ttlSeconds must be an integer in 0..${MAX_TTL_SECONDS} (0 = no TTL), got ${String(ttlSeconds)}`,
		);
	}
}

/** Longest fence scope in bytes. */
export const MAX_FENCE_SCOPE_BYTES = 255;
/** Largest epoch of a fence (a signed 64-bit integer, as every backend stores it). */
export const MAX_FENCE_EPOCH: bigint = 2n ** 63n - 1n;

/** Throws unless `scope` is 1..{@link MAX_FENCE_SCOPE_BYTES} bytes. */
export function validateFenceScope(scope: unknown): asserts scope is Bytes {
	checkBytes("fence.scope", scope);
	if (scope.length === 0 || scope.length > MAX_FENCE_SCOPE_BYTES)
		throw new RangeError(
			`[@vvm/ttlstorage] fence.scope must be 1..${MAX_FENCE_SCOPE_BYTES} bytes, got ${scope.length}`,
		);
}

/** Throws unless `epoch` is a bigint in `0n..MAX_FENCE_EPOCH`. */
export function validateFenceEpoch(epoch: unknown): asserts epoch is bigint {
	if (typeof epoch !== "bigint")
		throw new TypeError(`[@vvm/ttlstorage] fence.epoch must be a bigint, got ${typeof epoch}`);
	if (epoch < 0n || epoch > MAX_FENCE_EPOCH)
		throw new RangeError(
			`[@vvm/ttlstorage] fence.epoch must be in 0..2^63-1, got ${epoch.toString()}`,
		);
}

/** Throws unless `fence` is absent or a valid {@link WriteFence}. */
export function validateFence(fence: unknown): asserts fence is WriteFence | undefined {
	if (fence === undefined) return;
	if (typeof fence !== "object" || fence === null)
		throw new TypeError("[@vvm/ttlstorage] fence must be an object { scope, epoch }");
	validateFenceScope((fence as WriteFence).scope);
	validateFenceEpoch((fence as WriteFence).epoch);
}

/** Throws unless `options` (of a single write) is absent or valid. */
export function validateWriteOptions(
	options: unknown,
): asserts options is WriteOptions | undefined {
	if (options === undefined) return;
	if (typeof options !== "object" || options === null)
		throw new TypeError("[@vvm/ttlstorage] write options must be an object");
	validateFence((options as WriteOptions).fence);
}

/** Validates every item of a batch; nothing is written when one is bad. */
export function validateBatch(items: readonly BatchItem[]): void {
	if (!Array.isArray(items))
		throw new TypeError("[@vvm/ttlstorage] putBatch items must be an array");
	items.forEach((item, i) => {
		try {
			validateKey(item.pKey, item.cCols);
			validateValue(item.value);
			validateTTL(item.ttlSeconds ?? 0);
			validateFence(item.fence);
		} catch (error) {
			if (error instanceof Error) error.message = `${error.message} (putBatch item ${i})`;
			throw error;
		}
	});
}

/**
 * Validates the items of `putBatchIf`: each as a `putBatch` item, `expected` `null`, bytes or
 * omitted, and no key twice.
 */
export function validateConditionalBatch(items: readonly ConditionalBatchItem[]): void {
	validateBatch(items);
	// Small batches (a command's event and effects) compare pairwise: no strings built.
	const seen = items.length > 16 ? new Set<string>() : undefined;
	items.forEach((item, i) => {
		const expected = item.expected;
		if (expected !== undefined && expected !== null) {
			try {
				validateValue(expected);
			} catch (error) {
				if (error instanceof Error)
					error.message = `${error.message} (putBatchIf item ${i} expected)`;
				throw error;
			}
		}
		let twice = false;
		if (seen === undefined) {
			for (let j = 0; j < i && !twice; j++) {
				const other = items[j] as ConditionalBatchItem;
				twice = bytesEqual(other.pKey, item.pKey) && bytesEqual(other.cCols, item.cCols);
			}
		} else {
			// `length:pKey cCols`, one char per byte: unambiguous.
			const key = `${item.pKey.length}:${latin1(item.pKey)}${latin1(item.cCols)}`;
			twice = seen.has(key);
			seen.add(key);
		}
		if (twice)
			throw new TypeError(
				`[@vvm/ttlstorage] putBatchIf item ${i}: its key is already in the batch`,
			);
	});
}

/** Validates optional range bounds. */
export function validateRange(from: Bytes | undefined, to: Bytes | undefined): void {
	if (from !== undefined) checkBytes("range.from", from);
	if (to !== undefined) checkBytes("range.to", to);
}

/** Validates the arguments of `insertIfNotExists` (and of `put`, whose TTL defaults to 0). */
export function validateInsertArgs(
	pKey: Bytes,
	cCols: Bytes,
	value: Bytes,
	ttlSeconds: number,
): void {
	validateKey(pKey, cCols);
	validateValue(value);
	validateTTL(ttlSeconds);
}

/** Validates the arguments of `compareAndSwap`. */
export function validateSwapArgs(
	pKey: Bytes,
	cCols: Bytes,
	oldValue: Bytes,
	newValue: Bytes,
	ttlSeconds: number,
): void {
	validateKey(pKey, cCols);
	validateValue(oldValue, "oldValue");
	validateValue(newValue, "newValue");
	validateTTL(ttlSeconds);
}

/** Validates the arguments of `compareAndDelete`. */
export function validateDeleteArgs(pKey: Bytes, cCols: Bytes, expectedValue: Bytes): void {
	validateKey(pKey, cCols);
	validateValue(expectedValue, "expectedValue");
}

/**
 * Refuses a key of `options` that is not one of `known`'s, before any I/O: a `TypeError` naming
 * it and the known ones, prefixed with `[<pkg>]`. For a driver's options, which a host may read
 * from a configuration file (a misspelt option used to be ignored: found by review).
 *
 * @example
 * ```ts
 * refuseUnknownOptions("@vvm/ttlstorage-pg", options, { pool: true, schema: true });
 * ```
 */
export function refuseUnknownOptions(
	pkg: string,
	options: object,
	known: Readonly<Record<string, true>>,
): void {
	const unknown = Object.keys(options).filter((key) => !Object.hasOwn(known, key));
	if (unknown.length === 0) return;
	throw new TypeError(
		`[${pkg}] unknown option${unknown.length > 1 ? "s" : ""} ${unknown.map((k) => JSON.stringify(k)).join(", ")}; the options are ${Object.keys(known).join(", ")}`,
	);
}
