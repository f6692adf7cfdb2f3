export {
	createDynamoTTLStorage,
	type DynamoTTLStorageOptions,
} from "./dynamo-ttl-storage.ts";
export { type EnsureDynamoTTLTableOptions, ensureDynamoTTLTable } from "./ensure-table.ts";
export { validateDynamoTableName } from "./names.ts";
