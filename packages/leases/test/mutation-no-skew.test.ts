// The suite must catch a holder that serves up to the expiration itself, ignoring maxClockSkewMs.
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { describe, expect, it, vi } from "vitest";
import { leasesCases } from "../src/testing/index.ts";

vi.mock("../src/holder.ts", async (importOriginal) => {
	const m = await importOriginal<typeof import("../src/holder.ts")>();
	class IgnoresSkew extends m.LocalLeases {
		constructor(...args: ConstructorParameters<typeof m.LocalLeases>) {
			super(args[0], args[1], 0, args[3]);
		}
	}
	return { ...m, LocalLeases: IgnoresSkew };
});

const cases = leasesCases({ createStorage: ({ clock }) => createMemTTLStorage({ clock }) });

describe("mutation: a holder that ignores the skew bound", () => {
	it("is caught by PartitionedHolderStopsByItsOwnClock", async () => {
		const c = cases.find((x) => x.name === "PartitionedHolderStopsByItsOwnClock");
		const error = await c?.run().then(
			() => undefined,
			(e: unknown) => e,
		);
		// A safety assertion failed, not the harness (a liveness wait or a crash).
		expect((error as Error | undefined)?.name).toBe("AssertionError");
	});
});
