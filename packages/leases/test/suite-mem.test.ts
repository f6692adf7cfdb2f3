import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { leasesTestSuite } from "../src/testing/index.ts";

leasesTestSuite("ttlstorage-mem", {
	createStorage: ({ clock }) => createMemTTLStorage({ clock }),
});
