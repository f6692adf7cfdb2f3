// A partition log (PLog) in a sublevel of the application's LevelDB: the events of a command
// processor, keyed by offset. The sequencer reads it back (as a PLogReader) to recover the numbers
// of events whose numbers were not yet stored when the process stopped.

import type { SeqValue } from "@vvm/isequencer";
import type { PLogEvent, PLogReader } from "@vvm/seqstorage";
import type { ClassicLevel } from "classic-level";

export interface LevelPLog extends PLogReader {
	append(offset: number, values: readonly SeqValue[]): Promise<void>;
}

// Fixed-width decimal keys sort in offset order.
const key = (offset: number): string => offset.toString().padStart(16, "0");

export function createLevelPLog(db: ClassicLevel): LevelPLog {
	const events = db.sublevel<string, PLogEvent>("plog", { valueEncoding: "json" });
	return {
		// Synced before it resolves: an event printed as done survives a power cut, not only a kill
		// (LevelDB's own default writes the log without an fsync).
		append: (offset, values) =>
			db.batch([{ type: "put", sublevel: events, key: key(offset), value: { offset, values } }], {
				sync: true,
			}),
		async *read(fromOffset, signal) {
			for await (const event of events.values({ gte: key(fromOffset) })) {
				signal.throwIfAborted();
				yield event;
			}
		},
	};
}
