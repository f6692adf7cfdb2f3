// A LevelDB write batch with sync: true whose fsync of the log fails (found by review of 98b2628:
// it was FAILED, "nothing written").
// leveldb DBImpl::Write: "The state of the log file is indeterminate: the log record we just added
// may or may not show up when the DB is re-opened." classic-level rejects the batch with code
// LEVEL_IO_ERROR. Here the fault is injected at `_batch` (memory-level), where classic-level's
// native write would fail, after the record may have reached the log: the batch is applied, then
// the error is reported, as happens when the record is read back after a reopen.
import { MockClock } from "@vvm/clock";
import { TTLStorageError, utf8 } from "@vvm/ttlstorage";
import { MemoryLevel } from "memory-level";
import { describe, expect, it } from "vitest";
import { createLevelTTLStorage } from "../src/index.ts";

describe("an I/O error of a sync write batch (fsync of the log failed)", () => {
	it("is OUTCOME_UNKNOWN (the record may show up after a reopen), not FAILED", async () => {
		const db = new MemoryLevel();
		const inner = db as unknown as { _batch: (ops: unknown[], o: unknown) => Promise<void> };
		const batch = inner._batch.bind(db);
		let fail = false;
		inner._batch = async (ops, options) => {
			if (!fail) return batch(ops, options);
			await batch(ops, options); // the log record reached the file ...
			throw Object.assign(new Error("IO error: /db/000003.log: Input/output error"), {
				code: "LEVEL_IO_ERROR", // ... and its fdatasync failed
			});
		};
		const storage = createLevelTTLStorage({ db, clock: new MockClock(0) });
		const p = utf8("p");
		fail = true;
		const code = await storage
			.insertIfNotExists(p, utf8("k"), utf8("v"), 0)
			.then(() => "resolved")
			.catch((e: unknown) => (TTLStorageError.is(e) ? e.code : String(e)));
		fail = false;
		// A fresh storage over the same database (the process restarted): the record is there.
		await storage.close();
		const after = createLevelTTLStorage({ db, clock: new MockClock(0) });
		const stored = await after.get(p, utf8("k"));
		await after.close();
		expect({ code, storedAfterReopen: stored !== undefined }).toEqual({
			code: "TTLSTORAGE_OUTCOME_UNKNOWN",
			storedAfterReopen: true,
		});
	});
});
