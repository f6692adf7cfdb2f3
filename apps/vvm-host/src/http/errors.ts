// The one error body of every route (API v2's: status, code, message, field, committed), and the
// one 421 and 503 shape. A route answers an error only through these.
import type { PartitionLocation } from "@vvm/appparts";
import { CpError } from "@vvm/cp";

/** The HTTP answer to a failed request: status, JSON body, extra headers (a route's `Reply`). */
export interface ApiErrorReply {
	readonly status: number;
	readonly headers: Readonly<Record<string, string>>;
	readonly body: {
		readonly status: number;
		readonly message: string;
		readonly code: string;
		readonly [extra: string]: unknown;
	};
	/** The metrics outcome: `ok` never appears here. */
	readonly outcome: string;
}

const retryAfter = (ms: number | undefined): Record<string, string> => ({
	"retry-after": String(Math.max(1, Math.ceil((ms ?? 1000) / 1000))),
});

/**
 * A 503 the host itself answers (no holder known, not ready, not serving): `Retry-After` in
 * seconds, `reason` in the body and the metrics.
 *
 * @example
 * ```ts
 * unavailable("no_holder", "no host serves partition 3 yet", 1000);
 * ```
 */
export function unavailable(
	reason: string,
	message: string,
	retryAfterMs = 1000,
	extra: Record<string, unknown> = {},
): ApiErrorReply {
	return {
		status: 503,
		headers: retryAfter(retryAfterMs),
		body: { status: 503, code: "HOST_UNAVAILABLE", reason, message, committed: "no", ...extra },
		outcome: `unavailable_${reason}`,
	};
}

/**
 * A request the host refuses before anything runs (bad URL part, body, method or route): 400,
 * 404, 405 (with `Allow`) or 413, code `HOST_BAD_REQUEST`, nothing written. `field` names the
 * culprit when there is one.
 *
 * @example
 * ```ts
 * hostRefusal(405, "method DELETE not allowed on /leases", { allow: ["GET"] });
 * ```
 */
export function hostRefusal(
	status: 400 | 404 | 405 | 413,
	message: string,
	options: { readonly field?: string; readonly allow?: readonly string[] } = {},
): ApiErrorReply {
	return {
		status,
		headers: options.allow === undefined ? {} : { allow: options.allow.join(", ") },
		body: {
			status,
			code: "HOST_BAD_REQUEST",
			message,
			...(options.field === undefined ? {} : { field: options.field }),
			committed: "no",
		},
		outcome: status === 404 ? "not_found" : status === 405 ? "not_allowed" : "bad_request",
	};
}

/**
 * The answer for a partition this host does not serve, by its placement's `locate` answer: 421
 * naming the holder (`Location`: the same `path` on the holder) when another host holds it;
 * 503 + `Retry-After` when nobody is known, or when the named holder is this host itself (it
 * holds the lease but cannot serve now). One shape for every route.
 *
 * @example
 * ```ts
 * notServedHere({ kind: "held", holder: { address: "10.0.0.2:8080" } }, 3, "/work?partition=3", "10.0.0.1:8080");
 * ```
 */
export function notServedHere(
	where: Exclude<PartitionLocation, { kind: "served" }>,
	partition: number,
	path: string,
	self: string,
	scheme: "http" | "https" = "http",
): ApiErrorReply {
	if (where.kind === "nobody")
		return unavailable("no_holder", `no host is known to serve partition ${partition} yet`, 1000, {
			partition,
		});
	const { holder } = where;
	if (holder.address === self)
		return unavailable(
			"not_ready",
			`this host holds partition ${partition} but cannot serve it now (lease not valid or not deployed)`,
			1000,
			{ partition },
		);
	// The cluster's hosts speak one scheme (all with --tls-cert, or none).
	const location = `${scheme}://${holder.address}${path}`;
	return {
		status: 421,
		headers: { location, "vvm-holder": holder.address },
		body: {
			status: 421,
			code: "HOST_MISDIRECTED",
			message: `partition ${partition} is served by ${holder.address}`,
			holder: holder.address,
			partition,
			location,
			...(holder.until === undefined ? {} : { until: holder.until }),
			committed: "no",
		},
		outcome: "misdirected",
	};
}

/** What a client should do with a 500 whose command may have been applied. */
const COMMITTED_HINT = {
	yes: "the command's event is durable and is applied before the partition serves anything else: do not send it again as a new command; retry with the same Idempotency-Key to get its result, or read the workspace's WLog",
	unknown:
		"the command may or may not have been applied: retry with the same Idempotency-Key (it answers the first result if there was one), or read the workspace's WLog before sending it again",
} as const;

/**
 * Maps an error of `@vvm/cp` (or anything else) to its answer. The rule (the README's table): a
 * command whose event may be durable (`committed` `"yes"` or `"unknown"`) is always a 500 that
 * says so and how to find the outcome, whatever the code; otherwise 400 bad request, 404 not
 * found, 405 not allowed, 409 conflict (the key named) or idempotency key in flight, 421
 * misdirected, 422 idempotency key reused, 503 + `Retry-After` busy, closed or a storage failure
 * that wrote nothing, 500 internal. Every body carries `committed`; an unexpected error of a read
 * (`read`) says `"no"`, of anything else `"unknown"`.
 *
 * @example
 * ```ts
 * const reply = cpErrorReply(new CpError("CP_BUSY", "actualizing", { retryAfterMs: 1000 }));
 * // reply.status === 503, reply.headers["retry-after"] === "1", reply.body.committed === "no"
 * ```
 */
export function cpErrorReply(error: unknown, read = false): ApiErrorReply {
	if (!CpError.is(error)) {
		const message = error instanceof Error ? error.message : String(error);
		// A read writes nothing: its unexpected error is no reason to doubt anything was written.
		return {
			status: 500,
			headers: {},
			body: read
				? { status: 500, code: "HOST_INTERNAL", message, committed: "no" }
				: {
						status: 500,
						code: "HOST_INTERNAL",
						message,
						committed: "unknown",
						hint: COMMITTED_HINT.unknown,
					},
			outcome: "internal",
		};
	}
	const base = {
		code: error.code,
		message: error.message.replace(/^\[@vvm\/cp\] /, ""),
		committed: error.committed,
	};
	const field = error.field === undefined ? {} : { field: error.field };
	const reply = (
		status: number,
		outcome: string,
		extra: Record<string, unknown> = {},
		headers: Record<string, string> = {},
	): ApiErrorReply => ({
		status,
		headers,
		body: { status, ...base, ...field, ...extra },
		outcome,
	});
	if (error.committed !== "no")
		// Whatever went wrong, a retry as a new command could apply it twice.
		return reply(500, `committed_${error.committed}`, { hint: COMMITTED_HINT[error.committed] });
	switch (error.code) {
		case "CP_BAD_REQUEST":
			return reply(400, "bad_request");
		case "CP_NOT_FOUND":
			return reply(404, "not_found");
		case "CP_NOT_ALLOWED":
			return reply(405, "not_allowed");
		case "CP_WRONG_PARTITION":
			return reply(421, "misdirected");
		case "CP_IDEMPOTENCY_KEY_REUSED":
			return reply(422, "idempotency_key_reused");
		case "CP_IDEMPOTENCY_KEY_IN_FLIGHT":
			return reply(409, "idempotency_key_in_flight", {}, retryAfter(error.retryAfterMs));
		case "CP_CONFLICT":
			return reply(409, "conflict", error.key === undefined ? {} : { key: error.key });
		case "CP_BUSY":
			return reply(503, "busy", { reason: "busy" }, retryAfter(error.retryAfterMs));
		case "CP_CLOSED":
			return reply(503, "closed", { reason: "closed" }, retryAfter(1000));
		case "CP_STORAGE":
			return reply(503, "storage", { reason: "storage" }, retryAfter(1000));
		case "CP_INTERNAL":
			return reply(500, "internal");
	}
}
