import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { MemoryLevel } from "memory-level";
import { cpTestSuite } from "../src/testing/index.ts";
import { levelOnDisk } from "./level-on-disk.ts";

// Levels 0/1 here without putBatchIf (the single conditional writes); on disk with it (the default).
cpTestSuite("cp over ttlstorage-level (memory-level, no conditional batches)", {
	createStorage: () => createLevelTTLStorage({ db: new MemoryLevel(), ownsDb: true }),
	processorOptions: { conditionalBatches: false },
});

cpTestSuite("cp over ttlstorage-level (classic-level on disk)", levelOnDisk);
// The level driver's putBatch is one LevelDB write batch: all or nothing, so level 2 may write an
// event and its effects together. Every case again, crash points included, in that mode.
cpTestSuite("cp over ttlstorage-level (classic-level on disk, atomicBatches)", {
	...levelOnDisk,
	processorOptions: { atomicBatches: true },
});
