// The published level driver against the published suites, on classic-level in a fresh directory
// per case (the client version under test is whatever the rehearsal installed).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { electionsTestSuite } from "@vvm/ielections/testing";
import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";

const fresh = () => new ClassicLevel(mkdtempSync(join(tmpdir(), "vvm-compat-level-")));
ttlStorageTestSuite("compat: ttlstorage-level", {
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
	createStorage: ({ clock }) => createLevelTTLStorage({ db: fresh(), clock, ownsDb: true }),
});
electionsTestSuite("compat: ttlstorage-level", {
	createStorage: ({ clock }) => createLevelTTLStorage({ db: fresh(), clock, ownsDb: true }),
});
