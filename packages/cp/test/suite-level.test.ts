import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { cpTestSuite } from "../src/testing/index.ts";

cpTestSuite("cp over ttlstorage-level (memory-level)", {
	createStorage: () => createLevelTTLStorage({ db: new MemoryLevel(), ownsDb: true }),
});

const dirs = new WeakMap<TTLStorage, string>();
cpTestSuite("cp over ttlstorage-level (classic-level on disk)", {
	createStorage: async () => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-cp-level-"));
		const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true });
		dirs.set(storage, dir);
		return storage;
	},
	disposeStorage: async (storage) => {
		await storage.close();
		const dir = dirs.get(storage);
		if (dir !== undefined) await rm(dir, { recursive: true, force: true });
	},
});
