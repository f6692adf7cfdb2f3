import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createPgTTLStorage } from "../src/index.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();
const supports = { atomicBatches: true, fencing: "epoch" } as const;

// The suite's MockClock, passed as the test clock: expiry compared with its now, sent as a
// parameter. A schema of its own: the mock clock's sweep must not meet records of the real-time run.
const mock = usePgSchema("vvm_conf_mock", skip);
ttlStorageTestSuite("ttlstorage-pg (mock clock)", {
	skip,
	supports,
	createStorage: ({ clock }) => createPgTTLStorage({ ...mock(), clock }),
});

// Production settings: the database's clock decides expiry, in real time.
const real = usePgSchema("vvm_conf_real", skip);
ttlStorageTestSuite("ttlstorage-pg (database clock)", {
	time: "real",
	skip,
	supports,
	createStorage: () => createPgTTLStorage({ ...real(), sweepIntervalMs: 1_000 }),
});
