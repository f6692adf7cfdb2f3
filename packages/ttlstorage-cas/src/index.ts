export {
	type CassandraTTLStorageOptions,
	createCassandraTTLStorage,
} from "./cassandra-ttl-storage.ts";
export { CQL_ERROR_CODES, mapCassandraError, type StatementKind } from "./errors.ts";
export { validateCassandraIdentifier } from "./names.ts";
export {
	type CassandraReplication,
	type CassandraSchemaOptions,
	cassandraSchemaStatements,
	DEFAULT_TABLE,
	ensureCassandraSchema,
} from "./schema.ts";
export { TTL_GRACE_SECONDS } from "./statements.ts";
