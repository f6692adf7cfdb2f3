// A stand-in VVM slot leadership for the static placement's tests (it reads only `slot`,
// `address` and `fencingToken`; the rest is what `@vvm/orch` reports, filled in).
import type { VVMLeadership } from "@vvm/orch";

/** The leadership of `slot` with `fencingToken`, held by `address` (`host:port#nonce`). */
export function stubLeadership(
	slot: number,
	fencingToken: number,
	address = "127.0.0.1:8081#abc",
): VVMLeadership {
	return {
		slot,
		address,
		durationSeconds: 20,
		acquiredAt: 0,
		renewals: 0,
		lastRenewedAt: 0,
		leaseDeadline: 16_000,
		leaseTimeLeftMs: 16_000,
		fencingToken,
	};
}
