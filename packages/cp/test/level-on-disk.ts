// classic-level in a temp directory per storage, removed afterwards (the level suites share it).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";

const dirs = new WeakMap<TTLStorage, string>();

/** `createStorage` / `disposeStorage` over classic-level on disk. */
export const levelOnDisk: {
	createStorage: () => Promise<TTLStorage>;
	disposeStorage: (storage: TTLStorage) => Promise<void>;
} = {
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
};
