import { MemoryLevel } from "memory-level";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLevelTTLStorage } from "../src/index.ts";

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);

describe("a test's fake timers", () => {
	afterEach(() => {
		vi.useRealTimers();
	});

	it("do not hold the driver's writes back (its group waits for the event loop's turn, not a faked timer)", async () => {
		vi.useFakeTimers();
		const storage = createLevelTTLStorage({ db: new MemoryLevel(), ownsDb: true });
		try {
			expect(await storage.insertIfNotExists(utf8("p"), utf8("k"), utf8("v"), 0)).toBe(true);
			await storage.put(utf8("p"), utf8("k2"), utf8("w"));
			expect(await storage.get(utf8("p"), utf8("k2"))).toEqual(utf8("w"));
		} finally {
			await storage.close();
		}
	});
});
