import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TTLStorage } from "@vvm/ttlstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { deposedLeaderSuite } from "./deposed-leader.ts";

const dirs = new WeakMap<TTLStorage, string>();
deposedLeaderSuite("deposed leader over ttlstorage-level (classic-level on disk)", {
	createStorage: async (): Promise<TTLStorage> => {
		const dir = await mkdtemp(join(tmpdir(), "vvm-cp-deposed-"));
		const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true });
		dirs.set(storage, dir);
		return storage;
	},
	disposeStorage: async (storage: TTLStorage): Promise<void> => {
		await storage.close();
		const dir = dirs.get(storage);
		if (dir !== undefined) await rm(dir, { recursive: true, force: true });
	},
});
