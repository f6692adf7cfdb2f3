export { DYNAMO_CLIENT_OPTIONS, DYNAMO_IDLE_SOCKET_MS } from "./client-options.ts";
export {
	createDynamoTTLStorage,
	type DynamoTTLStorageOptions,
} from "./dynamo-ttl-storage.ts";
export { type EnsureDynamoTTLTableOptions, ensureDynamoTTLTable } from "./ensure-table.ts";
export { validateDynamoTableName } from "./names.ts";
