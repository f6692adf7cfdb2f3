import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { onClassicLevel, onMemoryLevel } from "./helpers/fixtures.ts";

ttlStorageTestSuite("ttlstorage-level (memory-level)", { time: "mock", ...onMemoryLevel });
ttlStorageTestSuite("ttlstorage-level (classic-level on disk)", {
	time: "mock",
	...onClassicLevel("vvm-ttl-level-"),
});
