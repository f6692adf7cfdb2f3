import type { LineFile } from "./jsonl-file.ts";
import { monoMs } from "./mono.ts";

/**
 * One line of the run's own log (`events.jsonl`): what the chaos tool did and saw, each stamped
 * with `mono` (CLOCK_MONOTONIC ms, the hosts' `mono`).
 */
interface RunEvent {
	readonly event: string;
	readonly mono: number;
	readonly [field: string]: unknown;
}

/** Writes run events and hands them to listeners (progress counters). */
export interface EventLog {
	emit(event: string, fields?: Record<string, unknown>): RunEvent;
	onEvent(listener: (event: RunEvent) => void): void;
}

/**
 * An event log over `file`.
 *
 * @example
 * ```ts
 * const log = createEventLog(openLineFile("events.jsonl"));
 * log.emit("fault", { kind: "kill", host: "H1" });
 * ```
 */
export function createEventLog(file: LineFile): EventLog {
	const listeners: ((event: RunEvent) => void)[] = [];
	return {
		emit(event, fields = {}) {
			const line: RunEvent = { event, mono: monoMs(), ...fields };
			file.write(JSON.stringify(line));
			for (const l of listeners) l(line);
			return line;
		},
		onEvent(listener) {
			listeners.push(listener);
		},
	};
}
