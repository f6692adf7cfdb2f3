import { createMemTTLStorage } from "@vvm/ttlstorage-mem";
import { cpTestSuite } from "../src/testing/index.ts";

cpTestSuite("cp over ttlstorage-mem", { createStorage: () => createMemTTLStorage() });
