export {
	checkRedisClient,
	REDIS_CLIENT_OPTIONS,
	type RedisArg,
	type RedisClient,
} from "./client.ts";
export { DRIVER_NAME, mapRedisError, type RedisPhase } from "./errors.ts";
export { DEFAULT_KEY_PREFIX, validateRedisKeyPrefix } from "./names.ts";
export {
	createRedisTTLStorage,
	MAX_REDIS_BATCH_ITEMS,
	type RedisTTLStorage,
	type RedisTTLStorageOptions,
	validateRedisTTLStorageOptions,
} from "./redis-ttl-storage.ts";
export { checkRedisServer, type RedisServerCheck } from "./server-check.ts";
