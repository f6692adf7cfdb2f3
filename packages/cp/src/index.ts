export {
	type App,
	type AppDefinition,
	type CommandContext,
	type CommandDef,
	type CommandOutput,
	type CompiledCommand,
	type CompiledField,
	type CompiledTable,
	CUD_COMMAND,
	type CudInput,
	defineApp,
	FIRST_CRECORD_ID,
	FIRST_OFFSET,
	FIRST_OWRECORD_ID,
	type FieldDef,
	type FieldType,
	type FieldValue,
	isQName,
	MAX_RAW_ID,
	PARENT_FIELD,
	SEQ_CRECORD_ID,
	SEQ_OWRECORD_ID,
	SEQ_WLOG_OFFSET,
	type SequenceDef,
	type TableDef,
	type TableKind,
} from "./app-def.ts";
export {
	type AppPartition,
	type DeployOptions,
	MAX_READ_LIMIT,
	type PartitionLease,
	type ReadPLogRequest,
	type ReadRecordRequest,
	type ReadWLogRequest,
	type RecordData,
} from "./app-partition.ts";
export {
	type CommandProcessor,
	type CommandProcessorOptions,
	type CommandProcessorStats,
	createCommandProcessor,
} from "./command-processor.ts";
export { demoApp } from "./demo-app.ts";
export {
	type CpCommitted,
	CpError,
	type CpErrorCode,
	type CpErrorOptions,
	type CpKeyInfo,
} from "./errors.ts";
export { type LogCud, type LogEntry, type LogEvent, MAX_EVENT_BYTES } from "./event.ts";
export type { SequencesTrustLevel } from "./event-writer.ts";
export { DEFAULT_IDEMPOTENCY_TTL_SECONDS, MAX_IDEMPOTENCY_KEY_LENGTH } from "./idempotency.ts";
export {
	BUCKET_SIZE,
	cpKeys,
	PKEY_PREFIX_FENCE,
	PKEY_PREFIX_IDEMPOTENCY,
	PKEY_PREFIX_PLOG,
	PKEY_PREFIX_RECORDS,
	PKEY_PREFIX_WLOG,
	type StorageKey,
} from "./keys.ts";
export { checkPartitions, MAX_PARTITIONS, partitionOf } from "./partition.ts";
export { createPLogReader, type PLogReaderOptions } from "./plog-reader.ts";
export {
	type CommandRequestBase,
	type CommandResult,
	type CreateRecordRequest,
	type ExecuteCommandRequest,
	MAX_CUDS,
	type UpdateRecordRequest,
} from "./request.ts";
export {
	type CpAdmission,
	type CpSettings,
	checkCpAdmission,
	checkCpSettings,
	DEFAULT_MAX_QUEUE_WAIT_MS,
	DEFAULT_QUEUE_WAIT_TARGET_MS,
	DEFAULT_READ_WAIT_MS,
	MAX_PIPELINE_DEPTH,
} from "./settings.ts";
export type { PartitionStats } from "./stats.ts";
