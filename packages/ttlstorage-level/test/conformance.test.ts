import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { createLevelTTLStorage } from "../src/index.ts";

ttlStorageTestSuite("ttlstorage-level (memory-level)", {
	time: "mock",
	createStorage: ({ clock }) =>
		createLevelTTLStorage({ db: new MemoryLevel(), clock, ownsDb: true }),
});

// classic-level (LevelDB on disk): a fresh directory per case, removed afterwards.
const dirs = new WeakMap<TTLStorage, string>();
ttlStorageTestSuite("ttlstorage-level (classic-level on disk)", {
	time: "mock",
	createStorage: async ({ clock }) => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-ttl-level-"));
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
