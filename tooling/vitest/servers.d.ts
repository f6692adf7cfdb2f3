/** Whether a TCP connection to host:port succeeds within the timeout. */
export declare function isReachable(
	host: string,
	port: number,
	timeoutMs?: number,
): Promise<boolean>;
/**
 * Resolves to `false` when the server is reachable, or to the reason to skip. Throws instead of
 * skipping in CI (`CI=true`) or when `enabledVar` is set.
 */
export declare function requireServer(server: {
	name: string;
	host: string;
	port: number;
	enabledVar: string;
	startHint: string;
}): Promise<false | string>;
/** Host and port of a `host:port` or URL endpoint. */
export declare function hostPort(
	endpoint: string,
	defaultPort: number,
): { host: string; port: number };
/**
 * The single-node Cassandra of the real-server tests, as `cassandra-driver` client options:
 * `CASSANDRA_CONTACT_POINTS` (comma-separated, default `127.0.0.1:9042`) and `CASSANDRA_LOCAL_DC`
 * (default `datacenter1`).
 */
export declare function cassandraEnv(): { contactPoints: string[]; localDataCenter: string };
/** {@link requireServer} for the first contact point of {@link cassandraEnv}. */
export declare function cassandraGate(): Promise<false | string>;
/**
 * DynamoDB Local of the real-server tests, as `@aws-sdk/client-dynamodb` client options:
 * `DYNAMODB_ENDPOINT` (default `http://127.0.0.1:8000`), region `us-east-1`, credentials
 * `local`/`local`.
 */
export declare function dynamoEnv(): {
	endpoint: string;
	region: string;
	credentials: { accessKeyId: string; secretAccessKey: string };
};
/** {@link requireServer} for the endpoint of {@link dynamoEnv}. */
export declare function dynamoGate(): Promise<false | string>;
/**
 * The PostgreSQL of the real-server tests, as `pg` pool options: `PGHOST`, `PGPORT` (else
 * `PG_PORT`, default 54329), `PGUSER` and `PGDATABASE` (default `vvm`); `pg` reads `PGPASSWORD`.
 */
export declare function postgresEnv(): {
	host: string;
	port: number;
	user: string;
	database: string;
};
/** {@link requireServer} for the server of {@link postgresEnv}. */
export declare function postgresGate(): Promise<false | string>;
/**
 * The Redis of the real-server tests, as an ioredis URL: `REDIS_URL`, else
 * `redis://127.0.0.1:<REDIS_PORT, default 6390>`.
 */
export declare function redisEnv(): { url: string };
/** {@link requireServer} for the server of {@link redisEnv}. */
export declare function redisGate(): Promise<false | string>;
/**
 * A port nothing listens on, below the kernel's ephemeral range (where `listen(0)` and outgoing
 * connections take their ports, so no other test takes it meanwhile): for a server a test starts
 * in another process, or for a test that needs a refused connection.
 */
export declare function unusedPort(): Promise<number>;
