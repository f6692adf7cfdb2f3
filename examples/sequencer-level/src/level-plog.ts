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
		append: (offset, values) => events.put(key(offset), { offset, values }),
		async *read(fromOffset, signal) {
			for await (const event of events.values({ gte: key(fromOffset) })) {
				signal.throwIfAborted();
				yield event;
			}
		},
	};
}
