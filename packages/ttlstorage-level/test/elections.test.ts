import { electionsTestSuite } from "@vvm/ielections/testing";
import { onClassicLevel, onMemoryLevel } from "./helpers/fixtures.ts";

// The cleaner runs on the suite's MockClock too (every 60 s of mock time), as in production.
electionsTestSuite("ttlstorage-level (memory-level)", { time: "mock", ...onMemoryLevel });
electionsTestSuite("ttlstorage-level (classic-level on disk)", {
	time: "mock",
	...onClassicLevel("vvm-elect-level-"),
});
