import type { WriteAttempts } from "./error-mapping.ts";
import { isProvablyUnapplied } from "./error-mapping.ts";

/**
 * The error the guard throws instead of the error of an attempt that may have been applied. It
 * carries no `$metadata`, `$retryable`, `code` or `cause` that the SDK's retry strategies classify
 * as retryable, so the SDK gives up at once; the original is in {@link WriteAttempts}.
 */
class WriteNotResentError extends Error {
	override readonly name = "WriteNotResentError";
}

interface MiddlewareStackLike {
	add(middleware: unknown, options: Record<string, unknown>): void;
}

/** The guard's name in the command's middleware stack. */
const WRITE_GUARD_NAME = "vvmWriteNeverResentBlind";

/**
 * Installs the driver's resend rule on one write command (its own middleware stack: the user's
 * client is not changed) and returns what the guard sees.
 *
 * The guard runs in the `deserialize` step with high priority: inside the SDK's retry middleware
 * (`finalizeRequest`), so once per HTTP attempt, and outside the deserializer, so it sees the
 * parsed service error with its HTTP status. The rule: an attempt may follow only attempts that
 * provably wrote nothing (the server answered 4xx, e.g. throttling, or the connection was never
 * opened); after an attempt that may have been applied, the guard throws a
 * {@link WriteNotResentError} the SDK does not retry, and refuses any further attempt a custom
 * retry strategy would still make. So DynamoDB receives a write again only where the earlier
 * receipt provably had no effect, whatever `maxAttempts` or `retryStrategy` the client has.
 *
 * @internal
 */
export function guardWrite(command: { readonly middlewareStack: unknown }): WriteAttempts {
	const attempts: WriteAttempts = { maybeApplied: undefined };
	const guard =
		(next: (args: unknown) => Promise<unknown>) =>
		async (args: unknown): Promise<unknown> => {
			if (attempts.maybeApplied !== undefined) {
				throw new WriteNotResentError(
					"a write whose earlier attempt may have been applied is never re-sent",
				);
			}
			try {
				return await next(args);
			} catch (error) {
				if (isProvablyUnapplied(error)) throw error;
				attempts.maybeApplied = { error };
				throw new WriteNotResentError(
					"the attempt may have been applied; the driver does not let the SDK re-send it",
				);
			}
		};
	(command.middlewareStack as MiddlewareStackLike).add(guard, {
		step: "deserialize",
		priority: "high",
		name: WRITE_GUARD_NAME,
		tags: ["VVM_NO_BLIND_RESEND"],
	});
	return attempts;
}
