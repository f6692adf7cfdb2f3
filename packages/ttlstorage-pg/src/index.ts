export { DRIVER_NAME, mapPgError, type PgPhase } from "./errors.ts";
export { validatePgIdentifier } from "./names.ts";
export {
	createPgTTLStorage,
	type PgTTLStorage,
	type PgTTLStorageOptions,
	validatePgTTLStorageOptions,
} from "./pg-ttl-storage.ts";
export type { PgPool, PgPoolClient, PgQueryConfig, PgQueryResult } from "./pool.ts";
export {
	DEFAULT_SCHEMA,
	DEFAULT_TABLE,
	ensurePgSchema,
	type PgSchemaOptions,
	pgSchemaStatements,
} from "./schema.ts";
