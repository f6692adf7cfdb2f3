// The suite must catch a placement driver that grants a group before its lease expired: here it
// treats the lease of any holder it does not currently see alive as already expired.
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it, vi } from "vitest";
import { leasesCases } from "../src/testing/index.ts";

vi.mock("../src/placement.ts", async (importOriginal) => {
	const m = await importOriginal<typeof import("../src/placement.ts")>();
	return {
		...m,
		computePlacement: (input: Parameters<typeof m.computePlacement>[0]) =>
			m.computePlacement({
				...input,
				leases: input.leases.map((l) =>
					l !== undefined && input.members.get(l.holder.address)?.fresh !== true
						? { ...l, expirationTime: Math.min(l.expirationTime, input.now) }
						: l,
				),
			}),
	};
});

const cases = leasesCases({ createStorage: ({ clock }) => createMemTTLStorage({ clock }) });

describe("mutation: a grant before expiry", () => {
	for (const name of [
		"HolderThatLeftLosesLeaseOnlyAfterExpiry",
		"PartitionedHolderStopsByItsOwnClock",
	]) {
		it(`is caught by ${name}`, async () => {
			const c = cases.find((x) => x.name === name);
			const error = await c?.run().then(
				() => undefined,
				(e: unknown) => e,
			);
			// A safety assertion failed, not the harness (a liveness wait or a crash).
			expect((error as Error | undefined)?.name).toBe("AssertionError");
		});
	}
});
