import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Clock } from "@vvm/clock";
import type { TTLStorage } from "@vvm/ttlstorage";
import { ClassicLevel } from "classic-level";
import { MemoryLevel } from "memory-level";
import { createLevelTTLStorage } from "../../src/index.ts";

/** The level driver over memory-level, for the shared suites. */
export const onMemoryLevel = {
	createStorage: ({ clock }: { clock: Clock }): TTLStorage =>
		createLevelTTLStorage({ db: new MemoryLevel(), clock, ownsDb: true }),
};

/** The level driver over classic-level (LevelDB on disk) in a fresh directory per case, removed afterwards. */
export function onClassicLevel(dirPrefix: string): {
	createStorage: (ctx: { clock: Clock }) => Promise<TTLStorage>;
	disposeStorage: (storage: TTLStorage) => Promise<void>;
} {
	const dirs = new WeakMap<TTLStorage, string>();
	return {
		createStorage: async ({ clock }) => {
			const dir = await mkdtemp(join(tmpdir(), dirPrefix));
			const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), clock, ownsDb: true });
			dirs.set(storage, dir);
			return storage;
		},
		disposeStorage: async (storage) => {
			await storage.close();
			const dir = dirs.get(storage);
			if (dir !== undefined) await rm(dir, { recursive: true, force: true });
		},
	};
}
