export { SeqStorageError, type SeqStorageErrorCode } from "./errors.ts";
export { PKEY_PREFIX_SEQ_STORAGE_PART, PKEY_PREFIX_SEQ_STORAGE_WS } from "./keys.ts";
export { createMemPLog, type MemPLog, type PLogEvent, type PLogReader } from "./mem-plog.ts";
export { createSeqStorage, type SeqStorageOptions, type WorkspaceLog } from "./seq-storage.ts";
