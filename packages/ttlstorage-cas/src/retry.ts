import type { types } from "cassandra-driver";
import { policies } from "cassandra-driver";

type RetryPolicy = policies.retry.RetryPolicy;
type DecisionInfo = policies.retry.DecisionInfo;
type OperationInfo = policies.retry.OperationInfo;

/**
 * The retry policy of every write statement (lightweight transactions, plain writes, batches),
 * passed per statement so it replaces whatever `policies.retry` the caller's `Client` has.
 *
 * `cassandra-driver` consults the policy even for a statement marked `isIdempotent: false` on a
 * read timeout and on an unavailable error; the default policy then sends it once more. A write
 * is never sent again after an answer that leaves its outcome open: read and write timeouts and
 * request errors are rethrown, for every write. `Unavailable` is sent once more to the next host
 * for a plain write only (the coordinator refused it before sending any mutation); for a
 * lightweight transaction it is rethrown too, as Cassandra can report it at the commit phase,
 * after the proposal was accepted. What the driver still re-sends on its own, a request it never
 * wrote to a socket, cannot have been applied.
 *
 * @internal
 */
class NoBlindResendPolicy extends policies.retry.RetryPolicy {
	readonly #conditional: boolean;

	constructor(conditional: boolean) {
		super();
		this.#conditional = conditional;
	}

	override onReadTimeout(): DecisionInfo {
		return this.rethrowResult();
	}

	override onWriteTimeout(): DecisionInfo {
		return this.rethrowResult();
	}

	override onRequestError(): DecisionInfo {
		return this.rethrowResult();
	}

	override onUnavailable(info: OperationInfo, consistency: types.consistencies): DecisionInfo {
		if (this.#conditional || info.nbRetry > 0) return this.rethrowResult();
		return this.retryResult(consistency, false);
	}
}

/** For lightweight transactions: never sent again by the client library. @internal */
export const CONDITIONAL_RETRY: RetryPolicy = new NoBlindResendPolicy(true);
/** For plain writes and batches: sent again only after `Unavailable` (nothing sent on). @internal */
export const WRITE_RETRY: RetryPolicy = new NoBlindResendPolicy(false);
