import { electionsTestSuite } from "@vvm/ielections/testing";
import { createMemTTLStorage } from "../src/index.ts";

electionsTestSuite("ttlstorage-mem", {
	createStorage: ({ clock }) => createMemTTLStorage({ clock }),
});
