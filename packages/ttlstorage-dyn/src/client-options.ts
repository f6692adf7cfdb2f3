/**
 * How long a pooled connection may sit idle before the client closes it: below every server idle
 * timeout we know of (DynamoDB Local's Jetty closes after 30 s, measured; DynamoDB itself after
 * about 60-90 s, as its users report), so the server never closes a connection the client is
 * about to reuse.
 */
export const DYNAMO_IDLE_SOCKET_MS = 15_000;

/** The agent options of both protocols (the SDK's handler copies them into its `Agent`). */
type IdleAgentOptions = Readonly<{ keepAlive: true; timeout: number }>;
const IDLE_AGENT: IdleAgentOptions = Object.freeze({
	keepAlive: true,
	timeout: DYNAMO_IDLE_SOCKET_MS,
});

/**
 * Options to spread into your `DynamoDBClient`'s configuration: its HTTP(S) connection pool
 * closes a connection after {@link DYNAMO_IDLE_SOCKET_MS} idle (Node's `Agent` `timeout`, which
 * closes only free sockets; a request in flight keeps the SDK's own timeouts).
 *
 * Why: the SDK keeps idle connections forever, and the server closes them. A write sent on one
 * just as the server closes it (a busy event loop widens that moment to tens of milliseconds)
 * fails with `socket hang up`, and since the driver cannot tell whether such a write arrived, it
 * rejects with `TTLSTORAGE_OUTCOME_UNKNOWN` instead of re-sending it: a write that was never
 * applied, reported as unknown. With these options that does not happen
 * (`test/idle-connection.integration.test.ts`). Nothing else of the client changes; with a
 * `requestHandler` of your own, give its agents a `timeout` below the server's idle timeout.
 *
 * @example
 * ```ts
 * const client = new DynamoDBClient({ region: "eu-west-1", ...DYNAMO_CLIENT_OPTIONS });
 * ```
 */
export const DYNAMO_CLIENT_OPTIONS: Readonly<{
	requestHandler: Readonly<{ httpAgent: IdleAgentOptions; httpsAgent: IdleAgentOptions }>;
}> = Object.freeze({
	requestHandler: Object.freeze({ httpAgent: IDLE_AGENT, httpsAgent: IDLE_AGENT }),
});
