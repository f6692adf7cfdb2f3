import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { leasesTestSuite } from "../src/testing/index.ts";

leasesTestSuite("ttlstorage-level (memory-level)", {
	createStorage: ({ clock }) =>
		createLevelTTLStorage({ db: new MemoryLevel(), clock, ownsDb: true }),
	randomizedIntervals: 60,
});

const dirs = new WeakMap<TTLStorage, string>();
leasesTestSuite("ttlstorage-level (classic-level on disk)", {
	createStorage: async ({ clock }) => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-leases-level-"));
		const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), clock, ownsDb: true });
		dirs.set(storage, dir);
		return storage;
	},
	disposeStorage: async (storage) => {
		await storage.close();
		const dir = dirs.get(storage);
		if (dir !== undefined) await rm(dir, { recursive: true, force: true });
	},
	randomizedIntervals: 40,
});
