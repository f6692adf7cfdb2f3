import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "../src/index.ts";

ttlStorageTestSuite("ttlstorage-mem", {
	createStorage: ({ clock }) => createMemTTLStorage({ clock }),
	supports: { atomicBatches: true, fencing: "epoch", putBatchIf: true },
});

ttlStorageTestSuite("ttlstorage-mem (fencing: ordered)", {
	createStorage: ({ clock }) => createMemTTLStorage({ clock, fencing: "ordered" }),
	supports: { atomicBatches: false, fencing: "ordered" },
});
