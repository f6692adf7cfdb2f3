// A command processor's numbers: each command gets the next PLog offset, the next WLog offset of
// its workspace and a new record ID, dense and never reused, across restarts and crashes. The
// numbers live in the embedded level storage, next to the events (the PLog) in the same LevelDB.
//
// COMMANDS (default 5) commands, then a graceful stop; CRASH_AFTER=n stops with SIGKILL after n
// commands instead, before the numbers are stored: the next run recovers them from the PLog.
import { setTimeout } from "node:timers/promises";
import { createSequencer } from "@vvm/isequencer";
import { createSeqStorage } from "@vvm/seqstorage";
import { createLevelTTLStorage } from "@vvm/ttlstorage-level";
import { ClassicLevel } from "classic-level";
import { createLevelPLog } from "./level-plog.ts";

const WS_KIND = 1; // one kind of workspace, with two sequences:
const WLOG = 1; // the workspace log offset, from 1
const RECORD_ID = 2; // record IDs, from 200 001

const db = new ClassicLevel(process.env.DATA_DIR ?? ".data/sequencer");
const storage = createLevelTTLStorage({ db, prefix: "seq" }); // the database stays ours
const plog = createLevelPLog(db);
const { sequencer, cleanup } = createSequencer(
	{ seqTypes: { [WS_KIND]: { [WLOG]: 1, [RECORD_ID]: 200_001 } } },
	createSeqStorage({ storage, appId: 1, partitionId: 0, plog }),
);

const commands = Number(process.env.COMMANDS ?? 5);
const crashAfter = Number(process.env.CRASH_AFTER ?? Number.POSITIVE_INFINITY);
for (let i = 1; i <= commands; i++) {
	const wsid = 1001 + (i % 2);
	// undefined while the sequencer actualizes (reads the PLog tail after start-up or a failed
	// write), or for back-pressure (too many numbers not stored yet): wait, then try again.
	let offset = sequencer.start(WS_KIND, wsid);
	while (offset === undefined) {
		await sequencer.ready(AbortSignal.timeout(30_000));
		await setTimeout(5);
		offset = sequencer.start(WS_KIND, wsid);
	}
	const wlog = await sequencer.next(WLOG);
	const recordId = await sequencer.next(RECORD_ID);
	try {
		await plog.append(offset, [
			{ wsid, seqId: WLOG, value: wlog },
			{ wsid, seqId: RECORD_ID, value: recordId },
		]);
	} catch (error) {
		sequencer.actualize(); // the event is not in the PLog: forget these numbers
		throw error;
	}
	sequencer.flush(); // the event is in the PLog: the numbers are stored in the background
	console.log(`event ${offset}: workspace ${wsid} wlog ${wlog} record ${recordId}`);
	if (i >= crashAfter) process.kill(process.pid, "SIGKILL");
}

await cleanup(); // stops the sequencer; numbers not yet stored are recovered from the PLog next run
await storage.close();
await db.close();
console.log("stopped");
