import { electionsTestSuite } from "@vvm/ielections/testing";
import { createPgTTLStorage } from "../src/index.ts";
import { pgGate, usePgSchema } from "./pg-env.ts";

const skip = await pgGate();

// Elections and driver on the suite's MockClock (the driver's test clock).
const mock = usePgSchema("vvm_elect_mock", skip);
electionsTestSuite("ttlstorage-pg (mock clock)", {
	skip,
	createStorage: ({ clock }) => createPgTTLStorage({ ...mock(), clock }),
});

// Production settings: the database's clock decides expiry; 2 s leaderships in real time.
const real = usePgSchema("vvm_elect_real", skip);
electionsTestSuite("ttlstorage-pg (database clock)", {
	time: "real",
	skip,
	createStorage: () => createPgTTLStorage({ ...real(), sweepIntervalMs: 500 }),
});
