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
const onDisk = {
	createStorage: async (): Promise<TTLStorage> => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-cp-level-"));
		const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true });
		dirs.set(storage, dir);
		return storage;
	},
	disposeStorage: async (storage: TTLStorage): Promise<void> => {
		await storage.close();
		const dir = dirs.get(storage);
		if (dir !== undefined) await rm(dir, { recursive: true, force: true });
	},
};
cpTestSuite("cp over ttlstorage-level (classic-level on disk)", onDisk);
// The level driver's putBatch is one LevelDB write batch: all or nothing, so level 2 may write an
// event and its effects together. Every case again, crash points included, in that mode.
cpTestSuite("cp over ttlstorage-level (classic-level on disk, atomicBatches)", {
	...onDisk,
	processorOptions: { atomicBatches: true },
});
