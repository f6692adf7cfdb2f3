export {
	bytesEqual,
	compareBytes,
	concatBytes,
	fromUtf8,
	inRange,
	putU32,
	putU64,
	u32,
	utf8,
} from "./bytes.ts";
export {
	closedError,
	fencedError,
	TTL_STORAGE_ERROR_CODES,
	TTLStorageError,
	type TTLStorageErrorCode,
	type TTLStorageErrorOptions,
} from "./errors.ts";
export { expireAtMs, isExpired, NO_EXPIRY, remainingSeconds } from "./expiry.ts";
export {
	decodeFenceEpoch,
	encodeFenceEpoch,
	FENCE_CCOLS,
	type FenceRecordStore,
	raiseFenceRecord,
} from "./fence.ts";
export type {
	BatchItem,
	Bytes,
	ConditionalBatchItem,
	ReadRange,
	StoredRecord,
	TTLStorage,
	TTLStorageSupports,
	WriteFence,
	WriteOptions,
} from "./ttl-storage.ts";
export {
	MAX_FENCE_EPOCH,
	MAX_FENCE_SCOPE_BYTES,
	MAX_KEY_BYTES,
	MAX_TTL_SECONDS,
	MAX_VALUE_BYTES,
	refuseUnknownOptions,
	validateBatch,
	validateConditionalBatch,
	validateDeleteArgs,
	validateFence,
	validateFenceEpoch,
	validateFenceScope,
	validateInsertArgs,
	validateKey,
	validateRange,
	validateSwapArgs,
	validateTTL,
	validateValue,
	validateWriteOptions,
} from "./validation.ts";
export { withFence } from "./with-fence.ts";
