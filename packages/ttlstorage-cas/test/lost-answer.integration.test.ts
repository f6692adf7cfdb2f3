// A conditional write delivered after its timeout (the answer lost), on the real Cassandra through
// a CQL-aware proxy: the driver reports OUTCOME_UNKNOWN, the write is applied once, and
// cassandra-driver never sends it again, even with a client configured to retry every error,
// to run speculative executions, and to take statements as idempotent by default.
import { utf8 } from "@vvm/ttlstorage";
import type { Client } from "cassandra-driver";
import { policies } from "cassandra-driver";
import { describe, expect, it } from "vitest";
import { createCassandraTTLStorage } from "../src/index.ts";
import {
	cassandraGate,
	firstContactPoint,
	newClient,
	useCassandraKeyspace,
} from "./cassandra-env.ts";
import type { CqlLateProxy } from "./cql-late-proxy.ts";
import { startCqlLateProxy } from "./cql-late-proxy.ts";

const skip = await cassandraGate();
const fixture = useCassandraKeyspace("lostanswer", skip);
const run = `${process.pid}-${Date.now()}`;
const text = (b: Uint8Array | undefined) =>
	b === undefined ? "absent" : new TextDecoder().decode(b);

/** A client retry policy that sends every failed request again, on the same host, 3 times. */
class RetryEverything extends policies.retry.RetryPolicy {
	override onReadTimeout(info: policies.retry.OperationInfo) {
		return info.nbRetry < 3 ? this.retryResult(undefined as never, true) : this.rethrowResult();
	}
	override onWriteTimeout(info: policies.retry.OperationInfo) {
		return info.nbRetry < 3 ? this.retryResult(undefined as never, true) : this.rethrowResult();
	}
	override onRequestError(info: policies.retry.OperationInfo) {
		return info.nbRetry < 3 ? this.retryResult(undefined as never, true) : this.rethrowResult();
	}
	override onUnavailable(info: policies.retry.OperationInfo) {
		return info.nbRetry < 3 ? this.retryResult(undefined as never, true) : this.rethrowResult();
	}
}

function hostileClient(proxy: CqlLateProxy): Client {
	// Every host the driver learns about is reached through the proxy (an instance of the
	// driver's AddressTranslator class, which its typings only declare as an interface).
	const Translator = (
		policies.addressResolution as unknown as {
			AddressTranslator: new () => policies.addressResolution.AddressTranslator;
		}
	).AddressTranslator;
	const translator = Object.assign(new Translator(), {
		translate: (_address: string, _port: number, callback: (endpoint: string) => void) =>
			callback(`127.0.0.1:${proxy.port}`),
	});
	return newClient({
		contactPoints: [`127.0.0.1:${proxy.port}`],
		protocolOptions: { maxVersion: 4 },
		socketOptions: { readTimeout: 400 },
		queryOptions: { isIdempotent: true },
		policies: {
			addressResolution: translator,
			retry: new RetryEverything(),
			speculativeExecution: new policies.speculativeExecution.ConstantSpeculativeExecutionPolicy(
				50,
				3,
			),
		},
	});
}

describe.skipIf(skip !== false)(
	"a conditional write whose answer was lost (Cassandra, CQL proxy)",
	() => {
		it("a request delivered after its timeout (the answer lost) is OUTCOME_UNKNOWN, applied once, and not re-sent", async () => {
			const { client, keyspace } = fixture();
			const proxy = await startCqlLateProxy(firstContactPoint);
			const viaProxy = hostileClient(proxy);
			try {
				await viaProxy.connect();
				const lossy = createCassandraTTLStorage({ client: viaProxy, keyspace });
				const direct = createCassandraTTLStorage({ client, keyspace });
				const pKey = utf8(`lost/${run}`);
				const cases = {
					insertIfNotExists: {
						before: undefined,
						run: (c: Uint8Array) => lossy.insertIfNotExists(pKey, c, utf8("new"), 60),
						after: "new",
					},
					compareAndSwap: {
						before: "old",
						run: (c: Uint8Array) => lossy.compareAndSwap(pKey, c, utf8("old"), utf8("new"), 60),
						after: "new",
					},
					compareAndDelete: {
						before: "old",
						run: (c: Uint8Array) => lossy.compareAndDelete(pKey, c, utf8("old")),
						after: "absent",
					},
				};
				for (const [op, c] of Object.entries(cases)) {
					// Prepared while answers still flow, so the armed call is one EXECUTE.
					await c.run(utf8(`warm-${op}`));
					const cCols = utf8(`late-${op}`);
					if (c.before !== undefined) {
						expect(await direct.insertIfNotExists(pKey, cCols, utf8(c.before), 60)).toBe(true);
					}
					const { held, answered } = proxy.arm();
					const before = proxy.statements();
					const outcome = c.run(cCols).then(
						(v) => `resolved ${String(v)}`,
						(e: unknown) => (e as { code?: string }).code ?? String(e),
					);
					await held;
					const code = await outcome;
					proxy.deliver();
					await answered;
					const observed = {
						op,
						code,
						statementsToServer: proxy.statements() - before,
						stored: text(await direct.get(pKey, cCols)),
					};
					expect(observed).toEqual({
						op,
						code: "TTLSTORAGE_OUTCOME_UNKNOWN",
						statementsToServer: 1,
						stored: c.after,
					});
				}
			} finally {
				await viaProxy.shutdown();
				await proxy.close();
			}
		});
	},
);
