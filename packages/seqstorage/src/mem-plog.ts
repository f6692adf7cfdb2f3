import type { PLogOffset, SeqValue } from "@vvm/isequencer";

/**
 * One event of the partition log, as far as sequences care: its offset and the numbers it used.
 *
 * @example
 * ```ts
 * const e: PLogEvent = { offset: 42, values: [{ wsid: 1001, seqId: 1, value: 7 }] };
 * ```
 */
export interface PLogEvent {
	readonly offset: PLogOffset;
	readonly values: readonly SeqValue[];
}

/**
 * Reads the partition log from an offset to its end, in offset order. The command processor's
 * event store implements it; it extracts the sequence values of each event (voedger: the WLog
 * offset, the IDs of new records and of ODoc records).
 *
 * @example
 * ```ts
 * for await (const e of plog.read(42, signal)) console.log(e.offset, e.values);
 * ```
 */
export interface PLogReader {
	read(fromOffset: PLogOffset, signal: AbortSignal): AsyncIterable<PLogEvent>;
}

/**
 * An in-memory {@link PLogReader} for tests and benchmarks.
 *
 * @example
 * ```ts
 * const plog = createMemPLog();
 * plog.append(1, [{ wsid: 1001, seqId: 1, value: 1 }]);
 * ```
 */
export interface MemPLog extends PLogReader {
	/** Appends an event; offsets must increase (RangeError otherwise). */
	append(offset: PLogOffset, values?: readonly SeqValue[]): void;
	/** Number of events. */
	readonly size: number;
	/** Offset of the last event, 0 when empty. */
	readonly lastOffset: PLogOffset;
}

class MemPLogImpl implements MemPLog {
	readonly #events: PLogEvent[] = [];

	get size(): number {
		return this.#events.length;
	}

	get lastOffset(): PLogOffset {
		return this.#events.at(-1)?.offset ?? 0;
	}

	append(offset: PLogOffset, values: readonly SeqValue[] = []): void {
		if (!Number.isSafeInteger(offset) || offset < 1 || offset <= this.lastOffset)
			throw new RangeError(
				`[@vvm/seqstorage] PLog offsets must be safe integers increasing from 1; got ${offset} after ${this.lastOffset}`,
			);
		this.#events.push({ offset, values: [...values] });
	}

	async *read(fromOffset: PLogOffset, signal: AbortSignal): AsyncIterable<PLogEvent> {
		const events = this.#events;
		let lo = 0;
		let hi = events.length;
		while (lo < hi) {
			const mid = (lo + hi) >> 1;
			if ((events[mid] as PLogEvent).offset < fromOffset) lo = mid + 1;
			else hi = mid;
		}
		for (let i = lo; i < events.length; i++) {
			signal.throwIfAborted();
			yield events[i] as PLogEvent;
		}
	}
}

/**
 * Creates an empty in-memory PLog.
 *
 * @example
 * ```ts
 * const plog = createMemPLog();
 * const seqStorage = createSeqStorage({ storage, appId: 1, partitionId: 0, plog });
 * ```
 */
export function createMemPLog(): MemPLog {
	return new MemPLogImpl();
}
