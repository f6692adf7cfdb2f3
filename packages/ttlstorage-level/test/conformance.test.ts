import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { onClassicLevel, onMemoryLevel } from "./helpers/fixtures.ts";

ttlStorageTestSuite("ttlstorage-level (memory-level)", {
	time: "mock",
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	...onMemoryLevel,
});
ttlStorageTestSuite("ttlstorage-level (classic-level on disk)", {
	time: "mock",
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	...onClassicLevel("vvm-ttl-level-"),
});
