import { createHash } from "node:crypto";
import { badRequest } from "./errors.ts";

/** Longest idempotency key, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * How long an idempotency key is kept by default: 24 hours (the IETF draft's example, and what
 * Stripe keeps them).
 */
export const DEFAULT_IDEMPOTENCY_TTL_SECONDS = 86_400;

/**
 * Checks an idempotency key: 1..255 printable ASCII characters (an `sf-string` of the IETF
 * `Idempotency-Key` header draft without quotes or backslashes).
 * @internal
 */
export function checkIdempotencyKey(key: unknown): string {
	if (typeof key !== "string" || key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH)
		throw badRequest(
			"idempotencyKey",
			`must be 1..${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`,
		);
	for (let i = 0; i < key.length; i++) {
		const c = key.charCodeAt(i);
		if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c)
			throw badRequest("idempotencyKey", "must be printable ASCII without quotes or backslashes");
	}
	return key;
}

/** JSON with object keys sorted at every level, so equal requests encode equally. */
function canonical(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
	if (typeof value === "object" && value !== null) {
		const entries = Object.entries(value as Record<string, unknown>)
			.filter(([, v]) => v !== undefined)
			.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
		return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
	}
	return JSON.stringify(value) ?? "null";
}

/**
 * The fingerprint of a request: SHA-256 (hex) of its operation and canonical JSON. A key sent
 * again with another fingerprint is refused (`CP_IDEMPOTENCY_KEY_REUSED`).
 * @internal
 */
export function fingerprint(operation: string, request: unknown): string {
	return createHash("sha256")
		.update(operation)
		.update("\n")
		.update(canonical(request))
		.digest("hex");
}
