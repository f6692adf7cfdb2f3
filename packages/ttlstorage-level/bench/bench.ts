// Benchmark of the level driver on disk (classic-level in a temp dir): ops/s and p50/p99 latency
// of insertIfNotExists, compareAndSwap and get, sequential and with 16 operations in flight.
// Run: pnpm --filter @vvm/ttlstorage-level bench   (BENCH_OPS=… to change the operation count;
// BENCH_UNSAFE_NO_SYNC=1 writes without sync, to see what the fsync costs)
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { benchTTLStorage, formatBenchTable } from "@vvm/ttlstorage/testing";
import { ClassicLevel } from "classic-level";
import { createLevelTTLStorage } from "../src/index.ts";

const operations = Number(process.env.BENCH_OPS ?? 5000);
const dir = await mkdtemp(join(tmpdir(), "vvm-ttl-level-bench-"));
const unsafeNoSync = process.env.BENCH_UNSAFE_NO_SYNC === "1";
const storage = createLevelTTLStorage({ db: new ClassicLevel(dir), ownsDb: true, unsafeNoSync });
try {
	const results = await benchTTLStorage(storage, {
		operations,
		log: (line) => console.error(line),
	});
	console.log(
		`\n@vvm/ttlstorage-level on classic-level (disk, ${unsafeNoSync ? "unsafeNoSync" : "sync"}), ${availableParallelism()} cores, Node ${process.version}\n`,
	);
	console.log(formatBenchTable(results));
} finally {
	await storage.close();
	await rm(dir, { recursive: true, force: true });
}
