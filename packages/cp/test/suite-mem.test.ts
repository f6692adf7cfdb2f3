import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { cpTestSuite } from "../src/testing/index.ts";

cpTestSuite("cp over ttlstorage-mem", { createStorage: () => createMemTTLStorage() });
// Levels 0/1 without putBatchIf: the single conditional writes, every case again.
cpTestSuite("cp over ttlstorage-mem (no conditional batches)", {
	createStorage: () => createMemTTLStorage(),
	processorOptions: { conditionalBatches: false },
});
