import { ttlStorageTestSuite } from "@vvm/ttlstorage/testing";
import { createMemTTLStorage } from "../src/index.ts";

ttlStorageTestSuite("ttlstorage-mem", {
	createStorage: ({ clock }) => createMemTTLStorage({ clock }),
});
