import { randomUUID } from "node:crypto";

/** Separates the address from the per-incarnation nonce in a leader record's value. */
export const LEADER_VALUE_SEPARATOR = "#";

/**
 * The value a VVM writes into its leader record (`VVMConfig.address`): `<address>#<nonce>`, with a fresh random
 * nonce (12 hex digits from `crypto.randomUUID`) per call, that is per process incarnation.
 *
 * Ownership of the record is checked by value only (insert-if-absent, compare-and-swap,
 * compare-and-delete). With the address alone, two hosts with the same address (every host with
 * the default `127.0.0.1:8080`, or a restarted process) would hold the same value: a delayed
 * compare-and-delete of one could delete the other's record, and a compare-and-swap V→V of one
 * would renew the other's record, so both would think they lead. The nonce makes every value
 * unique, also when `--address` is given.
 *
 * @example
 * ```ts
 * createLeaderValue("127.0.0.1:8080"); // "127.0.0.1:8080#3f9a1c2e7b4d"
 * ```
 */
export function createLeaderValue(address: string, nonce: string = newNonce()): string {
	if (address === "") throw new TypeError("[@vvm/orch] the address must not be empty");
	if (nonce === "" || nonce.includes(LEADER_VALUE_SEPARATOR)) {
		throw new TypeError(`[@vvm/orch] a nonce must be non-empty and without "#"`);
	}
	return `${address}${LEADER_VALUE_SEPARATOR}${nonce}`;
}

/**
 * Splits a leader record's value at its last `#` into the address and the nonce; a value
 * without `#` (written by something else) is all address.
 *
 * @example
 * ```ts
 * parseLeaderValue("127.0.0.1:8080#3f9a1c2e7b4d"); // { address: "127.0.0.1:8080", nonce: "3f9a1c2e7b4d" }
 * ```
 */
export function parseLeaderValue(value: string): {
	readonly address: string;
	readonly nonce: string | undefined;
} {
	const at = value.lastIndexOf(LEADER_VALUE_SEPARATOR);
	if (at < 0) return { address: value, nonce: undefined };
	return { address: value.slice(0, at), nonce: value.slice(at + 1) };
}

function newNonce(): string {
	// The first 12 hex digits of a v4 UUID are all random (48 bits).
	return randomUUID().replaceAll("-", "").slice(0, 12);
}
