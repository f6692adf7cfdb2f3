// Leader election on one machine over an embedded LevelDB (classic-level). The database belongs to
// one process at a time, so this guards a job across restarts of one host; for several hosts use
// DynamoDB or Cassandra (src/dynamodb.ts, src/cassandra.ts).

import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { everySecond, lead } from "./campaign.ts";

const db = new ClassicLevel(process.env.DATA_DIR ?? ".data/leader-election");
const storage = createLevelTTLStorage({ db, ownsDb: true });
try {
	await lead(storage, process.env.JOB ?? "report-generator", everySecond);
} finally {
	await storage.close(); // also closes the database (ownsDb)
}
