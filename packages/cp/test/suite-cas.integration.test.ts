import { cpTestSuite } from "../src/testing/index.ts";
import { cassandraGate, useCassandra } from "./servers.ts";

const skip = await cassandraGate();
const createStorage = useCassandra(skip);

cpTestSuite("cp over ttlstorage-cas (real Cassandra)", { skip, createStorage, timeoutMs: 180_000 });
