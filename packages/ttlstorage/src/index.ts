export { bytesEqual, compareBytes, concatBytes, fromUtf8, inRange, u32, utf8 } from "./bytes.ts";
export {
	closedError,
	TTL_STORAGE_ERROR_CODES,
	TTLStorageError,
	type TTLStorageErrorCode,
	type TTLStorageErrorOptions,
} from "./errors.ts";
export { expireAtMs, isExpired, NO_EXPIRY, remainingSeconds } from "./expiry.ts";
export type { BatchItem, Bytes, ReadRange, StoredRecord, TTLStorage } from "./ttl-storage.ts";
export {
	MAX_KEY_BYTES,
	MAX_TTL_SECONDS,
	MAX_VALUE_BYTES,
	validateBatch,
	validateDeleteArgs,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateTTL,
	validateValue,
} from "./validation.ts";
