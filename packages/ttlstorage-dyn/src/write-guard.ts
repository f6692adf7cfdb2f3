import { subscribe, unsubscribe } from "node:diagnostics_channel";
import type { WriteAttempts } from "./error-mapping.ts";
import { isProvablyUnapplied } from "./error-mapping.ts";

/**
 * The error the guard throws instead of the error of an attempt that may have been applied (or,
 * for a write the driver re-sends itself, of a refused one). It carries no `$metadata`,
 * `$retryable`, `code` or `cause` that the SDK's retry strategies classify as retryable, so the
 * SDK gives up at once; the original is in {@link WriteAttempts}.
 */
class WriteNotResentError extends Error {
	override readonly name = "WriteNotResentError";
}

/** The error of an attempt the guard did not send: the request timeout had already fired. */
class AbortedBeforeSendError extends Error {
	override readonly name = "AbortError";
}

interface MiddlewareStackLike {
	add(middleware: unknown, options: Record<string, unknown>): void;
}

/** The guard's name in the command's middleware stack. */
const WRITE_GUARD_NAME = "vvmWriteNeverResentBlind";

/** How one command's attempts may be repeated. @internal */
export interface GuardOptions {
	/**
	 * Whether the SDK may send the same (already built and signed) request again after an attempt
	 * DynamoDB refused. `false` for a write whose condition compares the stored expiry with the
	 * clock's now: a re-sent request would carry the now of its first attempt, so the driver
	 * re-sends it itself, rebuilt with a fresh now.
	 */
	readonly resendAfterRefusal: boolean;
	/** The request timeout's signal: an attempt it aborted before sending wrote nothing. */
	readonly signal?: AbortSignal | undefined;
}

// --- attempts that never left the connection pool ------------------------------------------------

/** What Node's HTTP client reported of one attempt's request (see {@link watchAttempt}). */
interface AttemptWatch {
	/** Node created its `ClientRequest`. */
	created: boolean;
	/** The request got a socket (`http.client.request.start`): it may have been written. */
	started: boolean;
}

const watched = new Map<string, AttemptWatch>();
interface ChannelMessage {
	readonly request?: { getHeader?(name: string): unknown };
}
const ATTEMPT_HEADERS = ["amz-sdk-invocation-id", "amz-sdk-request", "authorization"] as const;

function keyOfRequest(get: (name: string) => unknown): string | undefined {
	const parts = ATTEMPT_HEADERS.map((name) => get(name));
	if (parts.some((p) => typeof p !== "string")) return undefined;
	return parts.join("\n");
}

function onCreated(message: unknown): void {
	const request = (message as ChannelMessage).request;
	if (typeof request?.getHeader !== "function") return;
	const key = keyOfRequest((name) => request.getHeader?.(name));
	const watch = key === undefined ? undefined : watched.get(key);
	if (watch !== undefined) watch.created = true;
}

function onStart(message: unknown): void {
	const request = (message as ChannelMessage).request;
	if (typeof request?.getHeader !== "function") return;
	const key = keyOfRequest((name) => request.getHeader?.(name));
	const watch = key === undefined ? undefined : watched.get(key);
	if (watch !== undefined) watch.started = true;
}

/**
 * Watches the Node `ClientRequest` of one attempt through `node:diagnostics_channel`
 * (`http.client.request.created` when Node creates it, `http.client.request.start` once it has a
 * socket), recognised by the headers the SDK sets per attempt (invocation id, attempt number,
 * signature). A request that was created and never got a socket (it waited for a pooled
 * connection until the request timeout aborted it) was never written. Any other handler (HTTP/2,
 * a custom one) reports nothing, and its aborts stay "may have been applied". Subscribed only while
 * an attempt is watched.
 */
function watchAttempt(request: unknown): { readonly watch: AttemptWatch; done(): void } {
	const watch: AttemptWatch = { created: false, started: false };
	const headers = (request as { headers?: Record<string, unknown> } | undefined)?.headers;
	const lower = new Map<string, unknown>();
	for (const [name, value] of Object.entries(headers ?? {})) lower.set(name.toLowerCase(), value);
	const key = keyOfRequest((name) => lower.get(name));
	if (key === undefined || watched.has(key)) return { watch, done: () => {} };
	if (watched.size === 0) {
		subscribe("http.client.request.created", onCreated);
		subscribe("http.client.request.start", onStart);
	}
	watched.set(key, watch);
	return {
		watch,
		done: () => {
			watched.delete(key);
			if (watched.size === 0) {
				unsubscribe("http.client.request.created", onCreated);
				unsubscribe("http.client.request.start", onStart);
			}
		},
	};
}

function isAbort(error: unknown): boolean {
	const name = (error as { name?: unknown } | null)?.name;
	return name === "AbortError";
}

/**
 * Installs the driver's resend rule on one write command (its own middleware stack: the user's
 * client is not changed) and records in `attempts` (shared by the commands of one call) what the
 * guard sees.
 *
 * The guard runs in the `deserialize` step with high priority: inside the SDK's retry middleware
 * (`finalizeRequest`), so once per HTTP attempt, and outside the deserializer, so it sees the
 * parsed service error with its HTTP status. The rule: an attempt may follow only attempts that
 * provably wrote nothing (the server answered 4xx, e.g. throttling, or the connection was never
 * opened); after an attempt that may have been applied, the guard throws a
 * {@link WriteNotResentError} the SDK does not retry, and refuses any further attempt a custom
 * retry strategy would still make. So DynamoDB receives a write again only where the earlier
 * receipt provably had no effect, whatever `maxAttempts` or `retryStrategy` the client has. With
 * `resendAfterRefusal: false` the SDK sends the command once at most: the driver re-sends it
 * rebuilt.
 *
 * An attempt the request timeout aborted before it was sent (already aborted when the SDK made
 * it, or waiting for a pooled connection) is "not sent", not "may have been applied".
 *
 * @internal
 */
export function guardWrite(
	command: { readonly middlewareStack: unknown },
	attempts: WriteAttempts,
	options: GuardOptions,
): void {
	let tried = false;
	const guard =
		(next: (args: unknown) => Promise<unknown>) =>
		async (args: unknown): Promise<unknown> => {
			if (attempts.maybeApplied !== undefined) {
				throw new WriteNotResentError(
					"a write whose earlier attempt may have been applied is never re-sent",
				);
			}
			if (tried && !options.resendAfterRefusal) {
				throw new WriteNotResentError(
					"a write whose condition compares the clock is re-sent by the driver, rebuilt with a fresh now",
				);
			}
			if (options.signal?.aborted === true) {
				throw new AbortedBeforeSendError("the request timeout fired before this attempt was sent");
			}
			tried = true;
			const { watch, done } = watchAttempt((args as { request?: unknown } | undefined)?.request);
			try {
				return await next(args);
			} catch (error) {
				if (isProvablyUnapplied(error)) {
					attempts.refused = { error };
					if (options.resendAfterRefusal) throw error;
					throw new WriteNotResentError(
						"refused; the driver re-sends this write itself, rebuilt with a fresh now",
					);
				}
				// Aborted while it waited for a pooled socket: it was never written.
				if (isAbort(error) && watch.created && !watch.started) throw error;
				attempts.maybeApplied = { error };
				throw new WriteNotResentError(
					"the attempt may have been applied; the driver does not let the SDK re-send it",
				);
			} finally {
				done();
			}
		};
	const stack = command.middlewareStack as MiddlewareStackLike;
	stack.add(
		(next: (args: unknown) => Promise<unknown>) => (args: unknown) => {
			attempts.stackRan = true;
			return next(args);
		},
		{ step: "initialize", priority: "high", name: `${WRITE_GUARD_NAME}Start` },
	);
	stack.add(guard, {
		step: "deserialize",
		priority: "high",
		name: WRITE_GUARD_NAME,
		tags: ["VVM_NO_BLIND_RESEND"],
	});
}
