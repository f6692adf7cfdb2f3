export {
	createDynamoTTLStorage,
	type DynamoTTLStorageOptions,
} from "./dynamo-ttl-storage.ts";
export { ensureDynamoTTLTable } from "./ensure-table.ts";
