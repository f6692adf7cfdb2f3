import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { electionsTestSuite } from "@vvm/ielections/testing";
import type { TTLStorage } from "@vvm/ttlstorage";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { createLevelTTLStorage } from "../src/index.ts";

// The cleaner runs on the suite's MockClock too (every 60 s of mock time), as in production.
electionsTestSuite("ttlstorage-level (memory-level)", {
	time: "mock",
	createStorage: ({ clock }) =>
		createLevelTTLStorage({ db: new MemoryLevel(), clock, ownsDb: true }),
});

const dirs = new WeakMap<TTLStorage, string>();
electionsTestSuite("ttlstorage-level (classic-level on disk)", {
	time: "mock",
	createStorage: async ({ clock }) => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-elect-level-"));
		const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), clock, ownsDb: true });
		dirs.set(storage, dir);
		return storage;
	},
	disposeStorage: async (storage) => {
		await storage.close();
		const dir = dirs.get(storage);
		if (dir !== undefined) await rm(dir, { recursive: true, force: true });
	},
});
