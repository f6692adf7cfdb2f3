export { ErrUnknownSeqID, SequencerError, type SequencerErrorCode } from "./errors.ts";
export {
	DEFAULT_BATCHER_DELAY_MS,
	DEFAULT_LRU_CACHE_SIZE,
	DEFAULT_MAX_NUM_UNFLUSHED_VALUES,
	type SeqTypes,
	type SequencerParams,
} from "./params.ts";
export { type CacheKind, DEFAULT_CACHE } from "./record-cache.ts";
export type { RetryOptions } from "./retry.ts";
export {
	createSequencer,
	isFencedStorageError,
	type SequencerHandle,
	type SequencerOptions,
	type SequencerStats,
} from "./sequencer.ts";
export type {
	ISeqStorage,
	ISequencer,
	PLogOffset,
	SeqBatcher,
	SeqID,
	SeqNumber,
	SeqStorage,
	Sequencer,
	SeqValue,
	WSID,
	WSKind,
} from "./types.ts";
